// MapServer and ImageServer over a tiled cache (Compact Cache V2 or exploded): the service JSON from what
// publishing read (conf.xml, conf.cdi), and tiles by level/row/col, each an index read plus one ranged read.
import { readBundleTile, validTileAddress } from "#shared/caches/bundle.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { explodedTileFile, imageType } from "#shared/caches/tiling.ts";
import { badRequest } from "#shared/errors.ts";
import type { Content } from "#shared/http/render.ts";
import { MAX_CONTENT_BYTES } from "#shared/http/render.ts";
import { asContent, cacheFault, guarded, missing, storageOf } from "#shared/serving/read.ts";
import { joinPath } from "#shared/storage/storage.ts";
import type { Service } from "#shared/stores/services.ts";
import { SERVER_REST_VERSION } from "#shared/urls.ts";

type Tiled = Extract<CacheInfo, { kind: "tiled" }>;

export function tiledServiceJson(service: Service, info: Tiled): Record<string, unknown> {
  const { tileInfo, fullExtent } = info.tiled;
  const scales = tileInfo.lods.map((l) => l.scale);
  const common = {
    currentVersion: SERVER_REST_VERSION,
    serviceDescription: service.description,
    description: service.description,
    copyrightText: "",
    spatialReference: tileInfo.spatialReference,
    singleFusedMapCache: true,
    tileInfo,
    initialExtent: fullExtent,
    fullExtent,
    minScale: Math.max(...scales),
    maxScale: Math.min(...scales),
    capabilities: service.capabilities,
    exportTilesAllowed: false,
    serviceItemId: service.itemId,
  };
  if (service.type === "ImageServer") {
    const finest = tileInfo.lods.at(-1)?.resolution ?? 0;
    return {
      ...common,
      name: service.name,
      extent: fullExtent,
      pixelSizeX: finest,
      pixelSizeY: finest,
      bandCount: 3,
      pixelType: "U8",
      minPixelSize: 0,
      maxPixelSize: 0,
      serviceDataType: "esriImageServiceDataTypeRGB",
      minValues: [0, 0, 0],
      maxValues: [255, 255, 255],
      cacheType: "Map",
      allowRasterFunction: false,
    };
  }
  return {
    ...common,
    mapName: service.name,
    supportsDynamicLayers: false,
    layers: [],
    tables: [],
    units: "esriMeters",
    supportedImageFormatTypes: tileInfo.format,
    documentInfo: { Title: service.name, Subject: "", Author: service.owner, Keywords: service.tags.join(",") },
    tileServers: [],
  };
}

/** Whole numbers up to 2^53: larger ones are no tile of any cache (validTileAddress), never a parse error. */
const INT = /^\d{1,15}$/;

/** `tile/<level>/<row>/<col>` (row before column, as ArcGIS addresses tiles). */
export async function tiledTile(
  service: Service,
  info: Tiled,
  address: readonly string[],
  gzipOk: boolean,
): Promise<Content> {
  const [l, r, c] = address;
  if (address.length !== 3 || !INT.test(l ?? "") || !INT.test(r ?? "") || !INT.test(c ?? "")) {
    throw badRequest("Invalid tile address.", ["A tile is addressed as tile/<level>/<row>/<col> (whole numbers)."]);
  }
  const level = Number(l);
  const row = Number(r);
  const col = Number(c);
  // A level the cache does not have, or a row/column no cache could hold: no tile (never a read).
  if (!validTileAddress(level, row, col) || !info.tiled.tileInfo.lods.some((x) => x.level === level)) return missing();
  const storage = await storageOf(service);
  return guarded(service, async () => {
    const root = joinPath(info.path, "_alllayers");
    let bytes: Buffer | undefined;
    if (info.tiled.storage === "compactV2") {
      const read = await readBundleTile(storage, root, level, row, col);
      if (!read.found) return read.corrupt ? cacheFault(service, read.corrupt) : missing();
      bytes = read.bytes;
    } else {
      const ext = info.tiled.tileInfo.format.startsWith("PNG")
        ? "png"
        : info.tiled.tileInfo.format === "JPEG"
          ? "jpg"
          : "";
      const candidates = ext ? [ext] : ["png", "jpg"];
      for (const e of candidates) {
        bytes = await storage.read(joinPath(root, explodedTileFile(level, row, col, e)), MAX_CONTENT_BYTES);
        if (bytes) break;
      }
      if (!bytes) return missing();
    }
    return asContent(bytes, imageType(bytes), { gzipOk, shared: service.access === "public", what: "tile" });
  });
}
