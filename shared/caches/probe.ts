// Recognises caches by their own files and reads, once at publishing, what serving them needs.
import { MAX_CONF_BYTES } from "#shared/caches/tiling.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { type Entry, gunzipBounded, joinPath, type Storage, StorageError } from "#shared/storage/storage.ts";
import type { CacheType } from "#shared/stores/datastores.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";

/** A folder listing is cut here: describe answers one level at a time, and no cache folder holds more. */
export const LIST_LIMIT = 1000;
/** A layer document or vector tile description larger than this is refused (it must fit a service record). */
export const MAX_DESCRIPTION_BYTES = 256 * 1024;

/**
 * How deep a cache's JSON documents may nest (layer documents, root.json, styles): real ones nest a dozen levels
 * or so; what is kept of them is serialised and rendered again, which recurses.
 */
export const MAX_DOCUMENT_DEPTH = 64;

const SCENE_DOCUMENTS = ["3dSceneLayer.json.gz", "3dSceneLayer.json"] as const;

/** What a folder holds, judged from its own entries (and, for vector tiles, its `p12` folder's). */
export async function cacheTypeOf(storage: Storage, path: string, entries?: Entry[]): Promise<CacheType | undefined> {
  const listed = entries ?? (await storage.list(path, LIST_LIMIT));
  const files = new Set(listed.filter((e) => e.kind === "file").map((e) => e.name));
  const folders = new Set(listed.filter((e) => e.kind === "folder").map((e) => e.name));
  if (SCENE_DOCUMENTS.some((f) => files.has(f))) return "sceneLayerCache";
  if (files.has("conf.xml") && files.has("conf.cdi")) {
    const conf = await storage.read(joinPath(path, "conf.xml"), MAX_CONF_BYTES);
    // Raster formats only an image service serves mark an image cache; both kinds publish as either service.
    return conf && /<CacheTileFormat>\s*(LERC|LERC2D|JPEG)\s*</i.test(conf.toString("utf8"))
      ? "imageCache"
      : "tileCache";
  }
  if (folders.has("p12")) {
    const p12 = await storage.list(joinPath(path, "p12"), LIST_LIMIT);
    if (p12.some((e) => e.kind === "file" && e.name === "root.json")) return "vectorTileCache";
  }
  return undefined;
}

function json(bytes: Buffer, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new StorageError(`${what} is not valid JSON.`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new StorageError(`${what} is not a JSON object.`);
  if (nestedDeeperThan(parsed, MAX_DOCUMENT_DEPTH))
    throw new StorageError(`${what} nests more than ${MAX_DOCUMENT_DEPTH} levels deep.`);
  return parsed as Record<string, unknown>;
}

/** Reads what serving a cache needs (checks it is what it claims to be); StorageError names what is wrong. */
export async function readCacheInfo(storage: Storage, path: string, type: CacheType): Promise<CacheInfo> {
  const root = joinPath(path);
  if (type === "tileCache" || type === "imageCache") {
    const [xml, cdi] = await Promise.all([
      storage.read(joinPath(root, "conf.xml"), MAX_CONF_BYTES),
      storage.read(joinPath(root, "conf.cdi"), MAX_CONF_BYTES),
    ]);
    if (!xml || !cdi) throw new StorageError("The tile cache's conf.xml or conf.cdi is missing.");
    // The XML parser is loaded by the first publish of a tile cache only: the routes that import this module for
    // the rest (the directory, the groups, the service) need not compile it at a cold start.
    const { readTiledCache } = await import("#shared/caches/tiling-conf.ts");
    return { kind: "tiled", path: root, tiled: readTiledCache(xml, cdi) };
  }
  if (type === "vectorTileCache") {
    const bytes = await storage.read(joinPath(root, "p12/root.json"), MAX_DESCRIPTION_BYTES);
    if (!bytes) throw new StorageError("The vector tile cache's p12/root.json is missing.");
    const description = json(bytes, "p12/root.json");
    const tileInfo = description.tileInfo as { lods?: unknown } | undefined;
    if (!tileInfo || !Array.isArray(tileInfo.lods) || tileInfo.lods.length === 0) {
      throw new StorageError("p12/root.json has no tileInfo with levels.");
    }
    return { kind: "vector", path: root, root: description };
  }
  for (const name of SCENE_DOCUMENTS) {
    const bytes = await storage.read(joinPath(root, name), MAX_DESCRIPTION_BYTES);
    if (!bytes) continue;
    const plain = name.endsWith(".gz") ? gunzipBounded(bytes, MAX_DESCRIPTION_BYTES, name) : bytes;
    const layer = json(plain, name);
    if (typeof layer.layerType !== "string") throw new StorageError(`${name} has no layerType.`);
    return { kind: "scene", path: root, layer };
  }
  throw new StorageError("The scene layer's 3dSceneLayer.json(.gz) is missing.");
}
