// Esri JSON geometry in and out, and the GeoJSON (RFC 7946) geometry writer.
//
// Out: features are rendered from GeoJSON geometry to the layer's Esri geometry type; Esri wants polygon outer
// rings clockwise and holes counter-clockwise (the reverse of RFC 7946), so every ring is turned on the way out.
// In: the `geometry` query parameter (Esri JSON envelope, point, multipoint, polyline or polygon, or the
// `xmin,ymin,xmax,ymax` and `x,y` shorthands) becomes GeoJSON geometry plus the spatial reference it names, if
// any (which wins over `inSR`). Input is bounded (MAX_QUERY_VERTICES) and every number must be finite.
import type { Geometry, Polygon, MultiPolygon, Position } from "geojson";
import { badRequest, withArticle } from "#shared/errors.ts";
import type { Bounds, EsriGeometryType } from "#shared/features/schema.ts";
import { closeRing, isClockwise, orient, pointInRing, ringSignedArea } from "./rings.ts";

/** The most vertices a query geometry may carry (a generous polygon; beyond it the request is refused). */
export const MAX_QUERY_VERTICES = 100_000;

export interface EsriSpatialReference {
  readonly wkid?: number;
  readonly latestWkid?: number;
  readonly wkt?: string;
}

export interface EsriPoint {
  x: number;
  y: number;
  z?: number;
}
export interface EsriMultipoint {
  points: number[][];
}
export interface EsriPolyline {
  paths: number[][][];
}
export interface EsriPolygon {
  rings: number[][][];
}
export interface EsriEnvelope {
  xmin: number;
  ymin: number;
  xmax: number;
  ymax: number;
}
export type EsriGeometry = EsriPoint | EsriMultipoint | EsriPolyline | EsriPolygon;

export type QueryGeometryType = EsriGeometryType | "esriGeometryEnvelope";

export interface DimensionOptions {
  /** Write z when the position has one (Esri layers with hasZ); without it, z is dropped. */
  readonly hasZ?: boolean;
  /** Kept for the layer's flag; decoded geometry carries no M values, so none are written. */
  readonly hasM?: boolean;
}

interface Parts {
  points: Position[];
  lines: Position[][];
  polygons: Position[][][];
}

function collect(g: Geometry, into: Parts, depth = 0): void {
  switch (g.type) {
    case "Point":
      into.points.push(g.coordinates);
      return;
    case "MultiPoint":
      into.points.push(...g.coordinates);
      return;
    case "LineString":
      into.lines.push(g.coordinates);
      return;
    case "MultiLineString":
      into.lines.push(...g.coordinates);
      return;
    case "Polygon":
      into.polygons.push(g.coordinates);
      return;
    case "MultiPolygon":
      into.polygons.push(...g.coordinates);
      return;
    case "GeometryCollection":
      // Decoded collections are already capped in depth; this guard keeps hand-built ones honest too.
      if (depth < 8) for (const m of g.geometries) collect(m, into, depth + 1);
      return;
  }
}

/** Splits a geometry into its points, lines and polygons (collections flattened). */
export function geometryParts(g: Geometry): Parts {
  const parts: Parts = { points: [], lines: [], polygons: [] };
  collect(g, parts);
  return parts;
}

const vertex = (p: Position, hasZ: boolean): number[] =>
  hasZ && p.length > 2 ? [p[0] as number, p[1] as number, p[2] as number] : [p[0] as number, p[1] as number];

function esriPoint(p: Position | undefined, hasZ: boolean): EsriGeometry | null {
  if (!p) return null;
  return hasZ && p.length > 2
    ? { x: p[0] as number, y: p[1] as number, z: p[2] as number }
    : { x: p[0] as number, y: p[1] as number };
}

/**
 * GeoJSON geometry → the Esri JSON geometry of a layer of `type`: parts of other dimensions are left out (a
 * collection keeps what fits the layer), polygon outer rings are written clockwise and holes counter-clockwise.
 * null when nothing of the geometry fits.
 */
export function toEsriGeometry(
  geometry: Geometry | null | undefined,
  type: EsriGeometryType,
  options: DimensionOptions = {},
): EsriGeometry | null {
  if (!geometry) return null;
  const hasZ = options.hasZ ?? false;
  // A point of a point layer (a page holds thousands) needs no parts gathered: it is its own first point.
  if (geometry.type === "Point" && type === "esriGeometryPoint") return esriPoint(geometry.coordinates, hasZ);
  const parts = geometryParts(geometry);
  switch (type) {
    case "esriGeometryPoint":
      return esriPoint(parts.points[0], hasZ);
    case "esriGeometryMultipoint":
      return parts.points.length ? { points: parts.points.map((p) => vertex(p, hasZ)) } : null;
    case "esriGeometryPolyline":
      return parts.lines.length ? { paths: parts.lines.map((l) => l.map((p) => vertex(p, hasZ))) } : null;
    case "esriGeometryPolygon": {
      const rings: number[][][] = [];
      for (const polygon of parts.polygons)
        polygon.forEach((ring, i) => rings.push(orient(ring, i === 0).map((p) => vertex(p, hasZ))));
      return rings.length ? { rings } : null;
    }
  }
}

/** GeoJSON geometry as RFC 7946 wants it written: polygon outer rings counter-clockwise, holes clockwise. */
export function toRfc7946(geometry: Geometry): Geometry {
  switch (geometry.type) {
    case "Polygon":
      return { type: "Polygon", coordinates: rewindPolygon(geometry.coordinates) };
    case "MultiPolygon":
      return { type: "MultiPolygon", coordinates: geometry.coordinates.map(rewindPolygon) };
    case "GeometryCollection":
      return { type: "GeometryCollection", geometries: geometry.geometries.map(toRfc7946) };
    default:
      return geometry;
  }
}

const rewindPolygon = (rings: Position[][]) => rings.map((ring, i) => orient(ring, i !== 0));

// ---------------------------------------------------------------------------------------------------------------
// Input: the `geometry` parameter.

export interface QueryGeometry {
  /** The geometry as GeoJSON (2D; z and m of the input are not used by spatial tests and are dropped). */
  readonly geometry: Geometry;
  /** The spatial reference the geometry names inside itself; it wins over `inSR`. */
  readonly spatialReference?: number;
  /** Set when the input was an envelope: readers may use it as is for their index. */
  readonly envelope?: Bounds;
}

const invalid = (reason: string) =>
  badRequest("Unable to complete operation.", ["'geometry' parameter is invalid", reason]);

const SHAPE_KEYS: readonly [string, QueryGeometryType][] = [
  ["rings", "esriGeometryPolygon"],
  ["paths", "esriGeometryPolyline"],
  ["points", "esriGeometryMultipoint"],
  ["xmin", "esriGeometryEnvelope"],
  ["x", "esriGeometryPoint"],
];

const GEOMETRY_TYPE_NAMES: readonly QueryGeometryType[] = [
  "esriGeometryEnvelope",
  "esriGeometryPoint",
  "esriGeometryMultipoint",
  "esriGeometryPolyline",
  "esriGeometryPolygon",
];

class Budget {
  vertices = 0;
  take(n: number): void {
    this.vertices += n;
    if (this.vertices > MAX_QUERY_VERTICES) throw invalid(`more than ${MAX_QUERY_VERTICES} vertices`);
  }
}

function finite(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(`${what} is not a finite number`);
  return v;
}

function readVertex(v: unknown, what: string): Position {
  if (!Array.isArray(v) || v.length < 2) throw invalid(`${what} is not an [x, y] array`);
  return [finite(v[0], `${what} x`), finite(v[1], `${what} y`)];
}

function readVertexList(v: unknown, what: string, budget: Budget): Position[] {
  if (!Array.isArray(v)) throw invalid(`${what} is not an array`);
  budget.take(v.length);
  return v.map((p, i) => readVertex(p, `${what}[${i}]`));
}

function readSpatialReference(sr: unknown): number | undefined {
  if (sr === undefined || sr === null) return undefined;
  if (typeof sr !== "object") throw invalid("spatialReference is not an object");
  const { wkid, latestWkid } = sr as EsriSpatialReference;
  const code = wkid ?? latestWkid;
  if (code === undefined) throw invalid("spatialReference names no wkid");
  if (!Number.isInteger(code) || code <= 0) throw invalid("spatialReference wkid is not a positive integer");
  return code;
}

function envelopePolygon(b: Bounds): Polygon {
  const [xmin, ymin, xmax, ymax] = b;
  return {
    type: "Polygon",
    coordinates: [
      [
        [xmin, ymin],
        [xmax, ymin],
        [xmax, ymax],
        [xmin, ymax],
        [xmin, ymin],
      ],
    ],
  };
}

function envelope(xmin: number, ymin: number, xmax: number, ymax: number): QueryGeometry {
  if (xmin > xmax || ymin > ymax) throw invalid("envelope minimum exceeds its maximum");
  const b: Bounds = [xmin, ymin, xmax, ymax];
  return { geometry: envelopePolygon(b), envelope: b };
}

function parseShorthand(text: string, type: QueryGeometryType | undefined): QueryGeometry {
  const parts = text.split(",").map((s) => s.trim());
  const nums = parts.map((s) => (s === "" ? NaN : Number(s)));
  if (nums.some((n) => !Number.isFinite(n))) throw invalid("coordinates are not finite numbers");
  if (nums.length === 4 && (type === undefined || type === "esriGeometryEnvelope")) {
    const [xmin, ymin, xmax, ymax] = nums as [number, number, number, number];
    return envelope(xmin, ymin, xmax, ymax);
  }
  if (nums.length === 2 && (type === undefined || type === "esriGeometryPoint")) {
    const [x, y] = nums as [number, number];
    return { geometry: { type: "Point", coordinates: [x, y] } };
  }
  throw invalid(`${nums.length} numbers do not make ${type ?? "an envelope or a point"}`);
}

/** Esri polygon rings → GeoJSON: clockwise rings are outer rings, each other ring a hole of the smallest outer ring holding it. */
export function ringsToGeoJson(rings: Position[][]): Polygon | MultiPolygon | null {
  const outers: { ring: Position[]; area: number; holes: Position[][] }[] = [];
  const holes: Position[][] = [];
  for (const ring of rings) {
    if (ringSignedArea(ring) === 0) continue;
    if (isClockwise(ring)) outers.push({ ring, area: Math.abs(ringSignedArea(ring)), holes: [] });
    else holes.push(ring);
  }
  // Smallest first, so a hole joins the innermost outer ring around it (an island in a lake in an island).
  outers.sort((a, b) => a.area - b.area);
  for (const hole of holes) {
    const [x, y] = hole[0] as [number, number];
    const owner = outers.find((o) => pointInRing(x, y, o.ring));
    // A counter-clockwise ring inside no outer ring was meant as an outer ring wound the other way.
    if (owner) owner.holes.push(hole);
    else outers.push({ ring: hole, area: Math.abs(ringSignedArea(hole)), holes: [] });
  }
  if (!outers.length) return null;
  const polygons = outers.map((o) => [orient(o.ring, false), ...o.holes.map((h) => orient(h, true))]);
  return polygons.length === 1
    ? { type: "Polygon", coordinates: polygons[0] as Position[][] }
    : { type: "MultiPolygon", coordinates: polygons };
}

function parseObject(obj: Record<string, unknown>, type: QueryGeometryType | undefined): QueryGeometry {
  const shape = SHAPE_KEYS.find(([key]) => key in obj)?.[1];
  if (!shape) throw invalid("no x/y, points, paths, rings or xmin in the geometry object");
  if (type !== undefined && shape !== type) throw invalid(`${withArticle(shape)} does not match geometryType ${type}`);
  const sr = readSpatialReference(obj.spatialReference);
  const budget = new Budget();
  let result: QueryGeometry;
  switch (shape) {
    case "esriGeometryEnvelope":
      result = envelope(
        finite(obj.xmin, "xmin"),
        finite(obj.ymin, "ymin"),
        finite(obj.xmax, "xmax"),
        finite(obj.ymax, "ymax"),
      );
      break;
    case "esriGeometryPoint":
      result = { geometry: { type: "Point", coordinates: [finite(obj.x, "x"), finite(obj.y, "y")] } };
      break;
    case "esriGeometryMultipoint": {
      const points = readVertexList(obj.points, "points", budget);
      if (!points.length) throw invalid("a multipoint without points");
      result = { geometry: { type: "MultiPoint", coordinates: points } };
      break;
    }
    case "esriGeometryPolyline": {
      if (!Array.isArray(obj.paths)) throw invalid("paths is not an array");
      const paths = obj.paths.map((p, i) => readVertexList(p, `paths[${i}]`, budget));
      if (!paths.length || paths.some((p) => p.length < 2)) throw invalid("a path has fewer than two vertices");
      result = {
        geometry:
          paths.length === 1
            ? { type: "LineString", coordinates: paths[0] as Position[] }
            : { type: "MultiLineString", coordinates: paths },
      };
      break;
    }
    case "esriGeometryPolygon": {
      if (!Array.isArray(obj.rings)) throw invalid("rings is not an array");
      const rings = obj.rings.map((r, i) => closeRing(readVertexList(r, `rings[${i}]`, budget)));
      if (rings.some((r) => r.length < 4)) throw invalid("a ring has fewer than three distinct vertices");
      const geometry = ringsToGeoJson(rings);
      if (!geometry) throw invalid("a polygon without area");
      result = { geometry };
      break;
    }
  }
  return sr === undefined ? result : { ...result, spatialReference: sr };
}

/**
 * Parses the `geometry` query parameter (as sent: JSON text or the shorthand, or an already parsed object) of
 * `geometryType` (absent: inferred from the JSON, and the shorthand is an envelope or a point by its count).
 */
export function fromEsriGeometry(value: unknown, geometryType?: string): QueryGeometry {
  let type: QueryGeometryType | undefined;
  if (geometryType !== undefined && geometryType !== "") {
    type = GEOMETRY_TYPE_NAMES.find((t) => t.toLowerCase() === geometryType.toLowerCase());
    if (!type) throw invalid(`geometryType ${geometryType} is not supported`);
  }
  let parsed: unknown = value;
  if (typeof value === "string") {
    const text = value.trim();
    if (!text.startsWith("{")) return parseShorthand(text, type);
    try {
      parsed = JSON.parse(text);
    } catch {
      throw invalid("the geometry is not valid JSON");
    }
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw invalid("the geometry is not an object");
  return parseObject(parsed as Record<string, unknown>, type);
}
