// `content/users/<u>/export`: a hosted feature layer's rows written back to a file (CSV, GeoJSON, a zipped shapefile,
// a GeoPackage) kept as a new file item of the caller's, so data given to mapgate can always be taken out again.
// Rows are read through the layer's own reader, as a query reads them (shared/features/query.ts featurePages), page
// by page in object id order; CSV, GeoJSON and shapefiles are written to a temporary file page by page, a GeoPackage
// (written in one transaction by shared/features/geopackage-writer.ts) from the rows of its layers. The file is kept
// in item files, then its item made with its bytes counted against the caller's quota in one transaction; a refused
// transaction removes the file again. Done within the request (a hosted layer is at most what one upload holds), so
// the job ArcGIS clients poll for is complete when the answer comes.
import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Geometry } from "geojson";
import yazl from "yazl";
import { config } from "#shared/config.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { epsgWkt, hasCrs } from "#shared/features/geometry/projection.ts";
import {
  type CellValue,
  type ColumnSpec,
  type GeoPackageLayer,
  type GeoPackageRow,
  type GeometryTypeName,
  writeGeoPackage,
} from "#shared/features/geopackage-writer.ts";
import { parseSpatialReference } from "#shared/features/plan.ts";
import { featurePages } from "#shared/features/query.ts";
import type { FeatureRow, Field } from "#shared/features/schema.ts";
import type { OpenDataset } from "#shared/features/dataset.ts";
import { layerCount, openDataset, servesLayer } from "#shared/features/sources.ts";
import { dbfColumns, dbfProblem, SHAPE_TYPES, ShapefileWriter } from "#shared/hosted/shapefile-writer.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import { logger } from "#shared/log.ts";
import { StorageError } from "#shared/storage/storage.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import { type Item, putFileItem, StorageQuotaError } from "#shared/stores/items.ts";
import { getService, type Service } from "#shared/stores/services.ts";
import { FILE_ITEM_TYPES, itemFileName, quotaExceeded } from "#shared/uploads.ts";

export const WHAT = "Unable to export item.";

/** The rows one query of an export reads: bounded memory, few round trips. */
const PAGE_SIZE = 2000;

interface Format {
  /** The name ArcGIS gives the format (answered as exportFormat). */
  readonly name: string;
  /** The type of the item made (FILE_ITEM_TYPES). */
  readonly itemType: string;
  readonly extension: string;
}

/** The formats mapgate exports to, by `exportFormat` in any case (clients send `shapefile`, `geoPackage`, `CSV`). */
export const EXPORT_FORMATS: Readonly<Record<string, Format>> = {
  csv: { name: "CSV", itemType: "CSV", extension: ".csv" },
  geojson: { name: "GeoJson", itemType: "GeoJson", extension: ".geojson" },
  shapefile: { name: "Shapefile", itemType: "Shapefile", extension: ".zip" },
  geopackage: { name: "GeoPackage", itemType: "GeoPackage", extension: ".gpkg" },
};
/** What ArcGIS exports to that mapgate does not: said so, rather than "unknown". */
const NOT_YET = new Set([
  "file geodatabase",
  "feature collection",
  "kml",
  "excel",
  "scene package",
  "vector tile package",
]);

export function exportFormatOf(raw: string | undefined): Format {
  const key = (raw ?? "").trim().toLowerCase();
  const format = EXPORT_FORMATS[key];
  if (format) return format;
  const names = Object.values(EXPORT_FORMATS).map((f) => f.name);
  if (NOT_YET.has(key))
    throw badRequest(WHAT, [`Exporting to ${raw?.trim()} is not available: mapgate exports to ${names.join(", ")}.`]);
  throw badRequest(WHAT, [
    raw === undefined || key === ""
      ? `'exportFormat' must be specified: one of ${names.join(", ")}.`
      : `'exportFormat' must be one of ${names.join(", ")} (got '${raw.slice(0, 64)}').`,
  ]);
}

/** One layer to export, as `exportParameters.layers` names it. */
export interface LayerRequest {
  readonly id: number;
  readonly where: string | undefined;
  readonly includeGeometry: boolean;
  readonly xColumnName: string | undefined;
  readonly yColumnName: string | undefined;
}

export interface ExportParameters {
  /** Absent: every layer of the service, as ArcGIS does when exportParameters is left out. */
  readonly layers: readonly LayerRequest[] | undefined;
  readonly targetSR: number | undefined;
}

const COLUMN_NAME = /^[A-Za-z_][A-Za-z0-9_ ]{0,63}$/;

/** `exportParameters`: `{layers: [{id, where?, includeGeometry?, xColumnName?, yColumnName?}], targetSR?}`. */
export function exportParametersOf(value: Record<string, unknown>): ExportParameters {
  const problems: string[] = [];
  let layers: LayerRequest[] | undefined;
  if (value.layers !== undefined) {
    if (!Array.isArray(value.layers) || value.layers.length > 64) {
      problems.push("'exportParameters.layers' must be an array of at most 64 layers ({\"id\": 0, …}).");
    } else {
      layers = [];
      value.layers.forEach((raw: unknown, i) => {
        const at = `exportParameters.layers[${i}]`;
        if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
          problems.push(`'${at}' must be an object with the layer's 'id'.`);
          return;
        }
        const l = raw as Record<string, unknown>;
        const id = typeof l.id === "string" && /^\d{1,9}$/.test(l.id) ? Number(l.id) : l.id;
        if (typeof id !== "number" || !Number.isInteger(id) || id < 0) {
          problems.push(`'${at}.id' must be a layer id (a whole number, 0 or more).`);
          return;
        }
        if (l.where !== undefined && typeof l.where !== "string") problems.push(`'${at}.where' must be text.`);
        if (l.includeGeometry !== undefined && typeof l.includeGeometry !== "boolean")
          problems.push(`'${at}.includeGeometry' must be true or false.`);
        for (const key of ["xColumnName", "yColumnName"] as const) {
          const name = l[key];
          if (name !== undefined && (typeof name !== "string" || !COLUMN_NAME.test(name)))
            problems.push(
              `'${at}.${key}' must be 1–64 letters, digits, underscores or spaces, not starting with a digit.`,
            );
        }
        if (layers?.some((other) => other.id === id)) problems.push(`Layer ${id} is named twice in '${at}'.`);
        layers?.push({
          id,
          where: typeof l.where === "string" && l.where.trim() !== "" ? l.where : undefined,
          includeGeometry: l.includeGeometry !== false,
          xColumnName: typeof l.xColumnName === "string" ? l.xColumnName : undefined,
          yColumnName: typeof l.yColumnName === "string" ? l.yColumnName : undefined,
        });
      });
      if (layers.length === 0 && problems.length === 0) layers = undefined;
    }
  }
  let targetSR: number | undefined;
  const sr = value.targetSR;
  if (sr !== undefined && sr !== null && sr !== "") {
    try {
      targetSR =
        typeof sr === "number"
          ? parseSpatialReference(String(sr), "targetSR")
          : parseSpatialReference(sr as string | Record<string, unknown>, "targetSR");
    } catch {
      problems.push("'exportParameters.targetSR' must be a spatial reference ({\"wkid\": 4326} or 4326).");
    }
    if (targetSR !== undefined && !hasCrs(targetSR))
      problems.push(`'exportParameters.targetSR': spatial reference ${targetSR} is not supported.`);
  }
  if (problems.length > 0) throw badRequest(WHAT, problems);
  return { layers, targetSR };
}

/** A layer of the service, open, with what the request asks of it. */
interface OpenLayer {
  readonly id: number;
  /** The layer's name (its table's), which names its file or table in the export. */
  readonly name: string;
  readonly dataset: OpenDataset;
  readonly request: LayerRequest;
}

/**
 * The layers of a hosted service asked for (all it serves when none is named), each opened once: by the ids its
 * source serves (a service of several layers, or one whose definition deleted some, skips those ids).
 */
async function openLayers(service: Service, asked: readonly LayerRequest[] | undefined): Promise<OpenLayer[]> {
  const source = service.source;
  if (!source) throw new Error(`hosted service ${service.itemId} has no source`);
  const ids = Array.from({ length: layerCount(source) }, (_, i) => i).filter((i) => servesLayer(source, i));
  if (ids.length === 0) throw badRequest(WHAT, ["The service has no layers to export yet."]);
  const requests = asked ?? ids.map((id) => ({ id, where: undefined, includeGeometry: true }) as LayerRequest);
  const missing = requests.filter((r) => !ids.includes(r.id));
  if (missing.length > 0)
    throw badRequest(
      WHAT,
      missing.map((r) => `The service has no layer ${r.id}: its layers are ${ids.join(", ")}.`),
    );
  const datasets = new Map<number, OpenDataset>();
  try {
    for (const r of requests) if (!datasets.has(r.id)) datasets.set(r.id, await openDataset(source, r.id));
  } catch (err) {
    if (err instanceof DatasetError || err instanceof StorageError) {
      logger.warn("hosted layer unavailable for export", { itemId: service.itemId, reason: err.message });
      throw new ApiError(500, WHAT, ["The layer's data is unavailable."]);
    }
    throw err;
  }
  // A service of one layer names it as the service; one of several names each layer as its table.
  return requests.map((request) => {
    const dataset = datasets.get(request.id) as OpenDataset;
    return { id: request.id, name: source.layers ? dataset.schema.name : service.name, dataset, request };
  });
}

/** The query parameters that read a layer's rows for export. */
function queryParams(layer: OpenLayer, outSR: number | undefined) {
  const params: Record<string, string> = { outFields: "*", returnGeometry: String(layer.request.includeGeometry) };
  if (layer.request.where !== undefined) params.where = layer.request.where;
  if (outSR !== undefined) params.outSR = String(outSR);
  return { get: (name: string) => params[name] };
}

/** Reads a layer page by page; a `where` the layer refuses is answered naming the layer. */
async function* pagesOf(layer: OpenLayer, format: string | undefined, outSR: number | undefined) {
  try {
    yield* featurePages(queryParams(layer, outSR), format, layer.dataset, PAGE_SIZE);
  } catch (err) {
    if (err instanceof ApiError && err.code === 400)
      throw badRequest(WHAT, [`Layer ${layer.id}: ${err.details.join(": ") || err.message}`]);
    if (err instanceof DatasetError || err instanceof StorageError) {
      logger.warn("hosted layer unreadable during export", { layer: layer.name, reason: err.message });
      throw new ApiError(500, WHAT, ["The layer's data is unavailable."]);
    }
    throw err;
  }
}

const isDate = (f: Field) => f.type === "esriFieldTypeDate" || f.type === "esriFieldTypeDateOnly";
const isoDate = (value: string | number | null | undefined) =>
  typeof value === "number" && Number.isFinite(value) ? new Date(value).toISOString() : (value ?? null);

/** Writes text to a stream, waiting when it asks to (so a page never piles up behind a slow disk). */
async function put(out: WriteStream, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

async function finish(out: WriteStream): Promise<void> {
  out.end();
  await once(out, "finish");
}

/**
 * A CSV cell. Text that a spreadsheet would take for a formula (beginning with `=`, `+`, `-`, `@`, a tab or a
 * carriage return) starts with an apostrophe, which spreadsheets show as text and do not display; numbers are
 * written as numbers (a negative one is no formula). Cells holding the delimiter, a quote or a line break are
 * quoted, quotes doubled (RFC 4180).
 */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A coordinate column's name: the one asked (refused when a field has it), else x/y, numbered when taken. */
function coordinateName(asked: string | undefined, fallback: string, fields: readonly Field[]): string {
  const taken = (n: string) => fields.some((f) => f.name.toLowerCase() === n.toLowerCase());
  if (asked !== undefined) {
    if (taken(asked))
      throw badRequest(WHAT, [`The layer has a field named '${asked}': choose another coordinate column name.`]);
    return asked;
  }
  let name = fallback;
  for (let n = 1; taken(name); n++) name = `${fallback}_${n}`;
  return name;
}

async function writeCsv(layer: OpenLayer, path: string, outSR: number | undefined): Promise<void> {
  const { schema } = layer.dataset;
  const fields = schema.fields;
  // Points only: a line or polygon has no one x and y, so its rows carry their attributes alone (as ArcGIS does).
  const xy = layer.request.includeGeometry && schema.geometry?.type === "esriGeometryPoint";
  const x = xy ? coordinateName(layer.request.xColumnName, "x", fields) : "";
  const y = xy ? coordinateName(layer.request.yColumnName, "y", fields) : "";
  const out = createWriteStream(path, { flags: "wx", mode: 0o600 });
  try {
    await put(out, [...(xy ? [x, y] : []), ...fields.map((f) => f.name)].map(csvCell).join(",") + "\r\n");
    for await (const page of pagesOf(layer, undefined, outSR)) {
      const lines = page.map((row) => {
        const cells = fields.map((f) => {
          const v = row.attributes[f.name];
          return csvCell(isDate(f) ? isoDate(v) : v);
        });
        if (!xy) return cells.join(",");
        const g = row.geometry;
        const [px, py] = g?.type === "Point" ? g.coordinates : [];
        return [csvCell(px ?? null), csvCell(py ?? null), ...cells].join(",");
      });
      await put(out, lines.join("\r\n") + "\r\n");
    }
    await finish(out);
  } finally {
    out.destroy();
  }
}

async function writeGeoJson(layer: OpenLayer, path: string): Promise<void> {
  const { schema } = layer.dataset;
  const out = createWriteStream(path, { flags: "wx", mode: 0o600 });
  let first = true;
  try {
    await put(out, '{"type":"FeatureCollection","features":[');
    for await (const page of pagesOf(layer, "geojson", 4326)) {
      const features = page.map((row) => {
        const properties: Record<string, string | number | null> = {};
        for (const f of schema.fields) {
          const v = row.attributes[f.name] ?? null;
          properties[f.name] = isDate(f) ? isoDate(v) : v;
        }
        return JSON.stringify({
          type: "Feature",
          id: row.attributes[schema.objectIdField] ?? null,
          geometry: row.geometry ?? null,
          properties,
        });
      });
      await put(out, (first ? "" : ",") + features.join(","));
      first = false;
    }
    await put(out, "]}");
    await finish(out);
  } finally {
    out.destroy();
  }
}

/** Zips files as they lie on disk (streamed, never read whole), under the names given. */
async function zipFiles(files: readonly { path: string; name: string }[], target: string): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const f of files) zip.addFile(f.path, f.name, { compress: true });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(target, { flags: "wx", mode: 0o600 }));
}

async function writeShapefiles(
  layers: readonly OpenLayer[],
  dir: string,
  path: string,
  outSR: number | undefined,
): Promise<void> {
  const files: { path: string; name: string }[] = [];
  for (const layer of layers) {
    const { schema } = layer.dataset;
    const columns = dbfColumns(schema.fields);
    const problem = dbfProblem(columns);
    if (problem) throw badRequest(WHAT, [`Layer ${layer.id}: ${problem}`]);
    const srid = outSR ?? schema.geometry?.srid ?? 0;
    const withGeometry = layer.request.includeGeometry && schema.geometry !== undefined;
    const shapeType = withGeometry && schema.geometry ? SHAPE_TYPES[schema.geometry.type] : 0;
    const prj = withGeometry && srid !== 0 ? epsgWkt(srid) : undefined;
    if (withGeometry && srid !== 0 && !prj)
      throw badRequest(WHAT, [`Layer ${layer.id}: no .prj is known for spatial reference ${srid}: give a targetSR.`]);
    const base = join(dir, `layer${layer.id}`);
    const parts = { shp: `${base}.shp`, shx: `${base}.shx`, dbf: `${base}.dbf` };
    const writer = await ShapefileWriter.create(parts, columns, shapeType);
    try {
      for await (const page of pagesOf(layer, undefined, outSR)) await writer.add(page);
      await writer.close();
    } catch (err) {
      await writer.abandon();
      throw err;
    }
    await writeFile(`${base}.cpg`, "UTF-8");
    const name = layers.length > 1 ? `${layer.name}_${layer.id}` : layer.name;
    files.push(
      { path: parts.shp, name: `${name}.shp` },
      { path: parts.shx, name: `${name}.shx` },
      { path: parts.dbf, name: `${name}.dbf` },
      { path: `${base}.cpg`, name: `${name}.cpg` },
    );
    if (prj) {
      await writeFile(`${base}.prj`, prj);
      files.push({ path: `${base}.prj`, name: `${name}.prj` });
    }
  }
  await zipFiles(files, path);
}

const GPKG_GEOMETRY: Readonly<Record<string, GeometryTypeName>> = {
  esriGeometryPoint: "POINT",
  esriGeometryMultipoint: "MULTIPOINT",
  esriGeometryPolyline: "MULTILINESTRING",
  esriGeometryPolygon: "MULTIPOLYGON",
};

function gpkgColumn(f: Field): ColumnSpec {
  switch (f.type) {
    case "esriFieldTypeSmallInteger":
    case "esriFieldTypeInteger":
    case "esriFieldTypeBigInteger":
      return { name: f.name, type: "INTEGER" };
    case "esriFieldTypeSingle":
    case "esriFieldTypeDouble":
      return { name: f.name, type: "DOUBLE" };
    case "esriFieldTypeDate":
      return { name: f.name, type: "DATETIME" };
    case "esriFieldTypeDateOnly":
      return { name: f.name, type: "DATE" };
    default:
      return { name: f.name, type: "TEXT", ...(f.length ? { maxLength: f.length } : {}) };
  }
}

/** A layer's geometry type as a GeoPackage declares it: single points stay points, the rest their multi type. */
function gpkgGeometry(g: Geometry | null | undefined): Geometry | null {
  if (!g) return null;
  if (g.type === "LineString") return { type: "MultiLineString", coordinates: [g.coordinates] };
  if (g.type === "Polygon") return { type: "MultiPolygon", coordinates: [g.coordinates] };
  return g;
}

async function writeGpkg(layers: readonly OpenLayer[], path: string, srsId: 4326 | 3857): Promise<void> {
  const tables: GeoPackageLayer[] = [];
  const names = new Set<string>();
  for (const layer of layers) {
    const { schema } = layer.dataset;
    const withGeometry = layer.request.includeGeometry && schema.geometry !== undefined;
    const oid = schema.objectIdField;
    const fields = schema.fields.filter((f) => f.name !== oid);
    // A GeoPackage is written in one transaction from its rows: they are gathered first (the hosted layer is at most
    // what one upload held), a page's geometry kept as the writer's input.
    const rows: GeoPackageRow[] = [];
    for await (const page of pagesOf(layer, undefined, srsId)) {
      for (const row of page as FeatureRow[]) {
        const values: Record<string, CellValue> = {};
        for (const f of fields) {
          const v = row.attributes[f.name] ?? null;
          values[f.name] = isDate(f) && typeof v === "number" ? new Date(v) : v;
        }
        const id = row.attributes[oid];
        rows.push({
          ...(typeof id === "number" ? { id } : {}),
          values,
          ...(withGeometry ? { geometry: gpkgGeometry(row.geometry) } : {}),
        });
      }
    }
    let name = layer.name;
    for (let n = 1; names.has(name.toLowerCase()); n++) name = `${layer.name}_${n}`;
    names.add(name.toLowerCase());
    const geometryType = withGeometry && schema.geometry ? GPKG_GEOMETRY[schema.geometry.type] : undefined;
    tables.push({
      name,
      columns: fields.map(gpkgColumn),
      rows,
      ...(geometryType ? { geometryType, srsId } : {}),
    });
  }
  writeGeoPackage(path, tables);
}

export interface ExportRequest {
  readonly source: Item;
  readonly format: Format;
  readonly parameters: ExportParameters;
  readonly owner: string;
  readonly title: string | undefined;
  readonly tags: readonly string[];
}

/** Exports a hosted feature service item to a file item of `owner`'s; answers as ArcGIS's export does. */
export async function exportHosted(p: ExportRequest): Promise<Record<string, unknown>> {
  const ref = p.source.service;
  if (p.source.type !== "Feature Service" || p.source.hostedData === undefined || !ref)
    throw badRequest(WHAT, ["Only hosted feature layers are exported: the item is not one."]);
  const service = await getService(ref.serverId, ref.folder, ref.name);
  if (!service || service.itemId !== p.source.itemId) throw new Error(`the service of item ${p.source.itemId} is gone`);
  const layers = await openLayers(service, p.parameters.layers);
  const { format } = p;
  if (layers.length > 1 && (format.name === "CSV" || format.name === "GeoJson"))
    throw badRequest(WHAT, [
      `A ${format.name} file holds one layer: name one in 'exportParameters.layers', or export to Shapefile or GeoPackage.`,
    ]);
  const targetSR = p.parameters.targetSR;
  if (format.name === "GeoPackage" && targetSR !== undefined && targetSR !== 4326 && targetSR !== 3857)
    throw badRequest(WHAT, [
      "A GeoPackage is exported in WGS 84 (4326) or Web Mercator (3857): 'targetSR' must be one.",
    ]);
  const title = p.title || p.source.title;
  const fileName = itemFileName(`${title.replace(/\.[^.]*$/, "")}${format.extension}`);
  const spec = FILE_ITEM_TYPES[format.itemType];
  if (!spec) throw new Error(`no file item type ${format.itemType}`);

  const dir = await mkdtemp(join(tmpdir(), "mapgate-export-"));
  const exportItemId = newItemId();
  const files = itemFiles();
  try {
    const path = join(dir, `export${format.extension}`);
    const [layer] = layers;
    if (!layer) throw new Error("no layer to export");
    if (format.name === "CSV") await writeCsv(layer, path, targetSR);
    else if (format.name === "GeoJson") await writeGeoJson(layer, path);
    else if (format.name === "Shapefile") await writeShapefiles(layers, dir, path, targetSR);
    else await writeGpkg(layers, path, targetSR === 3857 ? 3857 : 4326);
    const size = await files.putFile(exportItemId, path, spec.contentType);
    const now = Date.now();
    const item: Item & { file: NonNullable<Item["file"]> } = {
      itemId: exportItemId,
      portalId: p.source.portalId,
      owner: p.owner,
      title,
      type: format.itemType,
      typeKeywords: [],
      url: "",
      tags: p.tags.length > 0 ? p.tags : p.source.tags,
      description: "",
      snippet: "",
      access: "private",
      created: now,
      modified: now,
      ...(p.source.extent ? { extent: p.source.extent } : {}),
      file: { name: fileName, size, contentType: spec.contentType },
    };
    try {
      await putFileItem(item, config().storageQuota);
    } catch (err) {
      // The refusal is what the caller hears; a file left by a failed removal is only an orphan (logged).
      await files
        .remove(exportItemId)
        .catch((e: unknown) => logger.warn("item file not removed", { itemId: exportItemId, error: String(e) }));
      if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
      throw err;
    }
    return {
      type: format.itemType,
      size,
      // Done within this request: the status this id is asked with answers "completed".
      jobId: newItemId(),
      exportItemId,
      serviceItemId: p.source.itemId,
      exportFormat: format.name,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
