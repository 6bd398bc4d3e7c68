// A tile cache's own description: conf.xml (tiling scheme, tile format, storage format) and conf.cdi (the
// extent of the cached data), read once at publishing into the service record, as the service JSON needs them.
import { XMLParser } from "fast-xml-parser";
import { StorageError } from "#shared/storage/storage.ts";

export interface SpatialReference {
  readonly wkid?: number;
  readonly latestWkid?: number;
  readonly wkt?: string;
}

export interface Lod {
  readonly level: number;
  readonly resolution: number;
  readonly scale: number;
}

export interface TileInfo {
  readonly rows: number;
  readonly cols: number;
  readonly dpi: number;
  readonly format: string;
  readonly compressionQuality: number;
  readonly origin: { readonly x: number; readonly y: number };
  readonly spatialReference: SpatialReference;
  readonly lods: readonly Lod[];
}

export interface Extent {
  readonly xmin: number;
  readonly ymin: number;
  readonly xmax: number;
  readonly ymax: number;
  readonly spatialReference: SpatialReference;
}

export interface TiledCache {
  readonly tileInfo: TileInfo;
  readonly fullExtent: Extent;
  /** `compactV2` bundles or `exploded` one-file-per-tile folders (the two layouts ArcGIS writes today). */
  readonly storage: "compactV2" | "exploded";
}

/** conf.xml and conf.cdi are a few kilobytes; anything this large is not one. */
export const MAX_CONF_BYTES = 1024 * 1024;
const MAX_LODS = 32;

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  processEntities: false,
  parseTagValue: false,
  isArray: (name) => name === "LODInfo",
});

function parse(xml: Buffer, file: string): Record<string, unknown> {
  const text = xml.toString("utf8");
  // A DOCTYPE could declare entities; a cache description never needs one.
  if (/<!DOCTYPE/i.test(text))
    throw new StorageError(`${file} declares a DOCTYPE, which a cache description never has.`);
  try {
    return parser.parse(text) as Record<string, unknown>;
  } catch {
    throw new StorageError(`${file} is not well-formed XML.`);
  }
}

const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function num(v: unknown, what: string): number {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
  if (!Number.isFinite(n)) throw new StorageError(`${what} is missing or not a number.`);
  return n;
}

function spatialReference(v: unknown): SpatialReference {
  const sr = obj(v);
  const wkid = typeof sr.WKID === "string" ? Number(sr.WKID) : undefined;
  const latest = typeof sr.LatestWKID === "string" ? Number(sr.LatestWKID) : undefined;
  const out: { wkid?: number; latestWkid?: number; wkt?: string } = {};
  if (wkid !== undefined && Number.isSafeInteger(wkid)) out.wkid = wkid;
  if (latest !== undefined && Number.isSafeInteger(latest)) out.latestWkid = latest;
  if (out.wkid === undefined && typeof sr.WKT === "string") out.wkt = sr.WKT.slice(0, 4096);
  if (out.wkid === undefined && out.wkt === undefined)
    throw new StorageError("The cache's spatial reference is missing.");
  return out;
}

/** The service JSON's format names for the cache's tile format. */
const FORMATS: Readonly<Record<string, string>> = {
  PNG: "PNG",
  PNG8: "PNG8",
  PNG24: "PNG24",
  PNG32: "PNG32",
  JPEG: "JPEG",
  JPG: "JPEG",
  MIXED: "MIXED",
  LERC: "LERC",
  LERC2D: "LERC2D",
};

export function readTiledCache(confXml: Buffer, confCdi: Buffer): TiledCache {
  const conf = obj(parse(confXml, "conf.xml").CacheInfo);
  const tci = obj(conf.TileCacheInfo);
  const lodInfos = obj(tci.LODInfos).LODInfo;
  const lodList = Array.isArray(lodInfos) ? lodInfos : [];
  if (lodList.length === 0) throw new StorageError("conf.xml lists no levels (LODInfos).");
  if (lodList.length > MAX_LODS) throw new StorageError(`conf.xml lists more than ${MAX_LODS} levels.`);
  const lods = lodList.map((l, i) => {
    const lod = obj(l);
    const level = num(lod.LevelID, `conf.xml level ${i}`);
    if (!Number.isSafeInteger(level) || level < 0 || level > 30)
      throw new StorageError(`conf.xml level ${i} is out of range.`);
    return {
      level,
      resolution: num(lod.Resolution, `level ${level} resolution`),
      scale: num(lod.Scale, `level ${level} scale`),
    };
  });
  const origin = obj(tci.TileOrigin);
  const image = obj(conf.TileImageInfo);
  const rawFormat = String(image.CacheTileFormat ?? "").toUpperCase();
  const format = FORMATS[rawFormat];
  if (!format) throw new StorageError(`conf.xml's tile format '${rawFormat.slice(0, 32)}' is not one mapgate serves.`);
  const storageFormat = String(obj(conf.CacheStorageInfo).StorageFormat ?? "");
  const storage =
    storageFormat === "esriMapCacheStorageModeCompactV2"
      ? "compactV2"
      : storageFormat === "esriMapCacheStorageModeExploded"
        ? "exploded"
        : undefined;
  if (!storage) {
    throw new StorageError(
      `conf.xml's storage format '${storageFormat.slice(0, 64)}' is not served (Compact Cache V2 or exploded only).`,
    );
  }
  const packet = obj(conf.CacheStorageInfo).PacketSize;
  if (storage === "compactV2" && packet !== undefined && String(packet) !== "128") {
    throw new StorageError("conf.xml's packet size must be 128 for Compact Cache V2.");
  }
  const rows = num(tci.TileRows, "conf.xml TileRows");
  const cols = num(tci.TileCols, "conf.xml TileCols");
  if (![rows, cols].every((n) => Number.isSafeInteger(n) && n >= 1 && n <= 4096)) {
    throw new StorageError("conf.xml's tile size is out of range.");
  }
  const env = obj(parse(confCdi, "conf.cdi").EnvelopeN);
  const quality = image.CompressionQuality === undefined ? 75 : num(image.CompressionQuality, "compression quality");
  return {
    tileInfo: {
      rows,
      cols,
      dpi: num(tci.DPI, "conf.xml DPI"),
      format,
      compressionQuality: quality,
      origin: { x: num(origin.X, "tile origin X"), y: num(origin.Y, "tile origin Y") },
      spatialReference: spatialReference(tci.SpatialReference),
      lods,
    },
    fullExtent: {
      xmin: num(env.XMin, "conf.cdi XMin"),
      ymin: num(env.YMin, "conf.cdi YMin"),
      xmax: num(env.XMax, "conf.cdi XMax"),
      ymax: num(env.YMax, "conf.cdi YMax"),
      spatialReference: spatialReference(env.SpatialReference ?? tci.SpatialReference),
    },
    storage,
  };
}

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

/** Writes the conf.xml and conf.cdi of a cache (demo caches and test fixtures; real ones come with the cache). */
export function writeTiledCacheConf(cache: TiledCache): { confXml: string; confCdi: string } {
  const ns =
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:typens="http://www.esri.com/schemas/ArcGIS/10.8"';
  const sr = (s: SpatialReference) =>
    `<SpatialReference xsi:type="typens:ProjectedCoordinateSystem">${s.wkid !== undefined ? `<WKID>${s.wkid}</WKID>` : ""}${s.latestWkid !== undefined ? `<LatestWKID>${s.latestWkid}</LatestWKID>` : ""}</SpatialReference>`;
  const t = cache.tileInfo;
  const lods = t.lods
    .map(
      (l) =>
        `<LODInfo xsi:type="typens:LODInfo"><LevelID>${l.level}</LevelID><Scale>${l.scale}</Scale><Resolution>${l.resolution}</Resolution></LODInfo>`,
    )
    .join("");
  const confXml = `<?xml version="1.0" encoding="utf-8"?>
<CacheInfo xsi:type="typens:CacheInfo" ${ns}><TileCacheInfo xsi:type="typens:TileCacheInfo">${sr(t.spatialReference)}<TileOrigin xsi:type="typens:PointN"><X>${t.origin.x}</X><Y>${t.origin.y}</Y></TileOrigin><TileCols>${t.cols}</TileCols><TileRows>${t.rows}</TileRows><DPI>${t.dpi}</DPI><PreciseDPI>${t.dpi}</PreciseDPI><LODInfos xsi:type="typens:ArrayOfLODInfo">${lods}</LODInfos></TileCacheInfo><TileImageInfo xsi:type="typens:TileImageInfo"><CacheTileFormat>${t.format}</CacheTileFormat><CompressionQuality>${t.compressionQuality}</CompressionQuality><Antialiasing>false</Antialiasing></TileImageInfo><CacheStorageInfo xsi:type="typens:CacheStorageInfo"><StorageFormat>${cache.storage === "compactV2" ? "esriMapCacheStorageModeCompactV2" : "esriMapCacheStorageModeExploded"}</StorageFormat><PacketSize>128</PacketSize></CacheStorageInfo></CacheInfo>
`;
  const e = cache.fullExtent;
  const confCdi = `<?xml version="1.0" encoding="utf-8"?>
<EnvelopeN xsi:type="typens:EnvelopeN" ${ns}><XMin>${e.xmin}</XMin><YMin>${e.ymin}</YMin><XMax>${e.xmax}</XMax><YMax>${e.ymax}</YMax>${sr(e.spatialReference)}</EnvelopeN>
`;
  return { confXml, confCdi };
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
