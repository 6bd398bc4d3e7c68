// A tile cache's own description: conf.xml (tiling scheme, tile format, storage format) and conf.cdi (the
// extent of the cached data), read once at publishing into the service record, as the service JSON needs them.
import { XMLParser } from "fast-xml-parser";
import type { SpatialReference, TiledCache } from "#shared/stores/cache-info.ts";
import { StorageError } from "#shared/storage/storage.ts";

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
