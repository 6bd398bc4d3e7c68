// Changing a hosted layer's data without changing its item, so that maps and apps keep their item ids and URLs:
// a layer's `append` (rows of an uploaded file added, or matched by a key field and updated: ArcGIS's Append
// (Feature Service/Layer) from an item) and publishing a file again over its service (`publish` with
// overwrite=true). Both read the file as publishing does (sourceTables: the one place this code reads a file), check
// what it holds against the layer as it is served, and have the hosted store (shared/hosted/store.ts) make the change
// whole or not at all, under the service's lock (shared/hosted/define.ts), the data's new size counted against its
// owner's quota and the item's extent moved in the transaction that keeps it.
import { newGlobalId, TRACKING, trackedRows, trackingColumns } from "#shared/hosted/tracking.ts";
import type { Geometry } from "geojson";
import type { CellValue, Extent, GeometryTypeName, GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import { type Field, type LayerSchema, systemFields } from "#shared/features/schema.ts";
import { openDataset } from "#shared/features/sources.ts";
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest, forbidden } from "#shared/errors.ts";
import { boolParam } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { itemId as newJobId } from "#shared/ids.ts";
import { logger } from "#shared/log.ts";
import { HOSTED_FOLDER, restServiceUrl } from "#shared/publishing.ts";
import { type Locked, ownedHostedService, underServiceLock } from "#shared/hosted/define.ts";
import {
  fileTypeOf,
  hostingServer,
  parametersOf,
  type PublishRequest,
  readTables,
  serviceNameFrom,
  textLength,
} from "#shared/hosted/publish.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { AmbiguousKeyError, keyOf } from "#shared/hosted/append-keys.ts";
import { type AppendRow, type HostedLayer, type LayerAppend } from "#shared/hosted/store.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import { type FieldKind, fitsLayer, MAX_FIELDS, type NamedTable, type Table } from "#shared/hosted/tables.ts";
import { getItem, type Item } from "#shared/stores/items.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import { readCatalog } from "#shared/stores/services.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";

const WHAT = "Unable to append data.";
/** The most problems one answer lists (a file of a million bad values says the first ones). */
const MAX_PROBLEMS = 20;

/** The formats append reads, by `appendUploadFormat` (ArcGIS's spelling, any case), as publishing's `filetype`. */
const APPEND_FORMATS: Readonly<Record<string, string>> = {
  csv: "csv",
  geojson: "geojson",
  shapefile: "shapefile",
  geopackage: "geopackage",
};
/** Formats ArcGIS appends from that mapgate does not read yet: said so, rather than "invalid". */
const NOT_YET_FORMATS = new Set([
  "filegdb",
  "excel",
  "featurecollection",
  "featureservice",
  "pbf",
  "sqlite",
  "geoparquet",
]);

const say = (v: unknown) => JSON.stringify(typeof v === "string" ? v.slice(0, 64) : v)?.slice(0, 80) ?? "undefined";

/**
 * The tables of an uploaded file, read as publishing reads it (streamed; temporary files live while `use` runs): the
 * one place this module reads a file.
 */
async function sourceTables<T>(
  item: Item,
  filetype: string,
  parameters: Record<string, unknown>,
  what: string,
  use: (tables: NamedTable[]) => Promise<T>,
): Promise<T> {
  const { itemFileSource } = await import("#shared/hosted/file-source.ts");
  return readTables(await itemFileSource(item.itemId), filetype, parameters, what, use);
}

/**
 * The most values (rows × fields) an append reads into memory: every row is checked, converted and its key matched
 * before any is written (an overwrite streams, as publishing does).
 */
export const MAX_APPEND_VALUES = 3_000_000;

/** A table whose rows are held: an append's, checked whole before anything is written. */
type HeldTable = Omit<Table, "rows"> & { readonly rows: readonly GeoPackageRow[] };

async function held(table: Table): Promise<HeldTable> {
  if (table.count * Math.max(1, table.fields.length) > MAX_APPEND_VALUES)
    throw badRequest(WHAT, [
      `The file has ${table.count} rows of ${table.fields.length} fields: an append takes at most ${MAX_APPEND_VALUES.toLocaleString("en")} values (publish it as a layer of its own, or append it in parts).`,
    ]);
  const rows: GeoPackageRow[] = [];
  for await (const row of table.rows()) rows.push(row);
  return { ...table, rows };
}

/** The multi-part type of a geometry type's kind: what kind of shapes a layer or file holds. */
const kindOf = (t: GeometryTypeName | undefined) => (t ? t.replace(/^MULTI/, "") : "NONE");
const ESRI_KINDS: Readonly<Record<string, string>> = {
  esriGeometryPoint: "POINT",
  esriGeometryMultipoint: "POINT",
  esriGeometryPolyline: "LINESTRING",
  esriGeometryPolygon: "POLYGON",
};
/** The GeoPackage type a served layer's geometry is kept as (hosted layers keep multi types but for points). */
const DECLARED: Readonly<Record<string, GeometryTypeName>> = {
  esriGeometryPoint: "POINT",
  esriGeometryMultipoint: "MULTIPOINT",
  esriGeometryPolyline: "MULTILINESTRING",
  esriGeometryPolygon: "MULTIPOLYGON",
};
const KIND_WORDS: Readonly<Record<string, string>> = {
  POINT: "points",
  LINESTRING: "lines",
  POLYGON: "polygons",
  NONE: "no geometry (a table)",
};

// --- values ------------------------------------------------------------------------------------------------------

const INTEGER_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  esriFieldTypeSmallInteger: [-32768, 32767],
  esriFieldTypeInteger: [-2147483648, 2147483647],
};
/** What a field's values are, as the stores bind them. */
const KINDS: Readonly<Record<string, FieldKind>> = {
  esriFieldTypeSmallInteger: "integer",
  esriFieldTypeInteger: "integer",
  esriFieldTypeDouble: "double",
  esriFieldTypeSingle: "double",
  esriFieldTypeDate: "date",
  esriFieldTypeString: "string",
};
const DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** A value as the layer's field keeps it; a string saying why not when it does not fit. */
function fit(value: CellValue, field: Field): CellValue | { readonly wrong: string } {
  if (value === null || value === undefined || value === "") return null;
  const type = field.type;
  const range = INTEGER_RANGES[type];
  if (range || type === "esriFieldTypeDouble" || type === "esriFieldTypeSingle") {
    const n =
      typeof value === "number"
        ? value
        : typeof value === "string" && /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?\s*$/.test(value)
          ? Number(value)
          : Number.NaN;
    if (!Number.isFinite(n)) return { wrong: "is not a number" };
    if (range) {
      if (!Number.isInteger(n)) return { wrong: "is not a whole number" };
      if (n < range[0] || n > range[1]) return { wrong: `is outside ${range[0]}…${range[1]}` };
    }
    return n;
  }
  if (type === "esriFieldTypeDate") {
    if (value instanceof Date) return value;
    if (typeof value === "number" && Number.isFinite(value)) return new Date(value);
    const text = String(value).trim();
    const iso = text.replace(" ", "T");
    const ms = DATE.test(text)
      ? Date.parse(/T/.test(iso) && !/(Z|[+-]\d{2}:?\d{2})$/.test(iso) ? `${iso}Z` : iso)
      : NaN;
    return Number.isNaN(ms)
      ? { wrong: "is not a date (ISO 8601, as 2024-05-31 or 2024-05-31T10:00:00Z)" }
      : new Date(ms);
  }
  if (type === "esriFieldTypeString") {
    const text = value instanceof Date ? value.toISOString() : typeof value === "string" ? value : String(value);
    if (field.length !== undefined && text.length > field.length)
      return { wrong: `is longer than the field's ${field.length} characters` };
    return text;
  }
  return { wrong: `cannot be written to a field of type ${type}` };
}

// --- append ------------------------------------------------------------------------------------------------------

interface AppendInput {
  readonly itemId: string;
  readonly format: string | undefined;
  readonly sourceTable: string | undefined;
  readonly sourceInfo: Record<string, unknown>;
  readonly upsert: boolean;
  readonly matchingField: string | undefined;
  readonly skipInserts: boolean;
  readonly skipUpdates: boolean;
  readonly updateGeometry: boolean;
  readonly appendFields: readonly string[] | undefined;
  readonly fieldMappings: readonly { readonly name: string; readonly source: string }[];
  readonly async: boolean;
}

/** A JSON list parameter (appendFields, fieldMappings), bounded; undefined when absent. */
function listOf(raw: string | undefined, name: string, problems: string[]): unknown[] | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  if (raw.length > 256 * 1024) {
    problems.push(`'${name}' is longer than 256 KB.`);
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    problems.push(`'${name}' must be a JSON list.`);
    return undefined;
  }
  if (!Array.isArray(value) || value.length > MAX_FIELDS) {
    problems.push(`'${name}' must be a JSON list of at most ${MAX_FIELDS} entries.`);
    return undefined;
  }
  return value;
}

/** The parameters of an append, each checked (every problem said at once). */
function appendInput(req: RestRequest): AppendInput {
  const p = req.params;
  const problems: string[] = [];
  if (p.caseless("appendUploadId"))
    problems.push("'appendUploadId' is not taken here: upload the file as an item (addItem) and give 'appendItemId'.");
  if (p.caseless("edits"))
    problems.push("'edits' is not taken here: give the rows as an uploaded file ('appendItemId').");
  if (p.caseless("layerMappings") || p.caseless("appendSourceFilter"))
    problems.push("'layerMappings' and 'appendSourceFilter' are not taken here: append to one layer, the whole file.");
  const itemId = (p.caseless("appendItemId") ?? p.caseless("sourceItemId") ?? "").trim();
  if (itemId === "") problems.push("'appendItemId' must be specified (the uploaded file's item).");
  const rawFormat = p.caseless("appendUploadFormat")?.trim();
  let format: string | undefined;
  if (rawFormat) {
    format = APPEND_FORMATS[rawFormat.toLowerCase()];
    if (!format)
      problems.push(
        NOT_YET_FORMATS.has(rawFormat.toLowerCase())
          ? `Appending from ${rawFormat.slice(0, 32)} is not available yet: mapgate appends from csv, geojson, shapefile and geoPackage files.`
          : `'appendUploadFormat' must be one of csv, geojson, shapefile, geoPackage (got ${say(rawFormat)}).`,
      );
  }
  const flag = (name: string, fallback: boolean) => boolParam(p.caseless(name), name, problems) ?? fallback;
  const upsert = flag("upsert", false);
  const skipInserts = flag("skipInserts", false);
  const skipUpdates = flag("skipUpdates", false);
  const updateGeometry = flag("updateGeometry", true);
  // Every append here is whole or nothing: rollbackOnFailure=false is taken and changes nothing of that.
  flag("rollbackOnFailure", true);
  const isAsync = flag("async", false);
  if (flag("useGlobalIds", false))
    problems.push("Hosted layers here have no GlobalID field: useGlobalIds must be false.");
  const matchingField = p.caseless("upsertMatchingField")?.trim() || undefined;
  if (upsert && !matchingField)
    problems.push("With upsert=true, 'upsertMatchingField' must name the layer's field whose values match rows.");
  if (!upsert && (skipInserts || skipUpdates))
    problems.push("'skipInserts' and 'skipUpdates' apply to an upsert (upsert=true).");
  if (skipInserts && skipUpdates) problems.push("'skipInserts' and 'skipUpdates' together leave nothing to append.");
  const fields = listOf(p.caseless("appendFields"), "appendFields", problems);
  if (fields && !fields.every((f) => typeof f === "string" && f !== ""))
    problems.push("'appendFields' must be a list of the layer's field names.");
  const mappings = listOf(p.caseless("fieldMappings"), "fieldMappings", problems) ?? [];
  const fieldMappings: { name: string; source: string }[] = [];
  for (const m of mappings) {
    const ok =
      typeof m === "object" &&
      m !== null &&
      typeof (m as { name?: unknown }).name === "string" &&
      typeof (m as { source?: unknown }).source === "string";
    if (ok) fieldMappings.push({ name: (m as { name: string }).name, source: (m as { source: string }).source });
    else
      problems.push(
        `Each of 'fieldMappings' must be {"name": <the layer's field>, "source": <the file's field>} (got ${say(m)}).`,
      );
  }
  const sourceInfo = parametersOf(p.caseless("appendSourceInfo"), "appendSourceInfo", WHAT);
  if (problems.length > 0) throw badRequest(WHAT, problems);
  return {
    itemId,
    format,
    sourceTable: p.caseless("sourceTableName")?.trim() || undefined,
    sourceInfo,
    upsert,
    matchingField,
    skipInserts,
    skipUpdates,
    updateGeometry,
    appendFields: fields as string[] | undefined,
    fieldMappings,
    async: isAsync,
  };
}

/** The table of the file to append: the one named by sourceTableName, or the file's only one. */
function chosenTable(tables: readonly NamedTable[], wanted: string | undefined): Table {
  if (wanted !== undefined) {
    const lower = wanted.toLowerCase();
    const found = tables.find((t) => t.name.toLowerCase() === lower);
    if (found) return found.table;
    if (tables.length === 1 && tables[0]?.name === "") return tables[0].table;
    throw badRequest(WHAT, [
      `The file has no table '${wanted.slice(0, 64)}' (it has ${tables.map((t) => `'${t.name.slice(0, 64)}'`).join(", ")}).`,
    ]);
  }
  const [only, ...more] = tables;
  if (!only) throw badRequest(WHAT, ["The file holds no table to append."]);
  if (more.length > 0)
    throw badRequest(WHAT, [
      `The file has ${tables.length} tables: name the one to append in 'sourceTableName' (${tables
        .slice(0, 10)
        .map((t) => `'${t.name.slice(0, 64)}'`)
        .join(", ")}).`,
    ]);
  return only.table;
}

/** How the file's fields reach the layer's: by name (case-insensitively), or as fieldMappings say. */
function mappingOf(schema: LayerSchema, table: Pick<Table, "fields">, input: AppendInput) {
  const problems: string[] = [];
  const layerField = (name: string) => schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
  const writable = (f: Field | undefined) => f !== undefined && f.type !== "esriFieldTypeOID";
  const sourceField = (name: string) =>
    table.fields.find((f) => f.name.toLowerCase() === name.toLowerCase()) ??
    table.fields.find((f) => f.alias.toLowerCase() === name.toLowerCase());
  // Layer field name (lower case) → the file's field name.
  const from = new Map<string, { field: Field; source: string }>();
  for (const f of table.fields) {
    const target = layerField(f.name);
    // A file's field the layer lacks is left out, as ArcGIS leaves it.
    if (target && writable(target)) from.set(target.name.toLowerCase(), { field: target, source: f.name });
  }
  for (const m of input.fieldMappings) {
    const target = layerField(m.name);
    const source = sourceField(m.source);
    if (!writable(target)) problems.push(`fieldMappings: the layer has no field '${m.name.slice(0, 64)}' to write.`);
    if (!source) problems.push(`fieldMappings: the file has no field '${m.source.slice(0, 64)}'.`);
    if (target && writable(target) && source)
      from.set(target.name.toLowerCase(), { field: target, source: source.name });
  }
  let written = [...from.values()];
  if (input.appendFields) {
    const named = new Set<string>();
    for (const name of input.appendFields) {
      const target = layerField(name);
      if (!target) problems.push(`appendFields: the layer has no field '${name.slice(0, 64)}'.`);
      else if (target.type !== "esriFieldTypeOID") named.add(target.name.toLowerCase());
    }
    written = written.filter((w) => named.has(w.field.name.toLowerCase()));
  }
  let key: { field: Field; source: string } | undefined;
  if (input.matchingField !== undefined) {
    const target = layerField(input.matchingField);
    if (!target) problems.push(`upsertMatchingField: the layer has no field '${input.matchingField.slice(0, 64)}'.`);
    else if (target.type !== "esriFieldTypeString" && !(target.type in INTEGER_RANGES))
      problems.push(
        `upsertMatchingField: '${target.name}' is of type ${target.type}; rows are matched by a text or whole-number field.`,
      );
    else {
      key = from.get(target.name.toLowerCase());
      if (!key)
        problems.push(`upsertMatchingField: the file has no field '${target.name}' (name it in 'fieldMappings').`);
    }
  }
  if (problems.length > 0) throw badRequest(WHAT, problems.slice(0, MAX_PROBLEMS));
  return { written, key };
}

/**
 * The file's rows as the layer takes them: each value converted to its field's type, each geometry checked against
 * the layer's; every problem found is said (the first ones), and nothing is written when there is one.
 */
function appendRows(schema: LayerSchema, table: HeldTable, input: AppendInput, editor: string) {
  const mapped = mappingOf(schema, table, input);
  // The layer's global id and tracking fields are the server's (a file's column of the same name is left out).
  const system = systemFields(schema);
  const written = mapped.written.filter((w) => !system.has(w.field.name.toLowerCase()));
  const key = mapped.key && !system.has(mapped.key.field.name.toLowerCase()) ? mapped.key : undefined;
  const tracking = trackingOf(schema, editor);
  const layerKind = schema.geometry ? (ESRI_KINDS[schema.geometry.type] ?? "NONE") : "NONE";
  const fileKind = kindOf(table.geometryType);
  // A table's rows may update a layer's attributes (updateGeometry=false); a layer's shapes are never dropped.
  const attributesOnly = fileKind === "NONE" && input.upsert && input.skipInserts && !input.updateGeometry;
  if (layerKind !== fileKind && !(layerKind !== "NONE" && attributesOnly))
    throw badRequest(WHAT, [
      `The layer holds ${KIND_WORDS[layerKind] ?? layerKind}; the file holds ${KIND_WORDS[fileKind] ?? fileKind}.`,
    ]);
  const declared = schema.geometry ? DECLARED[schema.geometry.type] : undefined;
  const problems: string[] = [];
  const keys = new Set<string>();
  const rows: AppendRow[] = [];
  table.rows.forEach((row, i) => {
    const line = i + 1;
    const values: Record<string, CellValue> = Object.create(null);
    for (const { field, source } of written) {
      const v = fit(row.values?.[source] ?? null, field);
      if (v !== null && typeof v === "object" && "wrong" in v) {
        if (problems.length < MAX_PROBLEMS)
          problems.push(
            `Row ${line}: '${source}' is ${say(row.values?.[source])}, which ${v.wrong} (the layer's field '${field.name}' is ${field.type}).`,
          );
        continue;
      }
      values[field.column] = v;
    }
    if (key) {
      const k = keyOf(values[key.field.column]);
      if (k === undefined) {
        if (problems.length < MAX_PROBLEMS)
          problems.push(`Row ${line}: '${key.source}', the matching field, is empty.`);
      } else if (keys.has(k)) {
        if (problems.length < MAX_PROBLEMS)
          problems.push(
            `Row ${line}: '${key.source}' is ${say(values[key.field.column])} again: each row must match one row.`,
          );
      } else keys.add(k);
    }
    const geometry = (row.geometry ?? null) as Geometry | null;
    if (geometry && declared && !fitsLayer(declared, geometry) && problems.length < MAX_PROBLEMS)
      problems.push(`Row ${line}: a ${geometry.type} does not fit the layer's ${schema.geometry?.type}.`);
    for (const [column, value] of tracking.added()) values[column] = value;
    rows.push({ values, geometry: layerKind === "NONE" ? null : geometry });
  });
  if (problems.length > 0) throw badRequest(WHAT, problems);
  const columns = [...written.map((w) => w.field.column), ...tracking.columns];
  const kinds: Record<string, FieldKind> = Object.create(null);
  for (const { field } of written) kinds[field.column] = KINDS[field.type] ?? "string";
  for (const [column, kind] of tracking.kinds) kinds[column] = kind;
  const change: Omit<LayerAppend, "table"> = {
    ...(declared ? { geometryType: declared } : {}),
    columns,
    kinds,
    rows,
    ...(key
      ? {
          key: {
            column: key.field.column,
            // An update keeps a row's global id and making; its editor and edit date move.
            columns: columns.filter((c) => c !== key.field.column && !tracking.madeOnly.has(c)),
            updateGeometry: input.updateGeometry && !attributesOnly,
            skipInserts: input.skipInserts,
            skipUpdates: input.skipUpdates,
          },
        }
      : {}),
  };
  return change;
}

const union = (a: Extent | undefined, b: Extent | undefined): Extent | undefined =>
  a && b ? [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[2], b[2]), Math.max(a[3], b[3])] : (a ?? b);

const cornersOf = (extent: Item["extent"]): Extent | undefined => {
  const [[a, b] = [], [c, d] = []] = extent ?? [];
  return typeof a === "number" && typeof b === "number" && typeof c === "number" && typeof d === "number"
    ? [a, b, c, d]
    : undefined;
};

/**
 * What an append writes of a layer's global id and tracking fields (none where the layer records none): each added
 * row's new global id, the caller as its creator and editor, and the append's time.
 */
function trackingOf(schema: LayerSchema, editor: string) {
  const e = schema.editing;
  const column = (name: string | undefined) =>
    name ? schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase())?.column : undefined;
  const now = new Date();
  const fixed: [string | undefined, CellValue, FieldKind][] = [
    [column(e?.creationDateField), now, "date"],
    [column(e?.creatorField), editor, "string"],
    [column(e?.editDateField), now, "date"],
    [column(e?.editorField), editor, "string"],
  ];
  const gid = column(e?.globalIdField);
  const present = fixed.filter((f): f is [string, CellValue, FieldKind] => f[0] !== undefined);
  return {
    columns: [...(gid ? [gid] : []), ...present.map((f) => f[0])],
    kinds: [
      ...(gid ? [[gid, "string"] as [string, FieldKind]] : []),
      ...present.map((f): [string, FieldKind] => [f[0], f[2]]),
    ],
    /** The columns only an added row sets. */
    madeOnly: new Set([gid, column(e?.creationDateField), column(e?.creatorField)].filter((c) => c !== undefined)),
    added: (): [string, CellValue][] => [
      ...(gid ? [[gid, newGlobalId()] as [string, CellValue]] : []),
      ...present.map((f): [string, CellValue] => [f[0], f[1]]),
    ],
  };
}

/** A store's failure to keep a change: the caller hears that plainly, the operator reads why in the log. */
function notKept(err: unknown, what: string, nothing: string): never {
  if (err instanceof ApiError) throw err;
  logger.error("hosted data not changed", { error: err instanceof Error ? err.message : String(err) });
  throw new ApiError(500, what, [`The layer's data could not be stored: ${nothing} Try again later.`]);
}

/**
 * POST /<server>/rest/services/<folder>/<name>/FeatureServer/<id>/append: rows of an uploaded file (appendItemId)
 * added to the layer, or (upsert) matched by a field and updated, in one transaction. Its owner or an administrator.
 */
export async function appendToLayer(req: RestRequest): Promise<object> {
  const { folder = "", name = "", layer = "" } = req.pathParameters;
  if (!/^(0|[1-9]\d{0,8})$/.test(layer))
    throw new ApiError(404, "Not Found", [`'${layer.slice(0, 32)}' is no layer id: …/FeatureServer/<id>/append.`]);
  const id = Number(layer);
  const found = await ownedHostedService(req, folder, name);
  const input = appendInput(req);
  // The file: an item the caller sees (a missing one is this request's fault, as ArcGIS answers it).
  const item = await getItem(input.itemId);
  if (!item || req.identity.kind !== "user" || !visibleTo(req.identity, item))
    throw badRequest(WHAT, [`Item '${input.itemId.slice(0, 64)}' does not exist or is inaccessible.`]);
  if (!item.file) throw badRequest(WHAT, ["The item holds no uploaded file to append."]);
  const filetype = fileTypeOf(input.format ?? item.type.toLowerCase(), WHAT, item);
  const table = await sourceTables(item, filetype, input.sourceInfo, WHAT, (tables) =>
    held(chosenTable(tables, input.sourceTable)),
  );
  const store = await hostedStore();
  // Whatever fails past the checks (the layer not readable, the database refusing) has changed nothing.
  const counts = await underServiceLock(found, WHAT, async (locked: Locked) => {
    const entry = locked.layers[id];
    if (typeof entry !== "string") throw badRequest(WHAT, [`The service has no layer or table with id ${id}.`]);
    const source = locked.service.source;
    if (!source) throw new Error("a hosted service without a source");
    const schema = (await openDataset({ ...source, layers: locked.layers }, id)).schema;
    const change = appendRows(schema, table, input, req.identity.kind === "user" ? req.identity.user.username : "");
    const kept = locked.settle();
    const before = cornersOf(locked.item.extent);
    try {
      return await store.append(
        locked.service.itemId,
        { ...change, table: entry },
        {
          revision: kept.revision,
          settle: (bytes, extent) => kept.settle(bytes, extent ? union(before, extent) : undefined),
        },
      );
    } catch (err) {
      if (err instanceof AmbiguousKeyError)
        throw badRequest(WHAT, [
          `upsertMatchingField: more than one of the layer's rows has the value ${say(err.value)}: its values must be unique to match rows.`,
        ]);
      throw err;
    }
  }).catch((err: unknown) => notKept(err, WHAT, "nothing was appended."));
  logger.info("hosted layer appended", { itemId: found.item.itemId, layer: id, ...counts });
  if (!input.async) return { success: true };
  // Done within this request: the status answers what ArcGIS's append job status answers once it has completed.
  const jobId = newJobId();
  const status = `${req.httpsOrigin}${PORTAL_ROOT}/content/users/${encodeURIComponent(found.item.owner)}/items/${found.item.itemId}/status`;
  return {
    statusUrl: `${status}?jobId=${jobId}&jobType=append`,
  };
}

// --- overwrite ---------------------------------------------------------------------------------------------------

/**
 * Publishing a file item over the hosted service of the same name (overwrite=true): the service keeps its item id,
 * URL, sharing and layer ids, its layers take the file's fields and rows. The file must hold as many layers as the
 * service serves, each of the same kind (points, lines, polygons, or a table), in the same order.
 */
export async function overwriteHosted(req: RestRequest, p: PublishRequest, what: string): Promise<object> {
  const identity = req.identity;
  if (identity.kind !== "user") throw forbidden();
  const name = (typeof p.parameters.name === "string" && p.parameters.name) || serviceNameFrom(p.source.title);
  const server = await hostingServer(p.source.portalId, what);
  const catalog = await readCatalog(server.serverId);
  const service = catalog.services.find(
    (s) =>
      s.folder.toLowerCase() === HOSTED_FOLDER.toLowerCase() &&
      s.name.toLowerCase() === name.toLowerCase() &&
      s.type === "FeatureServer",
  );
  if (!service || !visibleTo(identity, service) || service.portalId !== identity.user.portalId)
    throw badRequest(what, [`There is no hosted feature service '${name.slice(0, 120)}' to overwrite.`]);
  if (service.owner !== identity.user.username && identity.user.role !== "org_admin")
    throw forbidden(["Only the service's owner or an administrator overwrites it."]);
  if (service.source?.datastoreId !== HOSTED_STORE_ID)
    throw badRequest(what, [`'${service.name}' is not a hosted feature service: only hosted ones are overwritten.`]);
  const item = await getItem(service.itemId);
  if (!item) throw badRequest(what, [`There is no hosted feature service '${name.slice(0, 120)}' to overwrite.`]);
  const store = await hostedStore();
  // The file's rows go from the file to the store a batch at a time, within the reading (its temporary files).
  const notes = await sourceTables(p.source, p.filetype, p.parameters, what, async (tables) => {
    await underServiceLock({ service, item }, what, async (locked) => {
      const live = locked.layers.flatMap((table, id) => (table === null ? [] : [{ id, table }]));
      if (live.length !== tables.length)
        throw badRequest(what, [
          `The service has ${live.length} layer(s) and table(s); the file holds ${tables.length}: an overwrite keeps the service's layers, so the file must hold as many.`,
        ]);
      const source = locked.service.source;
      if (!source) throw new Error("a hosted service without a source");
      const problems: string[] = [];
      const layers: HostedLayer[] = [];
      const made = Date.now();
      for (const [i, { id, table: entry }] of live.entries()) {
        const schema = (await openDataset({ ...source, layers: locked.layers }, id)).schema;
        const table = (tables[i] as NamedTable).table;
        const was = schema.geometry ? (ESRI_KINDS[schema.geometry.type] ?? "NONE") : "NONE";
        const now = kindOf(table.geometryType);
        if (was !== now)
          problems.push(
            `Layer ${id} ('${entry}') holds ${KIND_WORDS[was] ?? was}; the file's ${i === 0 ? "first" : `number ${i + 1}`} holds ${KIND_WORDS[now] ?? now}.`,
          );
        layers.push({
          name: entry,
          title: tables.length === 1 ? p.source.title : entry,
          ...(table.geometryType ? { geometryType: table.geometryType } : {}),
          // The new rows are the owner's, made now, with global ids and editor tracking as a publish gives them.
          columns: table.fields
            .map((f) => ({
              name: f.name,
              kind: f.kind,
              ...(f.kind === "string" ? { length: textLength(f.length) } : {}),
            }))
            .concat(trackingColumns()),
          rows: trackedRows(table.rows(), p.owner, made),
          editing: TRACKING,
        });
      }
      if (problems.length > 0) throw badRequest(what, problems);
      await store.replace(locked.service.itemId, layers, locked.settle());
    }).catch((err: unknown) => notKept(err, what, "the service keeps its data."));
    return tables.flatMap((t) => t.table.notes);
  });
  const serviceurl = restServiceUrl(serverUrl(server, p.origin), HOSTED_FOLDER, service.name, "FeatureServer");
  return {
    services: [
      {
        type: "Feature Service",
        serviceurl,
        encodedServiceURL: serviceurl,
        size: p.source.file.size,
        jobId: newJobId(),
        serviceItemId: service.itemId,
        ...(notes.length > 0 ? { notes } : {}),
      },
    ],
  };
}
