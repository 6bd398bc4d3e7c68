// Editing a hosted feature layer, as ArcGIS clients edit one: a layer's `applyEdits` (adds, updates, deletes),
// `addFeatures`, `updateFeatures` and `deleteFeatures` (by object ids, or by a where clause and a geometry read as the
// layer's query reads them), and the service's `applyEdits` across its layers (`edits`). Every feature is checked
// here against the layer as it is served (geometry type, spatial reference, coordinates, each attribute by its
// field's type, length and nullability): what fails is that feature's error, with ArcGIS's code. Then a runner writes
// the rest in one transaction per request: the hosted store (shared/hosted/edit-hosted.ts, a GeoPackage under the
// service's lock), or a registered database for a layer read by reference with editing on
// (shared/hosted/byref-edit.ts); with rollbackOnFailure (the default) any failed edit fails the whole request and
// nothing is written. The server fills the object id, the global id and the editor-tracking fields (a client's values for
// them are ignored), and each edited layer's last edit moves with the commit.
import type { Geometry } from "geojson";
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest, forbidden, operationNotSupported, tokenRequired } from "#shared/errors.ts";
import { fromEsriGeometry } from "#shared/features/geometry/esri-json.ts";
import { canonicalWkid, hasCrs, project } from "#shared/features/geometry/projection.ts";
import { asDeclared, type GeometryTypeName } from "#shared/features/geopackage-writer.ts";
import { type Field, type LayerSchema, systemFields } from "#shared/features/schema.ts";
import type { OpenDataset } from "#shared/features/dataset.ts";
import type { WriteKind } from "#shared/features/sql/write.ts";
import { boolParam } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { capabilitiesOf, type EditCapability } from "#shared/features/capabilities.ts";
import { anonymousEditing, managesService, type Ownership, scopeCondition } from "#shared/features/ownership.ts";
import type { Expr } from "#shared/features/where-tree.ts";
import { logger } from "#shared/log.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import {
  type Checked,
  type EditError,
  type EditOutcome,
  type EditResult,
  type EditRow,
  type LayerEdit,
  type LayerEditResults,
} from "#shared/hosted/store.ts";
import { getItem } from "#shared/stores/items.ts";
import { readCatalog, type Service } from "#shared/stores/services.ts";

export const WHAT = "Unable to complete operation.";
/** As a query of a service the caller may not see answers (its existence is not told). */
const serviceNotFound = () =>
  new ApiError(404, "Service not found.", ["The service does not exist or is inaccessible."]);
/** The most edits (adds, updates and deletes together, over every layer) one request makes. */
export const MAX_EDITS = 2000;
/** How deep an edit's JSON may nest: a polygon's coordinates inside a feature inside a layer's edits. */
const MAX_DEPTH = 12;
/** The most ids a deleteFeatures by where or geometry removes at once (its query's page, bounded). */
const MAX_MATCHED = MAX_EDITS;

const say = (v: unknown) => JSON.stringify(typeof v === "string" ? v.slice(0, 64) : v)?.slice(0, 80) ?? "undefined";

// --- who may edit -----------------------------------------------------------------------------------------------

/**
 * The hosted feature service `folder/name` the caller may edit with `needs`: its owner and its organization's
 * administrators; a member who sees it (its item shared with them) when its capabilities include each operation;
 * anonymous callers only when its owner turned on public data collection and it is shared with everyone, and then
 * only what its capabilities allow (anyone else anonymous is asked to sign in). One the caller cannot see is not told
 * to exist (as a query of it answers); a layer read by reference answers read-only, as the service does.
 */
export async function editableService(
  req: RestRequest,
  folder: string,
  name: string,
  needs: ReadonlySet<EditCapability>,
  operation: string,
  /** Any one of `needs` is enough (an attachment is added with Create or Update, as ArcGIS takes it). */
  anyOf = false,
) {
  const server = req.server;
  if (!server) throw new Error("server route without a server");
  const identity = req.identity;
  const catalog = await readCatalog(server.serverId);
  const service = catalog.services.find(
    (s) =>
      s.folder.toLowerCase() === folder.toLowerCase() &&
      s.name.toLowerCase() === name.toLowerCase() &&
      s.type === "FeatureServer",
  );
  const hosted = service?.source?.datastoreId === HOSTED_STORE_ID;
  const caps = capabilitiesOf(service ?? {});
  const has = (n: EditCapability) => caps.has(n.toLowerCase());
  const permitted = anyOf ? [...needs].some(has) : [...needs].every(has);
  if (identity.kind === "anonymous" && !(service && hosted && anonymousEditing(service) && permitted))
    throw tokenRequired();
  if (!service || !visibleTo(identity, service)) throw serviceNotFound();
  if (!hosted)
    throw operationNotSupported(`Its layers are read-only (capabilities: Query): '${operation}' is not supported.`);
  checkMayEdit(identity, service, needs, anyOf);
  const item = await getItem(service.itemId);
  if (!item) throw serviceNotFound();
  return { service, item };
}

/**
 * Who may edit a service the caller sees (hosted, or by reference with editing on): its owner and its organization's
 * administrators; a member when its capabilities include each operation the edits need (any one of them with
 * `anyOf`); an anonymous caller likewise when the service is open to public data collection. Others: 403.
 */
export function checkMayEdit(
  identity: RestRequest["identity"],
  service: Service,
  needs: ReadonlySet<EditCapability>,
  anyOf = false,
): void {
  const caps = capabilitiesOf(service);
  const has = (n: EditCapability) => caps.has(n.toLowerCase());
  const permitted = anyOf ? [...needs].some(has) : [...needs].every(has);
  const open = identity.kind === "user" || (identity.kind === "anonymous" && anonymousEditing(service));
  const allowed = managesService(identity, service) || (open && permitted);
  if (!allowed)
    throw forbidden([
      `User does not have permissions to access '${service.folder.toLowerCase()}/${service.name.toLowerCase()}.featureserver'.`,
    ]);
}

// --- reading the request ----------------------------------------------------------------------------------------

/** A JSON parameter: absent (undefined), or its value, bounded in depth; a clear 400 when it is not JSON. */
function jsonParam(raw: string | undefined, name: string): unknown {
  if (raw === undefined || raw.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest(WHAT, [`'${name}' is not valid JSON.`]);
  }
  if (nestedDeeperThan(value, MAX_DEPTH)) throw badRequest(WHAT, [`'${name}' nests deeper than ${MAX_DEPTH} levels.`]);
  return value;
}

/** A list of features (adds, updates, features): a JSON array, each entry checked later as a feature. */
function featureList(raw: string | undefined, name: string): unknown[] {
  const value = jsonParam(raw, name);
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw badRequest(WHAT, [`'${name}' must be a JSON array of features.`]);
  return value;
}

/** Deletes as ArcGIS takes them: `1,2,3` or `[1,2,3]` (object ids), or global ids with useGlobalIds. */
function deleteList(raw: unknown, name: string, byGlobalId: boolean): unknown[] {
  if (raw === undefined || raw === null) return [];
  if (Array.isArray(raw)) return raw;
  if (typeof raw === "number") return [raw];
  if (typeof raw !== "string")
    throw badRequest(WHAT, [`'${name}' must be a list of ${byGlobalId ? "global" : "object"} ids.`]);
  const text = raw.trim();
  if (text === "") return [];
  if (text.startsWith("[")) {
    const value = jsonParam(text, name);
    if (!Array.isArray(value)) throw badRequest(WHAT, [`'${name}' must be a list of ids.`]);
    return value;
  }
  return text.split(",").map((s) => {
    const t = s.trim();
    return byGlobalId || !/^-?\d+$/.test(t) ? t : Number(t);
  });
}

export interface Options {
  readonly rollbackOnFailure: boolean;
  readonly useGlobalIds: boolean;
  readonly returnEditMoment: boolean;
}

function optionsOf(req: RestRequest): Options {
  const p = req.params;
  const problems: string[] = [];
  const flag = (name: string, fallback: boolean) => boolParam(p.caseless(name), name, problems) ?? fallback;
  const options = {
    rollbackOnFailure: flag("rollbackOnFailure", true),
    useGlobalIds: flag("useGlobalIds", false),
    returnEditMoment: flag("returnEditMoment", false),
  };
  // gdbVersion names a geodatabase version: hosted layers have none, so it is ignored, as ArcGIS ignores it there.
  if (problems.length > 0) throw badRequest(WHAT, problems);
  return options;
}

/** One layer's edits as sent (each feature or id still unchecked). */
export interface RawLayerEdits {
  readonly layerId: number;
  readonly adds: readonly unknown[];
  readonly updates: readonly unknown[];
  readonly deletes: readonly unknown[];
  /** deleteFeatures by where and geometry: the query parameters naming the rows. */
  readonly deleteQuery?: ReadonlyMap<string, string>;
  /** applyEdits' attachments, their files decoded and checked (kept once the caller may edit). */
  readonly attachments?: RawAttachments;
}

/** A file of applyEdits' attachments, decoded and checked: its bytes, name and type. */
export interface RawFile {
  readonly bytes: Buffer;
  readonly name: string;
  readonly contentType: string;
}
export interface RawAttachments {
  readonly adds: readonly (RawFile & { readonly globalId: string; readonly parentGlobalId: string })[];
  readonly updates: readonly (RawFile & { readonly globalId: string })[];
  readonly deletes: readonly string[];
}

/**
 * applyEdits' `attachments` ({adds, updates, deletes}, by global id: only with useGlobalIds, as ArcGIS takes them),
 * each file given as base64 `data` (Uploads, and so `uploadId`, are not offered) and checked as addAttachment checks
 * one: its size, and its kind from its own bytes.
 */
async function attachmentsOf(raw: string | undefined, useGlobalIds: boolean): Promise<RawAttachments | undefined> {
  const value = jsonParam(raw, "attachments");
  if (value === undefined || value === null) return undefined;
  if (!useGlobalIds)
    throw badRequest(WHAT, ["'attachments' are edited by global id: send useGlobalIds=true with them."]);
  if (!isObject(value)) throw badRequest(WHAT, ["'attachments' must be a JSON object of adds, updates and deletes."]);
  const files = await import("#shared/hosted/attachment-files.ts");
  const list = (name: string) => {
    const v = value[name];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) throw badRequest(WHAT, [`'attachments.${name}' must be a list.`]);
    return v as unknown[];
  };
  const gidOf = (v: unknown, where: string) => {
    const g = typeof v === "string" ? guidOf(v) : undefined;
    if (!g) throw badRequest(WHAT, [`${where} must be a global id ({XXXXXXXX-XXXX-…}), not ${say(v)}.`]);
    return g;
  };
  const fileOf = (a: unknown, where: string): RawFile & { globalId: string } => {
    if (!isObject(a)) throw badRequest(WHAT, [`${where} must be an object.`]);
    if (a.uploadId !== undefined && a.uploadId !== null)
      throw badRequest(WHAT, [
        `${where}: 'uploadId' names an upload, which is not offered here: send the file as 'data' (base64).`,
      ]);
    const data = a.data;
    if (typeof data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(data.replace(/\s/g, "")))
      throw badRequest(WHAT, [`${where}: 'data' must be the file in base64.`]);
    if (Math.floor((data.length * 3) / 4) > files.MAX_ATTACHMENT_BYTES + 3)
      throw badRequest(WHAT, [`${where}: an attachment is at most ${files.MAX_ATTACHMENT_BYTES} bytes.`]);
    const bytes = Buffer.from(data, "base64");
    if (bytes.length > files.MAX_ATTACHMENT_BYTES)
      throw badRequest(WHAT, [`${where}: an attachment is at most ${files.MAX_ATTACHMENT_BYTES} bytes.`]);
    const name = files.attachmentName(typeof a.name === "string" ? a.name : "") || "attachment";
    const kind = files.attachmentType(bytes, name);
    if ("refused" in kind) throw badRequest(WHAT, [`${where}: ${kind.refused}`]);
    return { bytes, name, contentType: kind.type, globalId: gidOf(a.globalId, `${where}.globalId`) };
  };
  return {
    adds: list("adds").map((a, i) => {
      const f = fileOf(a, `attachments.adds[${i}]`);
      return {
        ...f,
        parentGlobalId: gidOf((a as Record<string, unknown>).parentGlobalId, `attachments.adds[${i}].parentGlobalId`),
      };
    }),
    updates: list("updates").map((a, i) => fileOf(a, `attachments.updates[${i}]`)),
    deletes: list("deletes").map((g, i) => gidOf(g, `attachments.deletes[${i}]`)),
  };
}

const LAYER_ID = /^(0|[1-9]\d{0,8})$/;

function countOf(edits: readonly RawLayerEdits[]): number {
  const attached = (a: RawAttachments | undefined) => (a ? a.adds.length + a.updates.length + a.deletes.length : 0);
  return edits.reduce((n, e) => n + e.adds.length + e.updates.length + e.deletes.length + attached(e.attachments), 0);
}

// --- checking features ------------------------------------------------------------------------------------------

const INTEGER_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  esriFieldTypeSmallInteger: [-32768, 32767],
  esriFieldTypeInteger: [-2147483648, 2147483647],
  esriFieldTypeBigInteger: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};
const KINDS: Readonly<Record<string, WriteKind>> = {
  esriFieldTypeSmallInteger: "integer",
  esriFieldTypeInteger: "integer",
  esriFieldTypeBigInteger: "integer",
  esriFieldTypeSingle: "double",
  esriFieldTypeDouble: "double",
  esriFieldTypeString: "string",
  esriFieldTypeGUID: "string",
  esriFieldTypeDate: "date",
};
/** The GeoPackage type a hosted layer's geometry is kept as (multi types, but for points). */
const DECLARED: Readonly<Record<string, GeometryTypeName>> = {
  esriGeometryPoint: "POINT",
  esriGeometryMultipoint: "MULTIPOINT",
  esriGeometryPolyline: "MULTILINESTRING",
  esriGeometryPolygon: "MULTIPOLYGON",
};
/** The layer geometry type a GeoJSON geometry is a shape of. */
const ESRI_OF: Readonly<Record<string, string>> = {
  Point: "esriGeometryPoint",
  MultiPoint: "esriGeometryMultipoint",
  LineString: "esriGeometryPolyline",
  MultiLineString: "esriGeometryPolyline",
  Polygon: "esriGeometryPolygon",
  MultiPolygon: "esriGeometryPolygon",
};
const WORDS: Readonly<Record<string, readonly [string, string]>> = {
  esriGeometryPoint: ["a point", "points"],
  esriGeometryMultipoint: ["a multipoint", "multipoints"],
  esriGeometryPolyline: ["a polyline", "polylines"],
  esriGeometryPolygon: ["a polygon", "polygons"],
};
/** Dates ArcGIS and JavaScript take: ±100,000,000 days from 1970. */
const MAX_DATE_MS = 8.64e15;
/** A global id as ArcGIS writes it: braces, upper-case hex. */
const GUID = /^\{?([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\}?$/;

export const guidOf = (text: string): string | undefined => {
  const m = GUID.exec(text);
  return m?.[1] ? `{${m[1].toUpperCase()}}` : undefined;
};

class FeatureError extends Error {
  readonly error: EditError;
  constructor(code: number, description: string) {
    super(description);
    this.error = { code, description };
  }
}
const contentError = (description: string) => new FeatureError(1000, description);
const geometryError = (why: string) => new FeatureError(1015, `Geometry could not be set: ${why}`);
const valueError = (field: string, why: string) =>
  new FeatureError(1016, `Setting of value for ${field} failed: ${why}`);

/** A value as its field keeps it (dates as epoch ms), or a FeatureError naming the field and the problem. */
function fitValue(field: Field, value: unknown): string | number | null {
  if (value === null || value === undefined) {
    if (!field.nullable) throw new FeatureError(1001, `Field: ${field.name} is not nullable. Cannot set null value.`);
    return null;
  }
  const kind = KINDS[field.type];
  if (!kind) throw valueError(field.name, `a field of type ${field.type} is not written by edits.`);
  if (kind === "integer" || kind === "double") {
    const n =
      typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : NaN;
    if (!Number.isFinite(n)) throw valueError(field.name, `${say(value)} is not a number.`);
    const range = INTEGER_RANGES[field.type];
    if (range) {
      if (!Number.isInteger(n)) throw valueError(field.name, `${say(value)} is not a whole number.`);
      if (n < range[0] || n > range[1]) throw valueError(field.name, `${n} is outside ${range[0]}…${range[1]}.`);
    }
    if (field.type === "esriFieldTypeSingle" && Math.abs(n) > 3.4e38)
      throw valueError(field.name, `${n} is outside a single-precision number's range.`);
    return n;
  }
  if (kind === "date") {
    const n =
      typeof value === "number"
        ? value
        : typeof value === "string" && /^-?\d+$/.test(value.trim())
          ? Number(value)
          : NaN;
    if (!Number.isFinite(n) || Math.abs(n) > MAX_DATE_MS)
      throw valueError(field.name, `${say(value)} is not a date (milliseconds since 1970-01-01 UTC).`);
    return Math.round(n);
  }
  if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean")
    throw valueError(field.name, `${say(value)} is not text.`);
  const text = String(value);
  if (field.type === "esriFieldTypeGUID") {
    const g = guidOf(text);
    if (!g) throw valueError(field.name, `${say(value)} is not a GUID.`);
    return g;
  }
  if (field.length !== undefined && text.length > field.length)
    throw valueError(field.name, `the text is longer than the field's ${field.length} characters.`);
  // eslint-disable-next-line no-control-regex -- NUL cannot be kept in PostgreSQL text
  if (/\u0000/.test(text)) throw valueError(field.name, "the text holds a NUL character.");
  return text;
}

/** A feature's geometry in the layer's system, of its declared type; a FeatureError saying what is wrong. */
function fitGeometry(schema: LayerSchema, raw: unknown): Geometry {
  const g = schema.geometry;
  if (!g) throw contentError("The table's records take no geometry.");
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw geometryError("it is not a geometry object.");
  if ("xmin" in raw) throw geometryError("an envelope is not a feature's geometry.");
  let parsed;
  try {
    parsed = fromEsriGeometry(raw);
  } catch (err) {
    if (err instanceof ApiError) throw geometryError(`${err.details.at(-1) ?? "it is not valid"}.`);
    throw err;
  }
  const kind = ESRI_OF[parsed.geometry.type];
  if (kind !== g.type)
    throw geometryError(
      `it is ${WORDS[kind ?? ""]?.[0] ?? parsed.geometry.type}; the layer holds ${WORDS[g.type]?.[1] ?? g.type}.`,
    );
  // The feature's own spatial reference, else the layer's.
  const from = canonicalWkid(parsed.spatialReference ?? g.srid);
  const to = canonicalWkid(g.srid);
  let geometry = parsed.geometry;
  if (from !== to) {
    if (!hasCrs(from)) throw geometryError(`its spatial reference ${from} is not known here.`);
    try {
      geometry = project(geometry, from, to);
    } catch {
      throw geometryError(`it cannot be projected from ${from} to the layer's ${to}.`);
    }
  }
  if (to === 4326) {
    let outside = false;
    walk(geometry, ([x = NaN, y = NaN]) => {
      if (!(Math.abs(x) <= 180 && Math.abs(y) <= 90)) outside = true;
    });
    if (outside) throw geometryError("its coordinates are outside longitude -180…180 and latitude -90…90.");
  }
  const declared = DECLARED[g.type];
  return declared ? asDeclared(geometry, declared, schema.name) : geometry;
}

function walk(g: Geometry, f: (p: number[]) => void): void {
  switch (g.type) {
    case "Point":
      return f(g.coordinates);
    case "MultiPoint":
    case "LineString":
      return g.coordinates.forEach(f);
    case "MultiLineString":
    case "Polygon":
      return g.coordinates.forEach((r) => r.forEach(f));
    case "MultiPolygon":
      return g.coordinates.forEach((p) => p.forEach((r) => r.forEach(f)));
    default:
      return;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Who edits and when: what the tracking fields are filled with. */
export interface Editor {
  readonly username: string;
  readonly moment: number;
}

/**
 * What checking a layer's features needs of its schema, worked out once per request (not once per feature): its
 * fields by lower-case name, the fields mapgate fills, the fields an add must be given, and the columns the server
 * fills.
 */
interface LayerFacts {
  readonly schema: LayerSchema;
  readonly fields: ReadonlyMap<string, Field>;
  readonly system: ReadonlySet<string>;
  readonly objectIdField: string;
  readonly globalIdField: string | undefined;
  /** Fields that are neither nullable nor the system's: an add leaving one out fails. */
  readonly required: readonly Field[];
  readonly columns: {
    readonly globalId?: string;
    readonly creator?: string;
    readonly creationDate?: string;
    readonly editor?: string;
    readonly editDate?: string;
  };
}

function layerFacts(schema: LayerSchema): LayerFacts {
  const fields = new Map(schema.fields.map((f) => [f.name.toLowerCase(), f]));
  const system = systemFields(schema);
  const e = schema.editing;
  const column = (name: string | undefined) => (name ? fields.get(name.toLowerCase())?.column : undefined);
  const pick = (name: string, c: string | undefined) => (c === undefined ? {} : { [name]: c });
  return {
    schema,
    fields,
    system,
    objectIdField: schema.objectIdField.toLowerCase(),
    globalIdField: e?.globalIdField?.toLowerCase(),
    required: schema.fields.filter((f) => !f.nullable && !system.has(f.name.toLowerCase())),
    columns: {
      ...pick("globalId", column(e?.globalIdField)),
      ...pick("creator", column(e?.creatorField)),
      ...pick("creationDate", column(e?.creationDateField)),
      ...pick("editor", column(e?.editorField)),
      ...pick("editDate", column(e?.editDateField)),
    },
  };
}

/**
 * An add or update's row: its attributes fitted to the fields (the system's fields ignored, as ArcGIS ignores a
 * client's values for them, and filled by the server), its geometry checked; an update's object id (or global id).
 */
function checkFeature(
  facts: LayerFacts,
  raw: unknown,
  mode: "add" | "update",
  options: Options,
  editor: Editor,
): EditRow & { readonly id?: number; readonly byGlobalId?: string } {
  if (!isObject(raw)) throw contentError("The feature is not an object with attributes and a geometry.");
  const attributes = raw.attributes ?? {};
  if (!isObject(attributes)) throw contentError("The feature's attributes are not an object.");
  const { schema, fields, system, columns } = facts;
  const editing = schema.editing;
  const values: Record<string, string | number | null> = Object.create(null);
  const kinds: Record<string, WriteKind> = Object.create(null);
  let id: number | undefined;
  let byGlobalId: string | undefined;
  let sentGlobalId: string | undefined;
  for (const [name, value] of Object.entries(attributes)) {
    const field = fields.get(name.toLowerCase());
    if (!field) throw contentError(`Field ${name.slice(0, 64)} does not exist in the layer.`);
    const lower = field.name.toLowerCase();
    if (lower === facts.objectIdField) {
      if (mode === "update" && !options.useGlobalIds) {
        const n =
          typeof value === "number" ? value : typeof value === "string" && /^\d+$/.test(value) ? Number(value) : NaN;
        if (!Number.isSafeInteger(n))
          throw new FeatureError(1011, `Object is missing: ${field.name} ${say(value)} is no object id.`);
        id = n;
      }
      continue;
    }
    if (lower === facts.globalIdField) {
      if (typeof value === "string") sentGlobalId = guidOf(value);
      if (options.useGlobalIds && sentGlobalId === undefined)
        throw new FeatureError(1021, `Empty GlobalID: ${field.name} ${say(value)} is no global id.`);
      continue;
    }
    // The tracking fields: the server's to fill.
    if (system.has(lower)) continue;
    values[field.column] = fitValue(field, value);
    kinds[field.column] = KINDS[field.type] ?? "string";
  }
  if (mode === "add") {
    // Every field a new row leaves empty must take NULL.
    for (const f of facts.required) {
      if (f.column in values) continue;
      throw new FeatureError(1001, `Field: ${f.name} is not nullable. Cannot set null value.`);
    }
  }
  if (mode === "update" && options.useGlobalIds) {
    if (!editing?.globalIdField) throw new FeatureError(1020, "Missing GlobalID: the layer has no global ids.");
    if (sentGlobalId === undefined)
      throw new FeatureError(1020, `Missing GlobalID: the update names no ${editing.globalIdField}.`);
    byGlobalId = sentGlobalId;
  }
  if (mode === "update" && !options.useGlobalIds && id === undefined)
    throw new FeatureError(1011, `Object is missing: the update's attributes name no ${schema.objectIdField}.`);
  const fill = (c: string | undefined, value: string | number, kind: WriteKind) => {
    if (c) {
      values[c] = value;
      kinds[c] = kind;
    }
  };
  let globalId: string | undefined;
  if (mode === "add") {
    const gid = columns.globalId;
    if (gid) {
      // A client's global id is kept with useGlobalIds (the client made the feature and knows it by it).
      globalId = options.useGlobalIds && sentGlobalId ? sentGlobalId : `{${crypto.randomUUID().toUpperCase()}}`;
      values[gid] = globalId;
      kinds[gid] = "string";
    }
    fill(columns.creator, editor.username, "string");
    fill(columns.creationDate, editor.moment, "date");
  } else globalId = byGlobalId;
  fill(columns.editor, editor.username, "string");
  fill(columns.editDate, editor.moment, "date");
  // A feature without a geometry keeps (an update) or has none (an add).
  const geometry = raw.geometry === undefined || raw.geometry === null ? undefined : fitGeometry(schema, raw.geometry);
  return {
    values,
    kinds,
    ...(geometry !== undefined ? { geometry } : mode === "add" && schema.geometry ? { geometry: null } : {}),
    ...(globalId !== undefined ? { globalId } : {}),
    ...(id !== undefined ? { id } : {}),
    ...(byGlobalId !== undefined ? { byGlobalId } : {}),
  };
}

/** An edit's check as the store takes it: the row, or its error with the ids it named. */
function checked<T>(make: () => T, ids: () => { objectId: number | null; globalId?: string | null }): Checked<T> {
  try {
    return { ok: make() };
  } catch (err) {
    if (err instanceof FeatureError) return { failed: err.error, ...ids() };
    throw err;
  }
}

/** An update's or delete's object id as sent, for its result when it fails (null when it named none). */
function sentId(schema: LayerSchema, raw: unknown): number | null {
  const attributes = isObject(raw) && isObject(raw.attributes) ? raw.attributes : {};
  const key = Object.keys(attributes).find((k) => k.toLowerCase() === schema.objectIdField.toLowerCase());
  const v = key ? attributes[key] : undefined;
  return typeof v === "number" && Number.isSafeInteger(v) ? v : null;
}

/** The object ids of rows by global id (useGlobalIds), read before the transaction. */
async function idsByGlobalId(
  dataset: OpenDataset,
  globalIds: readonly string[],
  restrict: Expr | undefined,
): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const gid = dataset.schema.editing?.globalIdField;
  if (!gid || globalIds.length === 0) return found;
  const { runQuery } = await import("#shared/features/query.ts");
  // A where clause of the ids, a page at a time (the where grammar binds every literal).
  for (let i = 0; i < globalIds.length; i += 500) {
    const part = globalIds.slice(i, i + 500);
    const where = `${gid} IN (${part.map((g) => `'${g}'`).join(",")})`;
    const answer = (await runQuery(
      {
        params: new Map([
          ["where", where],
          ["outFields", `${dataset.schema.objectIdField},${gid}`],
          ["returnGeometry", "false"],
        ]),
      },
      dataset,
      restrict,
    )) as { features?: { attributes: Record<string, unknown> }[] };
    for (const f of answer.features ?? []) {
      const g = f.attributes[gid];
      const id = f.attributes[dataset.schema.objectIdField];
      if (typeof g === "string" && typeof id === "number") found.set(g.toUpperCase(), id);
    }
  }
  return found;
}

/** A deleteFeatures' rows by where and geometry: the layer's query (its grammar and plan) answers their ids. */
async function idsMatching(
  dataset: OpenDataset,
  query: ReadonlyMap<string, string>,
  restrict: Expr | undefined,
): Promise<number[]> {
  const { runQuery } = await import("#shared/features/query.ts");
  const params = new Map(query);
  params.set("returnIdsOnly", "true");
  const answer = (await runQuery({ params }, dataset, restrict)) as { objectIds?: number[] | null };
  const ids = answer.objectIds ?? [];
  if (ids.length > MAX_MATCHED)
    throw badRequest(WHAT, [
      `The where clause and geometry match ${ids.length} features: deleteFeatures removes at most ${MAX_MATCHED} at once.`,
    ]);
  return ids;
}

/** One layer's edits checked against its schema, every feature's problem its own error. */
export async function checkLayer(
  dataset: OpenDataset,
  raw: RawLayerEdits,
  options: Options,
  editor: Editor,
  ownership: Ownership | undefined,
): Promise<LayerEdit> {
  const schema = dataset.schema;
  // The features the caller sees: those a delete by where or geometry, or an edit by global id, may name.
  const visible = ownership ? scopeCondition(ownership.field, ownership.query) : undefined;
  const facts = layerFacts(schema);
  const adds = raw.adds.map((f) =>
    checked(
      () => checkFeature(facts, f, "add", options, editor),
      () => ({ objectId: -1, ...(schema.editing?.globalIdField ? { globalId: null } : {}) }),
    ),
  );
  const updatesChecked = raw.updates.map((f) =>
    checked(
      () => checkFeature(facts, f, "update", options, editor),
      () => ({ objectId: sentId(schema, f), ...(schema.editing?.globalIdField ? { globalId: null } : {}) }),
    ),
  );
  const deleteIds = raw.deleteQuery ? await idsMatching(dataset, raw.deleteQuery, visible) : [];
  const deletesRaw = [...raw.deletes, ...deleteIds];
  // By global id: each is looked up to its object id first (one not found is the store's "may not exist").
  const wantedGids = options.useGlobalIds
    ? [
        ...updatesChecked.flatMap((u) => ("ok" in u && u.ok.byGlobalId ? [u.ok.byGlobalId] : [])),
        ...deletesRaw.flatMap((d) => (typeof d === "string" && guidOf(d) ? [guidOf(d) as string] : [])),
      ]
    : [];
  const byGid = await idsByGlobalId(dataset, wantedGids, visible);
  const updates = updatesChecked.map((u): LayerEdit["updates"][number] => {
    if (!("ok" in u)) return u;
    const { id, byGlobalId, ...row } = u.ok;
    const objectId = byGlobalId !== undefined ? (byGid.get(byGlobalId.toUpperCase()) ?? -1) : (id ?? -1);
    return { ok: { ...row, id: objectId } };
  });
  const deletes = deletesRaw.map((d): LayerEdit["deletes"][number] => {
    if (options.useGlobalIds && !raw.deleteQuery) {
      const g = typeof d === "string" ? guidOf(d) : undefined;
      if (!g)
        return {
          failed: { code: 1021, description: `Empty GlobalID: ${say(d)} is no global id.` },
          objectId: null,
          globalId: null,
        };
      return { ok: { id: byGid.get(g.toUpperCase()) ?? -1, globalId: g } };
    }
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0)
      return { failed: { code: 1011, description: `Object is missing: ${say(d)} is no object id.` }, objectId: null };
    return { ok: { id: d } };
  });
  return {
    layerId: raw.layerId,
    schema,
    adds,
    updates,
    deletes,
    ...(ownership
      ? {
          ownership: {
            column: ownership.field.column,
            query: ownership.query,
            update: ownership.update,
            delete: ownership.delete,
          },
        }
      : {}),
  };
}

// --- running ---------------------------------------------------------------------------------------------------

/** A request's edits within bounds: at most MAX_EDITS in all, each layer named once (else a 400 saying which). */
export function checkEditBounds(edits: readonly RawLayerEdits[]): void {
  const count = countOf(edits);
  if (count > MAX_EDITS)
    throw badRequest(WHAT, [
      `A request makes at most ${MAX_EDITS} edits (adds, updates and deletes together); this one has ${count}.`,
    ]);
  const seen = new Set<number>();
  for (const e of edits) {
    if (seen.has(e.layerId)) throw badRequest(WHAT, [`Layer ${e.layerId} is named twice in 'edits'.`]);
    seen.add(e.layerId);
  }
}

/** A store's failure to keep an edit: the caller hears it plainly, the operator reads why in the log. */
export function notKept(err: unknown): never {
  if (err instanceof ApiError) throw err;
  logger.error("hosted edit not kept", { error: err instanceof Error ? err.message : String(err) });
  throw new ApiError(500, WHAT, ["The edits could not be stored: nothing was written. Try again later."]);
}

/** What the edits need of the service's capabilities. */
export function needsOf(edits: readonly RawLayerEdits[]): Set<EditCapability> {
  const needs = new Set<EditCapability>();
  for (const e of edits) {
    if (e.adds.length > 0) needs.add("Create");
    if (e.updates.length > 0) needs.add("Update");
    if (e.deletes.length > 0 || e.deleteQuery) needs.add("Delete");
    // An attachment's change is a change of its feature (ArcGIS takes Update for it).
    if (e.attachments) needs.add("Update");
  }
  return needs;
}

/**
 * Who makes a request's checked-as-sent edits of one service's layers, in one transaction: the hosted stores' (below),
 * or a registered database's (shared/hosted/byref-edit.ts). Each answers the outcome and the edit's moment.
 */
export type EditRunner = (
  req: RestRequest,
  edits: readonly RawLayerEdits[],
  options: Options,
  operation: string,
) => Promise<{ outcome: EditOutcome; moment: number }>;

/** Each list of a layer's results, as answered: with rollback of a failed request, only the edits that failed. */
function answered(results: readonly EditResult[], outcome: EditOutcome): EditResult[] {
  return outcome.committed ? [...results] : results.filter((r) => !r.success);
}

function layerAnswer(l: LayerEditResults, outcome: EditOutcome, options: Options, moment: number) {
  return {
    addResults: answered(l.addResults, outcome),
    updateResults: answered(l.updateResults, outcome),
    deleteResults: answered(l.deleteResults, outcome),
    ...(l.attachments
      ? {
          attachments: {
            addResults: answered(l.attachments.addResults, outcome),
            updateResults: answered(l.attachments.updateResults, outcome),
            deleteResults: answered(l.attachments.deleteResults, outcome),
          },
        }
      : {}),
    ...(options.returnEditMoment && outcome.committed ? { editMoment: moment } : {}),
  };
}

function layerIdOf(req: RestRequest): number {
  const layer = req.pathParameters.layer ?? "";
  if (!LAYER_ID.test(layer)) throw new ApiError(404, "Not Found", [`'${layer.slice(0, 32)}' is no layer id.`]);
  return Number(layer);
}

export type LayerOperation = "applyEdits" | "addFeatures" | "updateFeatures" | "deleteFeatures";

/** POST …/FeatureServer/<id>/{applyEdits,addFeatures,updateFeatures,deleteFeatures}. */
/** A layer's edits, read and answered as ArcGIS answers them, made by `runner` (a hosted store's, or a database's). */
export async function editLayerWith(req: RestRequest, operation: LayerOperation, runner: EditRunner): Promise<object> {
  const layerId = layerIdOf(req);
  const options = optionsOf(req);
  const p = req.params;
  let edits: RawLayerEdits;
  if (operation === "applyEdits") {
    const attachments = await attachmentsOf(p.caseless("attachments"), options.useGlobalIds);
    edits = {
      layerId,
      adds: featureList(p.caseless("adds"), "adds"),
      updates: featureList(p.caseless("updates"), "updates"),
      deletes: deleteList(p.caseless("deletes"), "deletes", options.useGlobalIds),
      ...(attachments ? { attachments } : {}),
    };
  } else if (operation === "addFeatures") {
    edits = { layerId, adds: featureList(p.caseless("features"), "features"), updates: [], deletes: [] };
  } else if (operation === "updateFeatures") {
    edits = { layerId, adds: [], updates: featureList(p.caseless("features"), "features"), deletes: [] };
  } else {
    const objectIds = p.caseless("objectIds");
    const query = new Map<string, string>();
    for (const n of ["where", "geometry", "geometryType", "spatialRel", "inSR"]) {
      const v = p.caseless(n);
      if (v !== undefined && v.trim() !== "") query.set(n, v);
    }
    if ((objectIds === undefined || objectIds.trim() === "") && !query.has("where") && !query.has("geometry"))
      throw badRequest(WHAT, [
        "deleteFeatures needs 'objectIds', 'where' or 'geometry' to name the features to delete.",
      ]);
    edits = {
      layerId,
      adds: [],
      updates: [],
      deletes: deleteList(objectIds, "objectIds", false),
      ...(query.has("where") || query.has("geometry") ? { deleteQuery: query } : {}),
    };
  }
  const { outcome, moment } = await runner(
    req,
    [edits],
    { ...options, ...(operation === "deleteFeatures" ? { useGlobalIds: false } : {}) },
    operation,
  );
  const layer = outcome.layers[0] as LayerEditResults;
  const answer = layerAnswer(layer, outcome, options, moment);
  if (operation === "addFeatures") return { addResults: answer.addResults };
  if (operation === "updateFeatures") return { updateResults: answer.updateResults };
  if (operation === "deleteFeatures") return { deleteResults: answer.deleteResults };
  return answer;
}

/** POST …/FeatureServer/applyEdits: `edits` = [{id, adds, updates, deletes}], every layer in one transaction. */
/** A service's applyEdits, read and answered as ArcGIS answers it, made by `runner`. */
export async function editServiceWith(req: RestRequest, runner: EditRunner): Promise<object> {
  const options = optionsOf(req);
  const value = jsonParam(req.params.caseless("edits"), "edits");
  if (!Array.isArray(value) || value.length === 0)
    throw badRequest(WHAT, ['\'edits\' must be a JSON array of {"id": <layer id>, "adds", "updates", "deletes"}.']);
  const edits = value.map((e, i): RawLayerEdits => {
    if (!isObject(e) || typeof e.id !== "number" || !LAYER_ID.test(String(e.id)))
      throw badRequest(WHAT, [`edits[${i}] must be an object whose 'id' is a layer id.`]);
    // Not taken silently: a layer's attachments are sent to its own applyEdits here.
    if (e.attachments !== undefined && e.attachments !== null)
      throw badRequest(WHAT, [
        `edits[${i}].attachments: send a layer's attachments to its own applyEdits (…/FeatureServer/${e.id}/applyEdits).`,
      ]);
    const list = (v: unknown, name: string) => {
      if (v === undefined || v === null) return [];
      if (!Array.isArray(v)) throw badRequest(WHAT, [`edits[${i}].${name} must be an array.`]);
      return v;
    };
    return {
      layerId: e.id,
      adds: list(e.adds, "adds"),
      updates: list(e.updates, "updates"),
      deletes: deleteList(e.deletes, `edits[${i}].deletes`, options.useGlobalIds),
    };
  });
  const { outcome, moment } = await runner(req, edits, options, "applyEdits");
  return outcome.layers.map((l) => ({ id: l.layerId, ...layerAnswer(l, outcome, options, moment) }));
}
