// The demo data store's content: one small but real cache of each kind, written once into the data folder
// (atomically: into a temporary folder renamed into place), so a second start finds it complete or absent.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rename, rm } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { DEMO_CACHE_PATHS, DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { writeSceneLayer } from "./scene-layer.ts";
import { writeTileCache } from "./tile-cache.ts";
import { writeVectorTileCache } from "./vector-tiles.ts";
import { writeDemoGeoPackage } from "./world-geopackage.ts";

const WORLD = { xmin: -20037508.342787, ymin: -20037508.342787, xmax: 20037508.342787, ymax: 20037508.342787 };
/** Western Europe, where the imagery cache has tiles (Web Mercator metres). */
const IMAGERY_EXTENT = { xmin: -1.0e6, ymin: 5.0e6, xmax: 2.0e6, ymax: 7.0e6 };

/** Writes the demo caches into `folder` unless it holds them already. */
export async function ensureDemoCaches(folder: string): Promise<void> {
  if (existsSync(folder)) return;
  const parent = join(folder, "..");
  const staging = await mkdtemp(join(parent, ".demo-store-"));
  try {
    await writeSceneLayer(join(staging, DEMO_CACHE_PATHS.scene));
    await writeTileCache(join(staging, DEMO_CACHE_PATHS.tiles), {
      format: "PNG",
      maxLevel: 2,
      extent: WORLD,
      paint: "basemap",
    });
    await writeVectorTileCache(join(staging, DEMO_CACHE_PATHS.vectorTiles));
    await writeTileCache(join(staging, DEMO_CACHE_PATHS.imagery), {
      format: "JPEG",
      maxLevel: 5,
      extent: IMAGERY_EXTENT,
      paint: "imagery",
    });
    const gpkg = join(staging, DEMO_GEOPACKAGE_PATH);
    await mkdir(dirname(gpkg), { recursive: true });
    writeDemoGeoPackage(gpkg);
    await rename(staging, folder);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/** Every file of a folder with its store-relative key (to copy the demo store into a bucket). */
export async function* filesOf(folder: string): AsyncGenerator<{ key: string; body: Buffer }> {
  for (const entry of await readdir(folder, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    yield { key: relative(folder, path).split("\\").join("/"), body: await readFile(path) };
  }
}
