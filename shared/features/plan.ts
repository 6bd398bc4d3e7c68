// A feature layer `query` request, parsed once into a typed plan: every parameter ArcGIS clients send is read,
// checked against the layer (field names, types) and against caps, and conflicting or malformed ones are
// refused with ArcGIS's envelope (`'<param>' parameter is invalid`). Readers and SQL emitters take only the
// plan, never the request, so nothing a client wrote reaches a data source except as a checked value.
import { canonicalWkid } from "#shared/features/geometry/projection.ts";
import type { OriginPosition } from "#shared/features/geometry/quantize.ts";
import { invalidParameter } from "#shared/features/errors.ts";
import { type Bounds, type Field, fieldByName, fieldValueType, type LayerSchema } from "#shared/features/schema.ts";
import { parseWhere } from "#shared/features/where.ts";
import { excerpt } from "#shared/features/where-tokens.ts";
import { type Expr, holdsForEveryRow, nodes } from "#shared/features/where-tree.ts";

/** The page size a layer answers when it sets none (ArcGIS's own default for hosted layers). */
export const DEFAULT_MAX_RECORD_COUNT = 2000;
/** The most object ids one `objectIds` lists: a bound parameter each, and a page of ids is far smaller. */
export const MAX_OBJECT_IDS = 5000;
/** The longest `geometry` text (about 60,000 coordinate pairs): larger filters belong in a stored dataset. */
export const MAX_GEOMETRY_LENGTH = 1_048_576;
/** The most entries in `outStatistics`. */
export const MAX_OUT_STATISTICS = 32;
/** The most fields named by `orderByFields` or `groupByFieldsForStatistics`. */
export const MAX_LIST_FIELDS = 32;
/** The largest `resultOffset`: past it, offset paging is a scan no client should ask for. */
export const MAX_RESULT_OFFSET = 2_147_483_647;

/** The largest `maxRecordCountFactor` honoured (ArcGIS's documented ceiling); a larger one counts as this. */
export const MAX_RECORD_COUNT_FACTOR = 5;
/** The longest `quantizationParameters` text: an object of four members needs far less. */
export const MAX_QUANTIZATION_LENGTH = 4096;
/**
 * The most grid cells across a quantization extent, counted in the answer's spatial reference (the tolerance's
 * units): past 2^40 a cell is too small for the extent's coordinates (doubles carry 53 bits), and integers far
 * from the extent could no longer be exact. Checked where the extent is known in those units (query.ts).
 */
export const MAX_QUANTIZATION_CELLS = 2 ** 40;

export interface QueryLimits {
  /** The layer's page size: `resultRecordCount` is capped by it, and it is the page when none is asked. */
  readonly maxRecordCount?: number;
  /** The page size of `resultType=standard` (default: maxRecordCount). */
  readonly standardMaxRecordCount?: number;
  /** The page size of `resultType=tile` (default: maxRecordCount). */
  readonly tileMaxRecordCount?: number;
  /** The instant CURRENT_DATE and CURRENT_TIMESTAMP name (epoch ms); the clock when absent. */
  readonly now?: number;
  /**
   * A condition every row answered must meet besides the request's (the caller's ownership rules: shared/features/
   * ownership.ts), joined to its `where` as a tree, so no `where` can undo it and every output (counts, extents,
   * statistics, ids, pages) reads the same rows.
   */
  readonly restrict?: Expr;
}

export const QUERY_GEOMETRY_TYPES = [
  "esriGeometryEnvelope",
  "esriGeometryPoint",
  "esriGeometryMultipoint",
  "esriGeometryPolyline",
  "esriGeometryPolygon",
] as const;
export type QueryGeometryType = (typeof QUERY_GEOMETRY_TYPES)[number];

/**
 * The spatial relations a query may ask for, with ArcGIS's sense: the relation holds from the query geometry
 * (q) to each feature (f), "Query Geometry <relation> Target Geometry" as esriSpatialRelEnum defines it. So
 * `contains` keeps features inside q, and `within` keeps features that enclose q. The exact test in
 * JavaScript and PostGIS's predicates must both follow SPATIAL_RELATIONS.
 */
export type SpatialRelation =
  "intersects" | "envelopeIntersects" | "contains" | "within" | "crosses" | "touches" | "overlaps";

export const SPATIAL_RELATIONS: Readonly<
  Record<SpatialRelation, { readonly esri: string; readonly sense: string; readonly postgis: string }>
> = {
  intersects: { esri: "esriSpatialRelIntersects", sense: "q intersects f", postgis: "ST_Intersects(f, q)" },
  envelopeIntersects: {
    esri: "esriSpatialRelEnvelopeIntersects",
    sense: "the envelope of q intersects the envelope of f",
    postgis: "f && q",
  },
  contains: { esri: "esriSpatialRelContains", sense: "q contains f (f lies inside q)", postgis: "ST_Contains(q, f)" },
  within: { esri: "esriSpatialRelWithin", sense: "q is within f (f encloses q)", postgis: "ST_Within(q, f)" },
  crosses: { esri: "esriSpatialRelCrosses", sense: "q crosses f", postgis: "ST_Crosses(q, f)" },
  touches: { esri: "esriSpatialRelTouches", sense: "q touches f", postgis: "ST_Touches(q, f)" },
  overlaps: { esri: "esriSpatialRelOverlaps", sense: "q overlaps f", postgis: "ST_Overlaps(q, f)" },
};

const RELATION_BY_ESRI = new Map<string, SpatialRelation>(
  Object.entries(SPATIAL_RELATIONS).map(([k, v]) => [v.esri.toLowerCase(), k as SpatialRelation]),
);

/** Distance units and their length in metres. */
export const DISTANCE_UNITS = {
  esriSRUnit_Meter: 1,
  esriSRUnit_Kilometer: 1000,
  esriSRUnit_Foot: 0.3048,
  esriSRUnit_StatuteMile: 1609.344,
  esriSRUnit_NauticalMile: 1852,
  esriSRUnit_USNauticalMile: 1853.248,
} as const;
export type DistanceUnit = keyof typeof DISTANCE_UNITS;

export interface SpatialRequest {
  /**
   * The query geometry as Esri JSON, not yet checked for shape: the parsed JSON object, or the object the
   * shorthand forms stand for (`xmin,ymin,xmax,ymax` → {xmin,ymin,xmax,ymax}; `x,y` → {x,y}).
   */
  readonly geometry: Readonly<Record<string, unknown>>;
  readonly geometryType: QueryGeometryType;
  /** The coordinates' EPSG code: `inSR`, else the geometry's own spatialReference; absent: the layer's. */
  readonly inSR: number | undefined;
  readonly relation: SpatialRelation;
  /** A buffer around the query geometry, in `units` (absent: the units of inSR). */
  readonly distance: number | undefined;
  readonly units: DistanceUnit | undefined;
}

export type ResultType = "none" | "standard" | "tile";

/**
 * `quantizationParameters`: answer x and y as cells of `tolerance` counted from the `originPosition` corner of
 * `extent` (quantize.ts). `view` also generalizes every geometry to the tolerance (a cell is what the client
 * draws as a pixel); `edit` keeps every vertex the grid can tell apart.
 */
export interface QuantizationParameters {
  readonly mode: "view" | "edit";
  readonly originPosition: OriginPosition;
  /** A cell's size, in the units of the answer's spatial reference. */
  readonly tolerance: number;
  /** The grid's extent (absent: the layer's extent), in `extentSR`. */
  readonly extent: Bounds | undefined;
  /** The extent's own spatial reference (absent: the query geometry's, else the layer's, as ArcGIS reads it). */
  readonly extentSR: number | undefined;
}

export interface OrderTerm {
  readonly field: Field;
  readonly descending: boolean;
}

export const STATISTIC_TYPES = [
  "count",
  "sum",
  "min",
  "max",
  "avg",
  "stddev",
  "var",
  "percentile_cont",
  "percentile_disc",
] as const;
export type StatisticType = (typeof STATISTIC_TYPES)[number];

export interface Statistic {
  readonly type: StatisticType;
  readonly field: Field;
  /** The name the answer gives the value (checked: a plain identifier, unique in the answer). */
  readonly name: string;
  /** Percentiles: the fraction, 0 to 1. */
  readonly percentile: number | undefined;
  /** Percentiles: rank from the largest value down. */
  readonly descending: boolean;
}

export type StatisticsOrderTerm =
  | { readonly kind: "group"; readonly field: Field; readonly descending: boolean }
  | { readonly kind: "statistic"; readonly index: number; readonly descending: boolean };

export interface PlanFilter {
  /** The where tree (absent: every row). */
  readonly where: Expr | undefined;
  /** Rows restricted to these object ids (absent: no restriction), distinct and in ascending order. */
  readonly objectIds: readonly number[] | undefined;
  readonly spatial: SpatialRequest | undefined;
  /** The EPSG code to answer geometry in (absent: the layer's). */
  readonly outSR: number | undefined;
  readonly returnZ: boolean;
  readonly returnM: boolean;
}

export interface Page {
  readonly offset: number;
  /** The rows answered at most; emitters fetch one more to learn whether the page exceeded the transfer limit. */
  readonly pageSize: number;
}

export type QueryPlan = PlanFilter &
  (
    | ({
        readonly output: "features";
        /** The object id first, then the asked fields in layer order. */
        readonly fields: readonly Field[];
        readonly returnGeometry: boolean;
        readonly geometryPrecision: number | undefined;
        readonly maxAllowableOffset: number | undefined;
        /** Absent: coordinates as they are (f=pbf then quantizes on a grid of its own, described by its transform). */
        readonly quantization: QuantizationParameters | undefined;
        readonly resultType: ResultType;
        /** Always ends with the object id, so the order is total and offset paging neither skips nor repeats. */
        readonly orderBy: readonly OrderTerm[];
      } & Page)
    | {
        readonly output: "count";
        /** returnDistinctValues with returnCountOnly: count the distinct combinations of these fields. */
        readonly distinctFields: readonly Field[] | undefined;
      }
    | { readonly output: "ids"; readonly orderBy: readonly OrderTerm[] }
    | { readonly output: "extent"; readonly withCount: boolean }
    | ({
        readonly output: "statistics";
        readonly statistics: readonly Statistic[];
        readonly groupBy: readonly Field[];
        readonly having: Expr | undefined;
        /** Ends with every group-by field not named, so groups come in a total order. */
        readonly orderBy: readonly StatisticsOrderTerm[];
      } & Page)
    | ({
        readonly output: "distinct";
        readonly fields: readonly Field[];
        /** Ends with every distinct field not named: a total order over the distinct rows. */
        readonly orderBy: readonly OrderTerm[];
      } & Page)
  );

export type OutputKind = QueryPlan["output"];

/** Where the plan reads parameters from (the request's, or any map of them). */
export interface ParamSource {
  get(name: string): string | undefined;
}

/** Reads a well-known id: a number, `{"wkid":n}` or `{"latestWkid":n}`; Esri's Web Mercator ids become 3857. */
export function parseSpatialReference(raw: string | Record<string, unknown>, parameter: string): number {
  let value: unknown = raw;
  if (typeof raw === "string") {
    const text = raw.trim();
    if (text.startsWith("{")) value = parseJson(text, parameter);
    else value = Number(text);
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const sr = value as Record<string, unknown>;
    value = sr.latestWkid ?? sr.wkid;
    if (value === undefined)
      throw invalidParameter(parameter, "Only spatial references given by a well-known id (wkid) are supported.");
  }
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
    throw invalidParameter(parameter, 'Expected a well-known id (wkid) or {"wkid": n}.');
  return canonicalWkid(value);
}

function parseJson(text: string, parameter: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidParameter(parameter, "The value is not valid JSON.");
  }
}

const present = (raw: string | undefined): raw is string => raw !== undefined && raw.trim() !== "";

function bool(params: ParamSource, name: string, fallback: boolean): boolean {
  const raw = params.get(name);
  if (!present(raw)) return fallback;
  const v = raw.trim().toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  throw invalidParameter(name, "Expected true or false.");
}

function integer(params: ParamSource, name: string, min: number, max: number): number | undefined {
  const raw = params.get(name);
  if (!present(raw)) return undefined;
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw invalidParameter(name, `Expected a whole number from ${min} to ${max}.`);
  return n;
}

function nonNegative(params: ParamSource, name: string): number | undefined {
  const raw = params.get(name);
  if (!present(raw)) return undefined;
  const n = Number(raw.trim());
  if (!Number.isFinite(n) || n < 0) throw invalidParameter(name, "Expected a number of zero or more.");
  return n;
}

/** A comma-separated list of field names, each resolved against the layer; duplicates dropped. */
function fieldList(raw: string, schema: LayerSchema, parameter: string): Field[] {
  const out: Field[] = [];
  for (const part of raw.split(",")) {
    const name = part.trim();
    if (name === "") continue;
    const field = fieldByName(schema, name);
    if (field === undefined) throw invalidParameter(parameter, `Unknown field '${excerpt(name, 64)}'.`);
    if (!out.includes(field)) out.push(field);
    if (out.length > Math.max(MAX_LIST_FIELDS, schema.fields.length))
      throw invalidParameter(parameter, "Too many fields.");
  }
  return out;
}

/** `name [ASC|DESC], …` with names resolved by `resolve` (undefined: not allowed here). */
function orderTerms<T>(raw: string, resolve: (name: string) => T | undefined): { target: T; descending: boolean }[] {
  const out: { target: T; descending: boolean }[] = [];
  for (const part of raw.split(",")) {
    const words = part.trim().split(/\s+/);
    if (words.length === 1 && words[0] === "") continue;
    if (words.length > 2) throw invalidParameter("orderByFields", `Cannot read '${excerpt(part.trim())}'.`);
    const [name = "", dir = "ASC"] = words;
    const direction = dir.toUpperCase();
    if (direction !== "ASC" && direction !== "DESC")
      throw invalidParameter("orderByFields", `Expected ASC or DESC after '${excerpt(name)}'.`);
    const target = resolve(name);
    if (target === undefined) throw invalidParameter("orderByFields", `Cannot order by '${excerpt(name, 64)}'.`);
    out.push({ target, descending: direction === "DESC" });
    if (out.length > MAX_LIST_FIELDS) throw invalidParameter("orderByFields", "Too many fields.");
  }
  return out;
}

function objectIdList(raw: string): number[] {
  const ids = new Set<number>();
  let count = 0;
  for (const part of raw.split(",")) {
    const text = part.trim();
    if (text === "") continue;
    if (++count > MAX_OBJECT_IDS)
      throw invalidParameter("objectIds", `At most ${MAX_OBJECT_IDS} object ids are accepted.`);
    const n = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(n)) throw invalidParameter("objectIds", `'${excerpt(text)}' is not an object id.`);
    ids.add(n);
  }
  return [...ids].sort((a, b) => a - b);
}

const KEYS_OF: Record<QueryGeometryType, string> = {
  esriGeometryEnvelope: "xmin",
  esriGeometryPoint: "x",
  esriGeometryMultipoint: "points",
  esriGeometryPolyline: "paths",
  esriGeometryPolygon: "rings",
};

function spatialRequest(params: ParamSource): SpatialRequest | undefined {
  const raw = params.get("geometry");
  const distance = nonNegative(params, "distance");
  if (!present(raw)) {
    if (distance !== undefined && distance > 0)
      throw invalidParameter("distance", "A distance needs a 'geometry' to measure from.");
    return undefined;
  }
  if (raw.length > MAX_GEOMETRY_LENGTH)
    throw invalidParameter("geometry", `The geometry is longer than ${MAX_GEOMETRY_LENGTH} characters.`);
  const typeRaw = params.get("geometryType");
  let geometryType: QueryGeometryType | undefined;
  if (present(typeRaw)) {
    const t = typeRaw.trim().toLowerCase();
    geometryType = QUERY_GEOMETRY_TYPES.find((g) => g.toLowerCase() === t);
    if (geometryType === undefined)
      throw invalidParameter("geometryType", `Unknown geometry type '${excerpt(typeRaw)}'.`);
  }
  const text = raw.trim();
  let geometry: Record<string, unknown>;
  if (text.startsWith("{")) {
    const value = parseJson(text, "geometry");
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw invalidParameter("geometry", "Expected an Esri JSON geometry object.");
    geometry = value as Record<string, unknown>;
    // Without geometryType, the geometry's own keys say what it is (ArcGIS assumes an envelope).
    const inferred = QUERY_GEOMETRY_TYPES.find((g) => KEYS_OF[g] in geometry);
    if (geometryType === undefined) geometryType = inferred ?? "esriGeometryEnvelope";
    if (!(KEYS_OF[geometryType] in geometry))
      throw invalidParameter("geometry", `The geometry does not fit ${geometryType}.`);
  } else {
    const numbers = text.split(",").map((s) => (s.trim() === "" ? NaN : Number(s)));
    if (numbers.some((n) => !Number.isFinite(n)))
      throw invalidParameter("geometry", "Expected Esri JSON, 'xmin,ymin,xmax,ymax' or 'x,y'.");
    geometryType ??= numbers.length === 2 ? "esriGeometryPoint" : "esriGeometryEnvelope";
    const [a = 0, b = 0, c = 0, d = 0] = numbers;
    if (geometryType === "esriGeometryEnvelope" && numbers.length === 4) {
      if (a > c || b > d) throw invalidParameter("geometry", "The envelope's minimum exceeds its maximum.");
      geometry = { xmin: a, ymin: b, xmax: c, ymax: d };
    } else if (geometryType === "esriGeometryPoint" && numbers.length === 2) geometry = { x: a, y: b };
    else throw invalidParameter("geometry", `The shorthand does not fit ${geometryType}.`);
  }
  const inSRRaw = params.get("inSR");
  const own = geometry.spatialReference;
  const inSR = present(inSRRaw)
    ? parseSpatialReference(inSRRaw, "inSR")
    : typeof own === "object" && own !== null && !Array.isArray(own)
      ? parseSpatialReference(own as Record<string, unknown>, "geometry")
      : undefined;
  const relRaw = params.get("spatialRel");
  let relation: SpatialRelation = "intersects";
  if (present(relRaw)) {
    const found = RELATION_BY_ESRI.get(relRaw.trim().toLowerCase());
    if (found === undefined) throw invalidParameter("spatialRel", `Unsupported spatial relation '${excerpt(relRaw)}'.`);
    relation = found;
  }
  const unitsRaw = params.get("units");
  let units: DistanceUnit | undefined;
  if (present(unitsRaw)) {
    const u = unitsRaw.trim().toLowerCase();
    units = (Object.keys(DISTANCE_UNITS) as DistanceUnit[]).find((k) => k.toLowerCase() === u);
    if (units === undefined) throw invalidParameter("units", `Unknown unit '${excerpt(unitsRaw)}'.`);
  }
  return {
    geometry,
    geometryType,
    inSR,
    relation,
    distance: distance === undefined || distance === 0 ? undefined : distance,
    units: distance === undefined || distance === 0 ? undefined : units,
  };
}

const ORIGINS: Readonly<Record<string, OriginPosition>> = {
  upperleft: "upperLeft",
  lowerleft: "lowerLeft",
  // The REST reference writes the lower-left corner this way too.
  bottomleft: "lowerLeft",
};

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function quantization(params: ParamSource, maxAllowableOffset: number | undefined): QuantizationParameters | undefined {
  const raw = params.get("quantizationParameters");
  if (!present(raw)) return undefined;
  const bad = (reason: string) => invalidParameter("quantizationParameters", reason);
  if (raw.length > MAX_QUANTIZATION_LENGTH)
    throw bad(`The value is longer than ${MAX_QUANTIZATION_LENGTH} characters.`);
  const value = parseJson(raw.trim(), "quantizationParameters");
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw bad("Expected a JSON object with extent, mode, originPosition and tolerance.");
  const q = value as Record<string, unknown>;
  const word = (name: string): string | undefined => {
    const v = q[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw bad(`'${name}' must be a string.`);
    return v.trim().toLowerCase();
  };
  const modeWord = word("mode") ?? "view";
  if (modeWord !== "view" && modeWord !== "edit") throw bad("'mode' must be view or edit.");
  const originWord = word("originPosition") ?? "upperleft";
  const originPosition = ORIGINS[originWord];
  if (originPosition === undefined) throw bad("'originPosition' must be upperLeft or lowerLeft.");
  // Without a tolerance ArcGIS takes maxAllowableOffset's; with neither there is no cell size to count in.
  const tolerance = q.tolerance ?? maxAllowableOffset;
  if (tolerance === undefined) throw bad("A 'tolerance' (or a maxAllowableOffset) is needed.");
  if (!finite(tolerance) || tolerance <= 0) throw bad("'tolerance' must be a number greater than zero.");
  let extent: Bounds | undefined;
  let extentSR: number | undefined;
  if (q.extent !== undefined && q.extent !== null) {
    if (typeof q.extent !== "object" || Array.isArray(q.extent))
      throw bad("'extent' must be an envelope {xmin, ymin, xmax, ymax}.");
    const e = q.extent as Record<string, unknown>;
    const { xmin, ymin, xmax, ymax } = e;
    if (!finite(xmin) || !finite(ymin) || !finite(xmax) || !finite(ymax))
      throw bad("'extent' needs finite xmin, ymin, xmax and ymax.");
    if (!(xmin < xmax && ymin < ymax)) throw bad("The extent's minimum must be below its maximum.");
    extent = [xmin, ymin, xmax, ymax];
    const sr = e.spatialReference;
    if (sr !== undefined && sr !== null) {
      if (typeof sr !== "object" || Array.isArray(sr)) throw bad("The extent's spatialReference must be an object.");
      extentSR = parseSpatialReference(sr as Record<string, unknown>, "quantizationParameters");
    }
  }
  return { mode: modeWord, originPosition, tolerance, extent, extentSR };
}

function resultType(params: ParamSource): ResultType {
  const raw = params.get("resultType");
  if (!present(raw)) return "none";
  const v = raw.trim().toLowerCase();
  if (v === "none" || v === "standard" || v === "tile") return v;
  throw invalidParameter("resultType", "Expected none, standard or tile.");
}

/**
 * The most rows one page answers: the page size of the result type, times `maxRecordCountFactor` (up to
 * MAX_RECORD_COUNT_FACTOR).
 */
function pageLimit(params: ParamSource, type: ResultType, limits: QueryLimits): number {
  const max = limits.maxRecordCount ?? DEFAULT_MAX_RECORD_COUNT;
  const base =
    type === "tile"
      ? (limits.tileMaxRecordCount ?? max)
      : type === "standard"
        ? (limits.standardMaxRecordCount ?? max)
        : max;
  const raw = params.get("maxRecordCountFactor");
  if (!present(raw)) return base;
  const factor = Number(raw.trim());
  if (!Number.isFinite(factor) || factor <= 0)
    throw invalidParameter("maxRecordCountFactor", "Expected a number greater than zero.");
  return Math.max(1, Math.floor(base * Math.min(factor, MAX_RECORD_COUNT_FACTOR)));
}

const STAT_NAME = /^[\p{L}_][\p{L}\p{N}_]{0,63}$/u;

function statistics(raw: string, schema: LayerSchema): Statistic[] {
  const value = parseJson(raw.trim(), "outStatistics");
  if (!Array.isArray(value) || value.length === 0)
    throw invalidParameter("outStatistics", "Expected a non-empty JSON array of statistic definitions.");
  if (value.length > MAX_OUT_STATISTICS)
    throw invalidParameter("outStatistics", `At most ${MAX_OUT_STATISTICS} statistics are accepted.`);
  const names = new Set<string>();
  return value.map((entry: unknown, i): Statistic => {
    const where = `statistic ${i + 1}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      throw invalidParameter("outStatistics", `The ${where} is not an object.`);
    const def = entry as Record<string, unknown>;
    const typeName = typeof def.statisticType === "string" ? def.statisticType.trim().toLowerCase() : "";
    const type = STATISTIC_TYPES.find((t) => t === typeName);
    if (type === undefined) throw invalidParameter("outStatistics", `The ${where} has no known statisticType.`);
    const fieldName = typeof def.onStatisticField === "string" ? def.onStatisticField.trim() : "";
    const field = fieldByName(schema, fieldName);
    if (field === undefined)
      throw invalidParameter("outStatistics", `The ${where} names an unknown field '${excerpt(fieldName, 64)}'.`);
    const valueType = fieldValueType(field);
    const numeric = type !== "count" && type !== "min" && type !== "max";
    if (valueType === undefined || (numeric && valueType !== "number"))
      throw invalidParameter("outStatistics", `${type} cannot be computed on the field '${field.name}'.`);
    const nameRaw = def.outStatisticFieldName;
    const name =
      typeof nameRaw === "string" && nameRaw.trim() !== "" ? nameRaw.trim() : `${type}_${field.name}`.slice(0, 64);
    if (!STAT_NAME.test(name))
      throw invalidParameter("outStatistics", `The ${where} has an invalid outStatisticFieldName '${excerpt(name)}'.`);
    if (names.has(name.toLowerCase()))
      throw invalidParameter("outStatistics", `The outStatisticFieldName '${name}' is given twice.`);
    names.add(name.toLowerCase());
    let percentile: number | undefined;
    let descending = false;
    if (type === "percentile_cont" || type === "percentile_disc") {
      const p = def.statisticParameters;
      const v = typeof p === "object" && p !== null ? (p as Record<string, unknown>).value : undefined;
      if (typeof v !== "number" || !(v >= 0 && v <= 1))
        throw invalidParameter("outStatistics", `${type} needs statisticParameters.value from 0 to 1.`);
      percentile = v;
      const order = (p as Record<string, unknown>).orderBy;
      if (order !== undefined) {
        const o = typeof order === "string" ? order.trim().toUpperCase() : "";
        if (o !== "ASC" && o !== "DESC")
          throw invalidParameter("outStatistics", `statisticParameters.orderBy must be ASC or DESC.`);
        descending = o === "DESC";
      }
    } else if (def.statisticParameters !== undefined && def.statisticParameters !== null) {
      throw invalidParameter("outStatistics", `${type} takes no statisticParameters.`);
    }
    return { type, field, name, percentile, descending };
  });
}

/**
 * Reads a `query` request into a plan. Output precedence follows ArcGIS: outStatistics, then returnExtentOnly
 * (with returnCountOnly: an extent with a count), returnCountOnly (with returnDistinctValues: a count of
 * distinct values), returnIdsOnly, returnDistinctValues, and features.
 */
export function planQuery(params: ParamSource, schema: LayerSchema, limits: QueryLimits = {}): QueryPlan {
  const type = resultType(params);
  const maxRecordCount = pageLimit(params, type, limits);
  const oid = fieldByName(schema, schema.objectIdField);
  if (oid === undefined) throw new Error(`layer ${schema.name}: the object id field is not among its fields`);
  const now = limits.now;

  const whereRaw = params.get("where");
  const parsed = whereRaw === undefined ? undefined : parseWhere(whereRaw, schema, { parameter: "where", now });
  const asked = parsed && holdsForEveryRow(parsed) ? undefined : parsed;
  const restrict = limits.restrict;
  const where: Expr | undefined =
    restrict && asked ? { kind: "and", type: "boolean", parts: [asked, restrict] } : (restrict ?? asked);
  const idsRaw = params.get("objectIds");
  const objectIds = present(idsRaw) ? objectIdList(idsRaw) : undefined;
  const spatial = spatialRequest(params);
  const outSRRaw = params.get("outSR");
  const filter: PlanFilter = {
    where,
    objectIds,
    spatial,
    outSR: present(outSRRaw) ? parseSpatialReference(outSRRaw, "outSR") : undefined,
    returnZ: bool(params, "returnZ", false),
    returnM: bool(params, "returnM", false),
  };

  const returnGeometry = bool(params, "returnGeometry", true);
  const countOnly = bool(params, "returnCountOnly", false);
  const idsOnly = bool(params, "returnIdsOnly", false);
  const extentOnly = bool(params, "returnExtentOnly", false);
  const distinct = bool(params, "returnDistinctValues", false);
  const geometryPrecision = integer(params, "geometryPrecision", 0, 17);
  const maxAllowableOffset = nonNegative(params, "maxAllowableOffset");
  const quantizationParameters = quantization(params, maxAllowableOffset || undefined);
  const offset = integer(params, "resultOffset", 0, MAX_RESULT_OFFSET) ?? 0;
  const count = integer(params, "resultRecordCount", 1, Number.MAX_SAFE_INTEGER);
  const pageSize = Math.min(count ?? maxRecordCount, maxRecordCount);

  const outFieldsRaw = params.get("outFields") ?? "";
  const all = outFieldsRaw.split(",").some((f) => f.trim() === "*");
  const named = all ? [] : fieldList(outFieldsRaw, schema, "outFields");
  const orderRaw = params.get("orderByFields");
  const statsRaw = params.get("outStatistics");
  const groupRaw = params.get("groupByFieldsForStatistics");
  const havingRaw = params.get("having");

  if (present(statsRaw)) {
    const stats = statistics(statsRaw, schema);
    const groupBy = present(groupRaw) ? fieldList(groupRaw, schema, "groupByFieldsForStatistics") : [];
    for (const g of groupBy) {
      if (fieldValueType(g) === undefined)
        throw invalidParameter("groupByFieldsForStatistics", `Cannot group by the field '${g.name}'.`);
      if (stats.some((s) => s.name.toLowerCase() === g.name.toLowerCase()))
        throw invalidParameter("outStatistics", `The outStatisticFieldName '${g.name}' is also a group-by field.`);
    }
    const having = present(havingRaw)
      ? parseWhere(havingRaw, schema, { parameter: "having", aggregates: true, now })
      : undefined;
    if (having !== undefined) {
      // Outside an aggregate, a having may only name what is constant over a group: its group-by fields.
      for (const n of nodes(having)) {
        if (n.kind === "field" && !groupBy.includes(n.field))
          throw invalidParameter("having", `The field '${n.field.name}' is neither grouped by nor aggregated.`);
      }
    }
    const terms = present(orderRaw)
      ? orderTerms<StatisticsOrderTerm>(orderRaw, (name) => {
          const lower = name.toLowerCase();
          const index = stats.findIndex((s) => s.name.toLowerCase() === lower);
          if (index >= 0) return { kind: "statistic", index, descending: false };
          const g = groupBy.find((f) => f.name.toLowerCase() === lower);
          return g === undefined ? undefined : { kind: "group", field: g, descending: false };
        }).map(({ target, descending }) => ({ ...target, descending }))
      : [];
    for (const g of groupBy) {
      if (!terms.some((t) => t.kind === "group" && t.field === g))
        terms.push({ kind: "group", field: g, descending: false });
    }
    return { ...filter, output: "statistics", statistics: stats, groupBy, having, orderBy: terms, offset, pageSize };
  }
  if (present(groupRaw)) throw invalidParameter("groupByFieldsForStatistics", "Grouping needs 'outStatistics'.");
  if (present(havingRaw)) throw invalidParameter("having", "'having' needs 'outStatistics'.");

  const distinctFields = (): Field[] => {
    if (all || named.length === 0)
      throw invalidParameter("returnDistinctValues", "Distinct values need 'outFields' naming fields, not '*'.");
    for (const f of named) {
      if (fieldValueType(f) === undefined)
        throw invalidParameter("outFields", `Distinct values cannot be computed on the field '${f.name}'.`);
    }
    return named;
  };
  const fieldOrder = (allowed: readonly Field[] | undefined, tieBreak: readonly Field[]): OrderTerm[] => {
    const terms = present(orderRaw)
      ? orderTerms<Field>(orderRaw, (name) => {
          const f = fieldByName(schema, name);
          if (f === undefined || fieldValueType(f) === undefined) return undefined;
          return allowed === undefined || allowed.includes(f) ? f : undefined;
        }).map(({ target, descending }) => ({ field: target, descending }))
      : [];
    const seen = new Set<Field>();
    const unique = terms.filter((t) => !seen.has(t.field) && seen.add(t.field));
    for (const f of tieBreak) if (!seen.has(f)) unique.push({ field: f, descending: false });
    return unique;
  };

  if (extentOnly) {
    if (schema.geometry === undefined) throw invalidParameter("returnExtentOnly", "The layer has no geometry.");
    return { ...filter, output: "extent", withCount: countOnly };
  }
  if (countOnly) return { ...filter, output: "count", distinctFields: distinct ? distinctFields() : undefined };
  if (idsOnly) return { ...filter, output: "ids", orderBy: fieldOrder(undefined, [oid]) };
  if (distinct) {
    const fields = distinctFields();
    return { ...filter, output: "distinct", fields, orderBy: fieldOrder(fields, fields), offset, pageSize };
  }
  const wanted = new Set<Field>(all ? schema.fields : named);
  const fields = [oid, ...schema.fields.filter((f) => f !== oid && wanted.has(f))];
  return {
    ...filter,
    output: "features",
    fields,
    returnGeometry: returnGeometry && schema.geometry !== undefined,
    geometryPrecision,
    maxAllowableOffset,
    quantization: quantizationParameters,
    resultType: type,
    orderBy: fieldOrder(undefined, [oid]),
    offset,
    pageSize,
  };
}
