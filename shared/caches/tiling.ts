// Where a tile of a cache lies, and the tiling scheme most basemaps use. The schemes themselves (tileInfo, extents,
// as the service JSON gives them) are part of a service's record (shared/stores/cache-info.ts); what a cache's
// conf.xml and conf.cdi say is read by tiling-conf.ts, once, at publishing.
import type { Lod, TileInfo } from "#shared/stores/cache-info.ts";

/** Where an exploded cache keeps a tile (relative to `_alllayers`), for the cache's file extension. */
export function explodedTileFile(level: number, row: number, col: number, ext: string): string {
  const hex8 = (n: number) => n.toString(16).padStart(8, "0");
  return `L${String(level).padStart(2, "0")}/R${hex8(row)}/C${hex8(col)}.${ext}`;
}

/** The content type of a tile from its first bytes (MIXED caches hold both PNG and JPEG). */
export function imageType(bytes: Buffer): string {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47) return "image/png";
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  return "application/octet-stream";
}

/** The Web Mercator tiling scheme ArcGIS Online and most basemaps use, levels 0…maxLevel, 256-px tiles. */
export function webMercatorTileInfo(maxLevel: number, format: string): TileInfo {
  const lods: Lod[] = [];
  for (let level = 0; level <= maxLevel; level++) {
    const resolution = 156543.03392800014 / 2 ** level;
    lods.push({ level, resolution, scale: 591657527.591555 / 2 ** level });
  }
  return {
    rows: 256,
    cols: 256,
    dpi: 96,
    format,
    compressionQuality: 75,
    origin: { x: -20037508.342787, y: 20037508.342787 },
    spatialReference: { wkid: 102100, latestWkid: 3857 },
    lods,
  };
}

/** conf.xml and conf.cdi are a few kilobytes; anything this large is not one. */
export const MAX_CONF_BYTES = 1024 * 1024;
