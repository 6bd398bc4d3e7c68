// Coordinate systems and projection (proj4), by EPSG code as ArcGIS names them in `inSR`, `outSR` and layer
// spatial references.
//
// Where definitions come from, in order:
//   1. built in, no file system needed: 4326, 3857 (and the Esri/legacy codes 102100, 102113, 900913, 3785 as its
//      aliases), the UTM zones on WGS 84, ETRS89 and NAD83, and a short table of national and continental grids;
//   2. a dataset's own definition, registered by its reader (a GeoPackage's gpkg_spatial_ref_sys WKT, PostGIS's
//      spatial_ref_sys proj4text) under the code its geometry names;
//   3. the epsg-index package, one small JSON per code, read on first use and kept for the warm process. A bundled
//      function has no node_modules: it finds the same files in an `epsg/` folder beside the bundle (copy
//      `node_modules/epsg-index/s/*.json` there when bundling); without them, codes outside 1 and 2 are unknown.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import proj4 from "proj4";
import type { Geometry, Position } from "geojson";
import { badRequest } from "#shared/errors.ts";
import type { Bounds } from "#shared/features/schema.ts";

export const WGS84 = 4326;
export const WEB_MERCATOR = 3857;

// Codes Esri and older software use for Web Mercator; ArcGIS clients send 102100 more often than 3857.
const WEB_MERCATOR_ALIASES = new Set([102100, 102113, 900913, 3785]);

/** The EPSG code a wkid stands for (Esri's Web Mercator codes → 3857; others unchanged). */
export const canonicalWkid = (code: number): number => (WEB_MERCATOR_ALIASES.has(code) ? WEB_MERCATOR : code);

const BUILT_IN: Readonly<Record<number, string>> = {
  4326: "+proj=longlat +datum=WGS84 +no_defs",
  // `+over`: longitudes are not wrapped into ±180°. A web map wider than the world asks with an envelope past the
  // antimeridian; wrapped, its corners would swap sides and the envelope would cover the wrong half of the world.
  3857: "+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +over +no_defs",
  4269: "+proj=longlat +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +no_defs",
  4258: "+proj=longlat +ellps=GRS80 +no_defs",
  4283: "+proj=longlat +ellps=GRS80 +no_defs",
  7844: "+proj=longlat +ellps=GRS80 +no_defs",
  4674: "+proj=longlat +ellps=GRS80 +no_defs",
  4490: "+proj=longlat +ellps=GRS80 +no_defs",
  3395: "+proj=merc +lon_0=0 +k=1 +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs",
  3035: "+proj=laea +lat_0=52 +lon_0=10 +x_0=4321000 +y_0=3210000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  // EPSG gives OSTN15 (a grid file proj4 cannot load here); the published seven-parameter shift is within metres.
  27700:
    "+proj=tmerc +lat_0=49 +lon_0=-2 +k=0.9996012717 +x_0=400000 +y_0=-100000 +ellps=airy +towgs84=446.448,-125.157,542.06,0.15,0.247,0.842,-20.489 +units=m +no_defs",
  2154: "+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  28992:
    "+proj=sterea +lat_0=52.1561605555556 +lon_0=5.38763888888889 +k=0.9999079 +x_0=155000 +y_0=463000 +ellps=bessel +towgs84=565.4171,50.3319,465.5524,1.9342,-1.6677,9.1019,4.0725 +units=m +no_defs",
  31370:
    "+proj=lcc +lat_0=90 +lon_0=4.36748666666667 +lat_1=51.1666672333333 +lat_2=49.8333339 +x_0=150000.013 +y_0=5400088.438 +ellps=intl +towgs84=-106.8686,52.2978,-103.7239,-0.3366,0.457,-1.8422,-1.2747 +units=m +no_defs",
  3006: "+proj=utm +zone=33 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  2056: "+proj=somerc +lat_0=46.9524055555556 +lon_0=7.43958333333333 +k_0=1 +x_0=2600000 +y_0=1200000 +ellps=bessel +towgs84=674.374,15.056,405.346,0,0,0,0 +units=m +no_defs",
  5070: "+proj=aea +lat_0=23 +lon_0=-96 +lat_1=29.5 +lat_2=45.5 +x_0=0 +y_0=0 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  3338: "+proj=aea +lat_0=50 +lon_0=-154 +lat_1=55 +lat_2=65 +x_0=0 +y_0=0 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  2193: "+proj=tmerc +lat_0=0 +lon_0=173 +k=0.9996 +x_0=1600000 +y_0=10000000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  3577: "+proj=aea +lat_0=0 +lon_0=132 +lat_1=-18 +lat_2=-36 +x_0=0 +y_0=0 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs",
  3413: "+proj=stere +lat_0=90 +lat_ts=70 +lon_0=-45 +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs",
  3031: "+proj=stere +lat_0=-90 +lat_ts=-71 +lon_0=0 +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs",
};

/** UTM zones are a formula, not a table: WGS 84 (326zz north, 327zz south), ETRS89 (258zz), NAD83 (269zz). */
function utm(code: number): string | undefined {
  const zone = code % 100;
  const family = Math.floor(code / 100);
  if (family === 326 && zone >= 1 && zone <= 60) return `+proj=utm +zone=${zone} +datum=WGS84 +units=m +no_defs`;
  if (family === 327 && zone >= 1 && zone <= 60) return `+proj=utm +zone=${zone} +south +datum=WGS84 +units=m +no_defs`;
  if ((family === 258 && zone >= 28 && zone <= 38) || (family === 269 && zone >= 1 && zone <= 23))
    return `+proj=utm +zone=${zone} +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs`;
  return undefined;
}

const name = (code: number) => `EPSG:${code}`;
const known = new Set<number>();

function define(code: number, definition: string): boolean {
  try {
    proj4.defs(name(code), definition);
    const def = proj4.defs(name(code));
    if (!def) return false;
    // Coordinates in every dataset mapgate reads are stored x = easting/longitude whatever the WKT's AXIS says
    // (GeoPackage and PostGIS both): a latitude-first axis order would swap them.
    def.axis = "enu";
    known.add(code);
    return true;
  } catch {
    return false;
  }
}

const bundleFolder = (): string | undefined => {
  try {
    return fileURLToPath(new URL("epsg/", import.meta.url));
  } catch {
    return undefined;
  }
};

function epsgIndexFile(code: number): string | undefined {
  const beside = bundleFolder();
  if (beside && existsSync(`${beside}${code}.json`)) return `${beside}${code}.json`;
  try {
    return createRequire(import.meta.url).resolve(`epsg-index/s/${code}.json`);
  } catch {
    return undefined;
  }
}

function loadEpsgIndex(code: number): boolean {
  const file = epsgIndexFile(code);
  if (!file) return false;
  try {
    const entry = JSON.parse(readFileSync(file, "utf8")) as { proj4?: unknown; kind?: unknown };
    if (typeof entry.proj4 !== "string" || !entry.proj4) return false;
    // Grid files cannot be loaded here: an optional grid (`@name`) lets proj4 go on without it (a shift of a few
    // metres at most, between datums that need one), where a required one would fail every transformation.
    return define(code, entry.proj4.replace(/\+nadgrids=(?!@)/g, "+nadgrids=@"));
  } catch {
    return false;
  }
}

/** The WKT the EPSG index gives `code` (what a shapefile's .prj holds), undefined when it has none. */
export function epsgWkt(code: number): string | undefined {
  const file = epsgIndexFile(canonicalWkid(code));
  if (!file) return undefined;
  try {
    const entry = JSON.parse(readFileSync(file, "utf8")) as { wkt?: unknown };
    return typeof entry.wkt === "string" && entry.wkt !== "" ? entry.wkt : undefined;
  } catch {
    return undefined;
  }
}

/** True when mapgate can project from and to `code` (loading its definition on first use). */
export function hasCrs(code: number): boolean {
  const c = canonicalWkid(code);
  if (known.has(c)) return true;
  if (!Number.isInteger(c) || c <= 0 || c > 999_999) return false;
  const builtIn = BUILT_IN[c] ?? utm(c);
  if (builtIn) return define(c, builtIn);
  return loadEpsgIndex(c);
}

/** The definition a dataset gives for its own code (WKT or proj4 text); a code mapgate already knows keeps its own. */
export function registerCrs(code: number, definition: string): boolean {
  const c = canonicalWkid(code);
  if (!Number.isInteger(c) || c <= 0) return false;
  if (hasCrs(c)) return true;
  return define(c, definition);
}

/** Throws the envelope ArcGIS answers for a spatial reference it does not know, naming the parameter. */
export function requireCrs(code: number, parameter: string): number {
  if (!hasCrs(code))
    throw badRequest("Unable to complete operation.", [
      `'${parameter}' parameter is invalid`,
      `spatial reference ${code} is not supported`,
    ]);
  return canonicalWkid(code);
}

export interface CrsInfo {
  /** Longitude/latitude in degrees (distances need a geodesic or local projection). */
  readonly geographic: boolean;
  /** Metres in one unit of a projected system (1 for metres, 0.3048 for feet…). */
  readonly metersPerUnit: number;
}

export function crsInfo(code: number): CrsInfo {
  const c = requireCrs(code, "sr");
  const def = proj4.defs(name(c)) as { projName?: string; to_meter?: number; units?: string } | undefined;
  const geographic = def?.projName === "longlat";
  const metersPerUnit = def?.to_meter ?? (def?.units === "ft" ? 0.3048 : def?.units === "us-ft" ? 1200 / 3937 : 1);
  return { geographic, metersPerUnit };
}

/**
 * The XY resolution ArcGIS gives a coordinate system by default: 1e-9 degree for a geographic system, 0.1 mm for a
 * projected one (in its own unit). A coordinate snapped to it lies within half of it of the exact value, far inside
 * the XY tolerance (ten resolutions) clients compare coordinates with. Undefined for an unknown system.
 */
export function xyResolution(code: number): number | undefined {
  if (code === 0 || !hasCrs(code)) return undefined;
  const { geographic, metersPerUnit } = crsInfo(code);
  return geographic ? 1e-9 : 1e-4 / metersPerUnit;
}

type Transform = (p: Position) => Position;
const transforms = new Map<string, Transform>();

// Web Mercator is infinite at the poles; ArcGIS clips at the latitude that makes the map square.
const MERCATOR_MAX_LAT = 85.0511287798066;

/** A position transformer from one code to another (cached per pair for the warm process). */
export function transformer(from: number, to: number, parameters = { from: "inSR", to: "outSR" }): Transform {
  const a = requireCrs(from, parameters.from);
  const b = requireCrs(to, parameters.to);
  const key = `${a}>${b}`;
  let t = transforms.get(key);
  if (t) return t;
  if (a === b) t = (p) => p;
  else {
    const converter = proj4(name(a), name(b));
    const clamp = b === WEB_MERCATOR && crsInfo(a).geographic;
    t = (p) => {
      const x = p[0] as number;
      const y = clamp ? Math.max(-MERCATOR_MAX_LAT, Math.min(MERCATOR_MAX_LAT, p[1] as number)) : (p[1] as number);
      const out = converter.forward([x, y]) as [number, number];
      return p.length > 2 ? [out[0], out[1], p[2] as number] : out;
    };
  }
  transforms.set(key, t);
  return t;
}

/** Maps every position of a geometry (a new geometry; the input is left as it was). */
export function mapPositions(g: Geometry, f: Transform): Geometry {
  switch (g.type) {
    case "Point":
      return { type: "Point", coordinates: f(g.coordinates) };
    case "MultiPoint":
      return { type: "MultiPoint", coordinates: g.coordinates.map(f) };
    case "LineString":
      return { type: "LineString", coordinates: g.coordinates.map(f) };
    case "MultiLineString":
      return { type: "MultiLineString", coordinates: g.coordinates.map((l) => l.map(f)) };
    case "Polygon":
      return { type: "Polygon", coordinates: g.coordinates.map((r) => r.map(f)) };
    case "MultiPolygon":
      return { type: "MultiPolygon", coordinates: g.coordinates.map((p) => p.map((r) => r.map(f))) };
    case "GeometryCollection":
      return { type: "GeometryCollection", geometries: g.geometries.map((m) => mapPositions(m, f)) };
  }
}

/** Projects a geometry between two EPSG codes (aliases accepted); an unknown code is a 400 naming inSR/outSR. */
export function project(geometry: Geometry, from: number, to: number): Geometry {
  if (canonicalWkid(from) === canonicalWkid(to)) return geometry;
  return mapPositions(geometry, transformer(from, to));
}

/** Projects bounds, following their edges (a straight edge in one system is curved in another). */
export function projectBounds(b: Bounds, from: number, to: number, steps = 16): Bounds {
  if (canonicalWkid(from) === canonicalWkid(to)) return b;
  const t = transformer(from, to);
  const [x0, y0, x1, y1] = b;
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  for (let i = 0; i <= steps; i++) {
    const fx = x0 + ((x1 - x0) * i) / steps;
    const fy = y0 + ((y1 - y0) * i) / steps;
    for (const p of [
      [fx, y0],
      [fx, y1],
      [x0, fy],
      [x1, fy],
    ]) {
      const [x, y] = t(p) as [number, number];
      if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
      xmin = Math.min(xmin, x);
      ymin = Math.min(ymin, y);
      xmax = Math.max(xmax, x);
      ymax = Math.max(ymax, y);
    }
  }
  return [xmin, ymin, xmax, ymax];
}

/** `geometryPrecision`: every ordinate rounded to `decimals` places. */
export function roundCoordinates(geometry: Geometry, decimals: number): Geometry {
  const f = 10 ** Math.max(0, Math.min(15, Math.trunc(decimals)));
  const round = (v: number) => Math.round(v * f) / f;
  return mapPositions(geometry, (p) => p.map(round));
}
