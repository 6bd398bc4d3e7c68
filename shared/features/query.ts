// `query` on a feature layer, one call each: normalize (the plan: every parameter parsed and checked against the
// layer) → validate (what the plan asks of the dataset: the output's spatial reference, the query geometry in
// the dataset's coordinates, prepared for the exact test) → compute (the plan's SQL, run on the dataset) →
// respond (rows into the answer, in the asked spatial reference; rendered in the asked format by output.ts).
// It takes the parameters, the format and the dataset, never the request. The page is what bounds the work and
// the memory: the SQL fetches one row more than the page, never the layer.
import type { Geometry } from "geojson";
import {
  DataExceptionError,
  DatasetError,
  GeometryTopologyError,
  invalidParameter,
  QueryTimeoutError,
} from "#shared/features/errors.ts";
import { QueryTextError } from "#shared/features/geopackage.ts";
import { fromEsriGeometry } from "#shared/features/geometry/esri-json.ts";
import { generalize } from "#shared/features/geometry/generalize.ts";
import {
  hasCrs,
  project,
  projectBounds,
  registerCrs,
  requireCrs,
  roundCoordinates,
} from "#shared/features/geometry/projection.ts";
import { gridOf, type QuantizationGrid } from "#shared/features/geometry/quantize.ts";
import { prepareSpatialFilter, type SpatialRelation as EsriRelation } from "#shared/features/geometry/spatial.ts";
import { MAX_RECORD_COUNT, STANDARD_MAX_RECORD_COUNT, TILE_MAX_RECORD_COUNT } from "#shared/features/layer-json.ts";
import { renderAnswer, type QueryAnswer } from "#shared/features/output.ts";
import {
  DISTANCE_UNITS,
  MAX_QUANTIZATION_CELLS,
  type ParamSource,
  planQuery,
  type QueryPlan,
  type SpatialRelation,
} from "#shared/features/plan.ts";
import type { Bounds, FeatureRow } from "#shared/features/schema.ts";
import { type EmittedQuery, emitQuery } from "#shared/features/sql.ts";
import type { SpatialFilter } from "#shared/features/sql/emitter.ts";
import type { OpenDataset, SpatialTest } from "#shared/features/dataset.ts";
import { ExpressionError } from "#shared/features/sqlite-functions.ts";
import { restrictPlan } from "#shared/features/view.ts";
import { type Expr, nodes, type ScalarFunction } from "#shared/features/where-tree.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { logger } from "#shared/log.ts";

/**
 * How long one query may run its SQL. Under API Gateway's 30 s and far under the function's own timeout, so a
 * slow query is answered (an error naming the cause) rather than cut off.
 */
export const QUERY_TIME_MS = 10_000;

const RELATIONS: Readonly<Record<SpatialRelation, EsriRelation>> = {
  intersects: "esriSpatialRelIntersects",
  envelopeIntersects: "esriSpatialRelEnvelopeIntersects",
  contains: "esriSpatialRelContains",
  within: "esriSpatialRelWithin",
  crosses: "esriSpatialRelCrosses",
  touches: "esriSpatialRelTouches",
  overlaps: "esriSpatialRelOverlaps",
};

/** The dataset's coordinate system, known to the projection library (from the source's own definition if need be). */
async function knowCrs(dataset: OpenDataset, srid: number): Promise<void> {
  if (srid === 0 || hasCrs(srid)) return;
  const wkt = await dataset.definitionOf(srid);
  if (wkt) registerCrs(srid, wkt);
}

interface Resolved {
  readonly filter: SpatialFilter;
  readonly test: SpatialTest;
}

/** The plan's query geometry in the dataset's coordinates, prepared for the exact test. */
function resolveSpatial(plan: QueryPlan, dataset: OpenDataset): Resolved | undefined {
  const request = plan.spatial;
  if (!request) return undefined;
  const g = dataset.schema.geometry;
  if (!g)
    throw badRequest("Unable to complete operation.", ["'geometry' parameter is invalid", "the layer is a table"]);
  const parsed = fromEsriGeometry(request.geometry, request.geometryType);
  // The geometry's own spatial reference wins over inSR: one mapgate cannot project from is the geometry's fault.
  if (parsed.spatialReference !== undefined && g.srid !== 0) requireCrs(parsed.spatialReference, "geometry");
  const inSR = parsed.spatialReference ?? request.inSR ?? g.srid;
  const geometry = g.srid === 0 || inSR === 0 ? parsed.geometry : project(parsed.geometry, inSR, g.srid);
  const metres = request.distance ? request.distance * DISTANCE_UNITS[request.units ?? "esriSRUnit_Meter"] : 0;
  const spatial = prepareSpatialFilter(RELATIONS[request.relation], geometry, { distance: metres, srid: g.srid });
  return {
    // The index window is the prepared filter's (already widened by the distance): no further growth in SQL.
    // A database tests the relation itself, against the query buffered by the distance.
    filter: {
      bbox: spatial.bounds,
      relation: request.relation,
      geometry: dataset.emitter.testsSpatialInSql ? spatial.sqlGeometry() : geometry,
    },
    test: spatial,
  };
}

/** The clause whose expression calls `fn` (or LIKE), so a failing call is answered as that parameter's fault. */
function clauseCalling(plan: QueryPlan, fn: ScalarFunction | "like"): "where" | "having" {
  const calls = (e: Expr | undefined) =>
    e !== undefined &&
    [...nodes(e)].some((n) => (fn === "like" ? n.kind === "like" : n.kind === "call" && n.name === fn));
  return plan.output === "statistics" && !calls(plan.where) && calls(plan.having) ? "having" : "where";
}

async function run(
  plan: QueryPlan,
  dataset: OpenDataset,
  emitted: EmittedQuery,
  resolved: Resolved | undefined,
): Promise<unknown[][]> {
  try {
    return await dataset.run(emitted, resolved?.test, Date.now() + QUERY_TIME_MS);
  } catch (err) {
    if (err instanceof QueryTimeoutError)
      throw new ApiError(500, "Error performing query operation", [
        "The query took too long: narrow it with 'where', 'geometry' or 'objectIds'.",
      ]);
    if (err instanceof ApiError || err instanceof DatasetError || err instanceof GeometryTopologyError) throw err;
    if (err instanceof ExpressionError) throw invalidParameter(clauseCalling(plan, err.fn), err.message);
    // Only where (on rows) and having (on groups) hold expressions the data can refuse.
    const having = plan.output === "statistics" ? plan.having : undefined;
    if (err instanceof DataExceptionError && (plan.where !== undefined || having !== undefined))
      throw invalidParameter(
        plan.where !== undefined ? "where" : "having",
        err.fault === undefined
          ? "The expression cannot be evaluated on this layer's data (a conversion or arithmetic error)."
          : `${err.fault}.`,
      );
    // Only where (tested on every row) and having (on every group) hand text to functions.
    if (err instanceof QueryTextError)
      throw invalidParameter(
        plan.where !== undefined ? "where" : "having",
        "The expression hands its functions too much text for the rows it is tested on: shorten its texts.",
      );
    logger.error("feature query failed", { layer: dataset.schema.name, error: String(err).slice(0, 500) });
    throw new ApiError(500, "Error performing query operation", []);
  }
}

type FeaturesPlan = Extract<QueryPlan, { output: "features" }>;

/**
 * A stored geometry as the answer gives it: projected, generalized (to maxAllowableOffset, and in view mode to
 * the quantization tolerance too: no vertex the client's pixel could show is lost), rounded (not when quantized:
 * the grid is the precision then).
 */
function shapeGeometry(
  dataset: OpenDataset,
  value: unknown,
  from: number,
  to: number,
  plan: FeaturesPlan,
  grid: Grid | undefined,
): Geometry | null {
  let g = dataset.decode(value);
  if (!g) return null;
  if (from !== 0 && to !== 0 && from !== to) g = project(g, from, to);
  const offset = Math.max(plan.maxAllowableOffset ?? 0, grid?.mode === "view" ? grid.tolerance : 0);
  if (offset > 0) g = generalize(g, offset);
  if (g && plan.geometryPrecision !== undefined && !grid) g = roundCoordinates(g, plan.geometryPrecision);
  return g;
}

/** The quantization grid in the answer's coordinates, with the mode that asked for it. */
interface Grid extends QuantizationGrid {
  readonly mode: "view" | "edit";
  readonly tolerance: number;
}

/**
 * `quantizationParameters` resolved against the layer: the extent (the layer's when none is given) in the
 * answer's spatial reference, projected there from its own when they differ. GeoJSON is never quantized.
 */
function resolveGrid(
  plan: QueryPlan,
  format: string | undefined,
  dataset: OpenDataset,
  outSR: number,
): Grid | undefined {
  if (plan.output !== "features" || !plan.returnGeometry || !plan.quantization || format === "geojson")
    return undefined;
  const q = plan.quantization;
  const srid = dataset.schema.geometry?.srid ?? 0;
  let extent = q.extent;
  let from = q.extentSR ?? plan.spatial?.inSR ?? srid;
  if (!extent) {
    extent = dataset.schema.extent ?? [0, 0, 0, 0];
    from = srid;
  }
  if (from !== 0 && outSR !== 0 && from !== outSR) {
    requireCrs(from, "quantizationParameters");
    extent = projectBounds(extent, from, outSR);
  }
  // Counted here, in the answer's units (the tolerance's), whichever extent the grid has: the one given, projected,
  // or the layer's. Written so that NaN and Infinity (a tolerance of 5e-324) fail it too.
  const cells = Math.max(extent[2] - extent[0], extent[3] - extent[1]) / q.tolerance;
  if (!(cells <= MAX_QUANTIZATION_CELLS))
    throw invalidParameter(
      "quantizationParameters",
      `The tolerance is too small for the extent: a grid may be at most ${MAX_QUANTIZATION_CELLS} cells across, in the answer's spatial reference.`,
    );
  return { ...gridOf(extent, q.tolerance, q.originPosition), mode: q.mode, tolerance: q.tolerance };
}

/** A query as the service hands it over: its parameters, and the content format (`geojson`, `pbf`) `f` named. */
export interface QueryRequest {
  readonly params: ParamSource;
  readonly contentFormat?: string;
}

/** The query's answer in the asked format (JSON data for the pipeline, or GeoJSON/PBF content). */
export async function runQuery(req: QueryRequest, dataset: OpenDataset, restrict?: Expr): Promise<object> {
  return renderAnswer(await answerQuery(req.params, req.contentFormat, dataset, restrict), req.contentFormat);
}

/**
 * The query's answer in no format yet: what every output format (HTML included) is rendered from. `format` is
 * the content format asked for (GeoJSON answers in WGS 84 whatever outSR says), undefined for JSON and HTML.
 */
export async function answerQuery(
  params: ParamSource,
  format: string | undefined,
  dataset: OpenDataset,
  restrict?: Expr,
): Promise<QueryAnswer> {
  const plan = await normalize(params, dataset, restrict);
  const frame = await validate(plan, format, dataset);
  const { emitted, rows } = await compute(plan, dataset, frame.resolved);
  return toAnswer(dataset, plan, emitted, rows, frame);
}

/** The plan: every parameter parsed and checked against the layer. */
async function normalize(params: ParamSource, dataset: OpenDataset, restrict?: Expr): Promise<QueryPlan> {
  const srid = dataset.schema.geometry?.srid ?? 0;
  // Awaited only for a system the projection library does not know (rare): see OpenDataset.run for why.
  if (srid !== 0 && !hasCrs(srid)) await knowCrs(dataset, srid);
  const plan = planQuery(params, dataset.schema, {
    maxRecordCount: MAX_RECORD_COUNT,
    standardMaxRecordCount: STANDARD_MAX_RECORD_COUNT,
    tileMaxRecordCount: TILE_MAX_RECORD_COUNT,
    ...(restrict ? { restrict } : {}),
  });
  // A view's definition query, as a tree beside the caller's: every output (features, counts, ids, extents,
  // statistics) reads only the rows it admits.
  return restrictPlan(plan, dataset.restriction);
}

/** The coordinates a query is read and answered in. */
interface Frame {
  /** The dataset's own spatial reference (0: none). */
  readonly srid: number;
  /** The answer's. */
  readonly outSR: number;
  /** The query geometry in the dataset's coordinates, when the plan has one. */
  readonly resolved: Resolved | undefined;
  /** The grid features are answered on, when quantizationParameters asked for one. */
  readonly grid: Grid | undefined;
}

/** What the plan asks of the dataset, checked against it: the output's spatial reference, the query geometry. */
async function validate(plan: QueryPlan, format: string | undefined, dataset: OpenDataset): Promise<Frame> {
  const srid = dataset.schema.geometry?.srid ?? 0;
  // GeoJSON is WGS 84 whatever outSR says (RFC 7946); others answer in outSR, else the layer's own.
  const outSR = format === "geojson" ? 4326 : (plan.outSR ?? srid);
  if (plan.outSR !== undefined && srid !== 0 && !hasCrs(plan.outSR)) await knowCrs(dataset, plan.outSR);
  const extentSR = plan.output === "features" ? plan.quantization?.extentSR : undefined;
  if (extentSR !== undefined && srid !== 0 && !hasCrs(extentSR)) await knowCrs(dataset, extentSR);
  return { srid, outSR, resolved: resolveSpatial(plan, dataset), grid: resolveGrid(plan, format, dataset, outSR) };
}

/** The plan's SQL, run on the dataset; once more with the features' geometries repaired if they are invalid. */
async function compute(
  plan: QueryPlan,
  dataset: OpenDataset,
  resolved: Resolved | undefined,
): Promise<{ emitted: EmittedQuery; rows: unknown[][] }> {
  const { schema } = dataset;
  // The path to the rows, where the reader chooses it by the layer's statistics; either path reads the same rows.
  const access = dataset.access?.(plan, resolved?.filter);
  const emitted = emitQuery(dataset.emitter, plan, schema, resolved?.filter, access);
  try {
    return { emitted, rows: await run(plan, dataset, emitted, resolved) };
  } catch (err) {
    if (!(err instanceof GeometryTopologyError) || !resolved) throw err;
    const repaired = emitQuery(dataset.emitter, plan, schema, { ...resolved.filter, repair: true }, access);
    const rows = await run(plan, dataset, repaired, resolved).catch((again: unknown) => {
      // The features repaired, what still cannot be related is the query geometry.
      if (again instanceof GeometryTopologyError)
        throw invalidParameter("geometry", "The geometry cannot be related to this layer's features.");
      throw again;
    });
    return { emitted: repaired, rows };
  }
}

/** The rows as the answer gives them: a count, ids, an extent, features or statistics. */
function toAnswer(
  dataset: OpenDataset,
  plan: QueryPlan,
  emitted: EmittedQuery,
  rows: unknown[][],
  { srid, outSR, grid }: Frame,
): QueryAnswer {
  const { schema } = dataset;
  const columns = emitted.columns;
  switch (plan.output) {
    case "count":
      return { kind: "count", count: Number(rows[0]?.[0] ?? 0) };
    case "ids": {
      const joined = rows[0]?.[0];
      return {
        kind: "ids",
        objectIdFieldName: schema.objectIdField,
        ids: typeof joined === "string" ? idList(joined) : [],
      };
    }
    case "extent": {
      const row = rows[0] ?? [];
      const at = (name: string) => row[columns.findIndex((c) => c.role === name)];
      const corners = [at("xmin"), at("ymin"), at("xmax"), at("ymax")];
      const count = plan.withCount ? Number(at("count") ?? 0) : undefined;
      const known = corners.every((v) => typeof v === "number" && Number.isFinite(v));
      let bounds = known ? (corners as unknown as Bounds) : undefined;
      if (bounds && srid !== 0 && outSR !== srid) bounds = projectBounds(bounds, srid, outSR);
      return { kind: "extent", bounds, srid: outSR, ...(count !== undefined ? { count } : {}) };
    }
    case "features": {
      const more = rows.length > plan.pageSize;
      const page = more ? rows.slice(0, plan.pageSize) : rows;
      const geometryAt = columns.findIndex((c) => c.role === "geometry");
      // The fields' positions and names found once for the page, not per row.
      const at: number[] = [];
      const names: string[] = [];
      columns.forEach((c, i) => {
        if (c.role !== "field") return;
        at.push(i);
        names.push(c.name);
      });
      const features: FeatureRow[] = page.map((r) => {
        const attributes: Record<string, string | number | null> = {};
        for (let k = 0; k < at.length; k++) attributes[names[k] as string] = cell(r[at[k] as number]);
        if (geometryAt < 0) return { attributes };
        return { attributes, geometry: shapeGeometry(dataset, r[geometryAt], srid, outSR, plan, grid) };
      });
      return {
        kind: "features",
        schema,
        fields: plan.fields,
        features,
        exceededTransferLimit: more,
        ...(plan.returnGeometry && schema.geometry
          ? { geometry: { type: schema.geometry.type, srid: outSR, ...(grid ? { quantization: grid } : {}) } }
          : {}),
      };
    }
    case "statistics":
    case "distinct": {
      const more = rows.length > plan.pageSize;
      const page = more ? rows.slice(0, plan.pageSize) : rows;
      const features: FeatureRow[] = page.map((r) => {
        const attributes: Record<string, string | number | null> = {};
        columns.forEach((c, i) => {
          attributes[c.name] = cell(r[i]);
        });
        return { attributes };
      });
      const fields = columns.map((c) => ({
        name: c.name,
        type:
          c.role === "statistic"
            ? statisticType(plan, c.name, c.field?.type)
            : (c.field?.type ?? ("esriFieldTypeDouble" as const)),
        alias: c.name,
        nullable: true,
        column: c.name,
      }));
      return { kind: "features", schema, fields, features, exceededTransferLimit: more };
    }
  }
}

function statisticType(plan: QueryPlan, name: string, fieldType: string | undefined) {
  if (plan.output !== "statistics") return "esriFieldTypeDouble" as const;
  const s = plan.statistics.find((x) => x.name === name);
  if (s?.type === "count") return "esriFieldTypeInteger" as const;
  if (
    (s?.type === "min" || s?.type === "max") &&
    (fieldType === "esriFieldTypeString" || fieldType === "esriFieldTypeDate")
  )
    return fieldType;
  return "esriFieldTypeDouble" as const;
}

/**
 * The ids of a joined text (`1,-2,30`) as numbers, in one pass over its characters: no string per id. An id of more
 * than 15 digits is read by Number(), so one past 2^53 rounds as it always did.
 */
export function idList(joined: string): number[] {
  const ids: number[] = [];
  let start = 0;
  while (start < joined.length) {
    let end = joined.indexOf(",", start);
    if (end < 0) end = joined.length;
    const negative = joined.charCodeAt(start) === 45;
    let i = negative ? start + 1 : start;
    if (end - i > 15) ids.push(Number(joined.slice(start, end)));
    else {
      let n = 0;
      for (; i < end; i++) n = n * 10 + (joined.charCodeAt(i) - 48);
      ids.push(negative ? -n : n);
    }
    start = end + 1;
  }
  return ids;
}

/** A value of a row as attributes carry it: blobs are not answered, big integers become numbers. */
function cell(v: unknown): string | number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "number" || typeof v === "string") return v;
  if (typeof v === "bigint") return Number(v);
  return null;
}

/**
 * Every feature `params` select (their `where`, `outSR`, fields and geometry as a query takes them), page by page
 * in object id order, for what reads a whole layer (an export): each page is one query of at most `pageSize` rows
 * after the last id seen (keyset paging, so each page costs the same however deep it is), and only one page is
 * held at a time. The id condition is joined to the parsed `where` as a tree, never as text, so no `where` can
 * undo it.
 */
export async function* featurePages(
  params: ParamSource,
  format: string | undefined,
  dataset: OpenDataset,
  pageSize: number,
): AsyncGenerator<readonly FeatureRow[]> {
  const plan = await normalize(params, dataset);
  if (plan.output !== "features") throw new Error("featurePages reads features only");
  const oid = plan.fields[0];
  if (!oid) throw new Error(`layer ${dataset.schema.name}: no object id field`);
  let last: number | undefined;
  for (;;) {
    const after: Expr | undefined =
      last === undefined
        ? undefined
        : {
            kind: "compare",
            type: "boolean",
            op: ">",
            left: { kind: "field", type: "number", field: oid },
            right: { kind: "number", type: "number", value: last },
          };
    const where: Expr | undefined =
      after && plan.where ? { kind: "and", type: "boolean", parts: [plan.where, after] } : (after ?? plan.where);
    const page: FeaturesPlan = { ...plan, where, offset: 0, pageSize, orderBy: [{ field: oid, descending: false }] };
    const frame = await validate(page, format, dataset);
    const { emitted, rows } = await compute(page, dataset, frame.resolved);
    const answer = toAnswer(dataset, page, emitted, rows, frame);
    if (answer.kind !== "features") throw new Error("a features plan answered otherwise");
    if (answer.features.length > 0) yield answer.features;
    const id = answer.features.at(-1)?.attributes[oid.name];
    if (!answer.exceededTransferLimit) return;
    if (typeof id !== "number" || (last !== undefined && id <= last))
      throw new Error(`layer ${dataset.schema.name}: object ids do not increase`);
    last = id;
  }
}
