// Small but real tile caches for the demo data store: conf.xml, conf.cdi and Compact Cache V2 bundles of
// PNG (map) or JPEG (imagery) tiles in the Web Mercator scheme, drawn here so the demo needs no download.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import jpeg from "jpeg-js";
import { PNG } from "pngjs";
import { bundleFile, PACKET, writeBundle } from "#shared/caches/bundle.ts";
import { explodedTileFile, webMercatorTileInfo } from "#shared/caches/tiling.ts";
import type { Extent } from "#shared/stores/cache-info.ts";
import { writeTiledCacheConf } from "#shared/caches/tiling-conf.ts";

const HALF = 20037508.342787;
type Rgb = readonly [number, number, number];
/** Colours a point given in Web Mercator metres. */
type Painter = (x: number, y: number) => Rgb;

/** The demo basemap: sea, one continent-sized blob, and a graticule every 2,000 km. */
const basemap: Painter = (x, y) => {
  const onGrid = Math.abs(x % 2e6) < 2e4 || Math.abs(y % 2e6) < 2e4;
  if (onGrid) return [150, 150, 150];
  const land = Math.hypot((x - 1.0e6) / 6e6, (y - 5.5e6) / 4e6) < 1 || Math.hypot((x + 9e6) / 4e6, y / 7e6) < 1;
  return land ? [236, 224, 200] : [170, 211, 223];
};

/** The demo imagery: fields in a checkerboard of greens and browns, as an orthophoto of farmland looks. */
const imagery: Painter = (x, y) => {
  const fx = Math.floor(x / 2e5);
  const fy = Math.floor(y / 2e5);
  const shade = ((fx * 7919 + fy * 104729) % 5) * 12;
  return (fx + fy) % 2 === 0 ? [70 + shade, 120 + shade, 50] : [140 + shade, 110 + shade / 2, 70];
};

function draw(level: number, row: number, col: number, paint: Painter): Buffer {
  const size = 256;
  const resolution = (2 * HALF) / (size * 2 ** level);
  const rgba = Buffer.alloc(size * size * 4);
  for (let py = 0; py < size; py++) {
    const y = HALF - (row * size + py + 0.5) * resolution;
    for (let px = 0; px < size; px++) {
      const x = -HALF + (col * size + px + 0.5) * resolution;
      const [r, g, b] = paint(x, y);
      const i = (py * size + px) * 4;
      rgba[i] = r;
      rgba[i + 1] = g;
      rgba[i + 2] = b;
      rgba[i + 3] = 255;
    }
  }
  return rgba;
}

function encode(rgba: Buffer, format: "PNG" | "JPEG"): Buffer {
  if (format === "JPEG") return jpeg.encode({ data: rgba, width: 256, height: 256 }, 80).data;
  const png = new PNG({ width: 256, height: 256 });
  rgba.copy(png.data);
  return PNG.sync.write(png, { colorType: 2 });
}

export interface TileCacheOptions {
  readonly format: "PNG" | "JPEG";
  readonly maxLevel: number;
  /** The area the cache covers (Web Mercator metres); tiles outside it are not written. */
  readonly extent: { readonly xmin: number; readonly ymin: number; readonly xmax: number; readonly ymax: number };
  readonly paint: "basemap" | "imagery";
  /** Compact Cache V2 bundles (the default, as ArcGIS writes caches today) or one file per tile. */
  readonly storage?: "compactV2" | "exploded";
}

/** Writes a Compact Cache V2 tile cache into `dir` (conf.xml, conf.cdi, `_alllayers/Lnn/*.bundle`). */
export async function writeTileCache(dir: string, options: TileCacheOptions): Promise<void> {
  const paint = options.paint === "basemap" ? basemap : imagery;
  const tileInfo = webMercatorTileInfo(options.maxLevel, options.format);
  const fullExtent: Extent = { ...options.extent, spatialReference: tileInfo.spatialReference };
  const storage = options.storage ?? "compactV2";
  const { confXml, confCdi } = writeTiledCacheConf({ tileInfo, fullExtent, storage });
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "conf.xml"), confXml);
  await writeFile(join(dir, "conf.cdi"), confCdi);
  for (let level = 0; level <= options.maxLevel; level++) {
    const span = (2 * HALF) / 2 ** level;
    const first = (v: number, from: number) => Math.max(0, Math.floor((v - from) / span));
    const colMin = first(options.extent.xmin, -HALF);
    const colMax = Math.min(2 ** level - 1, Math.floor((options.extent.xmax + HALF) / span));
    const rowMin = Math.max(0, Math.floor((HALF - options.extent.ymax) / span));
    const rowMax = Math.min(2 ** level - 1, first(-options.extent.ymin, -HALF));
    const bundles = new Map<string, { row: number; col: number; bytes: Uint8Array }[]>();
    for (let row = rowMin; row <= rowMax; row++) {
      for (let col = colMin; col <= colMax; col++) {
        const bytes = encode(draw(level, row, col, paint), options.format);
        if (storage === "exploded") {
          const ext = options.format === "PNG" ? "png" : "jpg";
          const file = join(dir, "_alllayers", explodedTileFile(level, row, col, ext));
          await mkdir(join(file, ".."), { recursive: true });
          await writeFile(file, bytes);
          continue;
        }
        const { path } = bundleFile(level, row, col);
        const list = bundles.get(path) ?? [];
        list.push({ row: row % PACKET, col: col % PACKET, bytes });
        bundles.set(path, list);
      }
    }
    for (const [path, tiles] of bundles) {
      const file = join(dir, "_alllayers", path);
      await mkdir(join(file, ".."), { recursive: true });
      await writeFile(file, writeBundle(tiles));
    }
  }
}
