// Hosted feature services defined by their clients, as ArcGIS REST JS's createFeatureService and
// addToServiceDefinition make them: `content/users/<u>/createService` (a hosted service with no layers yet: its
// data, its service in the hosting server's Hosted folder and its item, as publishing makes them) and the server's
// admin wire below `/<server>/rest/admin/services/Hosted/<name>/FeatureServer`: addToDefinition, updateDefinition
// and deleteFromDefinition of layers and tables (the service's) and of fields (a layer's), and a layer's truncate.
// A change is checked here against the service's current layers and fields, then made by the hosted store
// (shared/hosted/store.ts: whole or not at all) under a lock on the service's item so that no change is lost to
// another made at once; the data's new size counts against the owner's quota, and the service record's `layers`
// (which names each layer's table by id) changes in the same transaction. Only the service's owner or an
// administrator of its organization changes it, and its capabilities (editing on and off: shared/hosted/edit.ts).
import { TRACKING, TRACKING_NAMES, trackingSpecs } from "#shared/hosted/tracking.ts";
import { capabilitiesSetting, EDITABLE_CAPABILITIES } from "#shared/features/capabilities.ts";
import { ATTACH_SUFFIX, deleteAllAttachments } from "#shared/features/sql/attachments.ts";
import { namedFolder } from "#shared/user-content.ts";
import { EDITING_FORM } from "#shared/item-pages.ts";
import type { ColumnSpec, ColumnType, GeometryTypeName } from "#shared/features/geopackage-writer.ts";
import { type LayerSchema, systemFields } from "#shared/features/schema.ts";
import { openDataset } from "#shared/features/sources.ts";
import { emit } from "#shared/stores/events.ts";
import { config } from "#shared/config.ts";
import { ApiError, badRequest, forbidden } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import { serviceItem } from "#shared/items.ts";
import { logger } from "#shared/log.ts";
import { HOSTED_FOLDER, restServiceUrl } from "#shared/publishing.ts";
import { hostingServer, SERVICE_NAME, textLength } from "#shared/hosted/publish.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { readEditorTracking } from "#shared/features/ownership.ts";
import { type DefinedLayer, type DefinitionChange, type HostedDefinitions } from "#shared/hosted/store.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import { MAX_FIELDS, MAX_TEXT, RESERVED, RESERVED_TABLE } from "#shared/hosted/tables.ts";
import { failedConditions, retryingConflicts } from "#shared/stores/dynamo.ts";
import {
  DefinitionBusyError,
  getItem,
  type Item,
  lockHostedData,
  quotaFailure,
  settleHostedData,
  StorageQuotaError,
  unlockHostedData,
  usageCharge,
} from "#shared/stores/items.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import {
  createService,
  getService,
  type HostedLayerEntry,
  type Service,
  ServiceExistsError,
  serviceLayersUpdate,
  serviceNameTaken,
  type ServiceEditing,
  setServiceCapabilities,
} from "#shared/stores/services.ts";
import { getUser } from "#shared/stores/users.ts";
import { createView, viewOperation } from "#shared/hosted/view-define.ts";
import {
  type Defined,
  definedService,
  definitionOf,
  editingFormDefinition,
  onlyKeys,
  ownedFeatureService,
  serviceNotFound,
  settingsNotKept,
} from "#shared/hosted/admin-service.ts";
import { quotaExceeded } from "#shared/uploads.ts";

/** The most layers and tables one defined service holds. */
export const MAX_LAYERS = 100;
const MAX_ALIAS = 255;

/**
 * The highest layer id: ids are positions in the service record's `layers`, and a deleted layer's id is never given
 * again, so a service gives at most this many ids over its life.
 */
const MAX_LAYER_ID = 999;
/** How long a change waits for another change of the same service to finish before it is refused. */
const LOCK_WAIT_MS = 10_000;

// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;
/**
 * A field's name: what SQL and every client can name without quoting, as publishing makes them, and no longer than
 * PostgreSQL keeps a name (63 bytes: a longer one would be cut there, silently).
 */
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;
/** Names a defined layer may not take: the GeoPackage's own tables, and mapgate's. */
const RESERVED_LAYER = /^(gpkg_|rtree_|sqlite_|mapgate_)/i;

/**
 * The column each field type takes, as wide as ArcGIS's type (SmallInteger 16 bits, Integer 32: GeoPackage's 32-bit
 * type is MEDIUMINT, its INTEGER 64-bit; PostgreSQL hosting maps these to smallint and integer).
 */
const FIELD_COLUMNS: Readonly<Record<string, ColumnType>> = {
  esriFieldTypeSmallInteger: "SMALLINT",
  esriFieldTypeInteger: "MEDIUMINT",
  esriFieldTypeSingle: "FLOAT",
  esriFieldTypeDouble: "DOUBLE",
  esriFieldTypeString: "TEXT",
  esriFieldTypeDate: "DATETIME",
};
/** Field types ArcGIS has that a hosted layer here does not keep yet: said so, rather than "unknown". */
const NOT_YET_FIELDS = new Set([
  "esriFieldTypeBigInteger",
  "esriFieldTypeGUID",
  "esriFieldTypeBlob",
  "esriFieldTypeRaster",
  "esriFieldTypeXML",
  "esriFieldTypeDateOnly",
  "esriFieldTypeTimeOnly",
  "esriFieldTypeTimestampOffset",
]);

/** Layer geometry types and the GeoPackage columns holding them (multi-part, so single parts fit too). */
const GEOMETRIES: Readonly<Record<string, GeometryTypeName>> = {
  esriGeometryPoint: "POINT",
  esriGeometryMultipoint: "MULTIPOINT",
  esriGeometryPolyline: "MULTILINESTRING",
  esriGeometryPolygon: "MULTIPOLYGON",
};
/** Coordinate systems a definition may name: hosted data is kept in WGS 84, and Web Mercator is shown from it. */
const SPATIAL_REFERENCES = new Set([4326, 3857, 102100, 102113, 900913]);

const WHAT = {
  create: "Unable to create service.",
  add: "Unable to add feature service definition.",
  update: "Unable to update feature service definition.",
  delete: "Unable to delete feature service definition.",
  truncate: "Unable to truncate layer.",
} as const;

const say = (v: unknown) => JSON.stringify(typeof v === "string" ? v.slice(0, 64) : v)?.slice(0, 80) ?? "undefined";
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A spatial reference as definitions give it (`{wkid}` or `{latestWkid}`), checked; undefined is fine. */
function checkSpatialReference(sr: unknown, where: string, problems: string[]): void {
  if (sr === undefined || sr === null) return;
  const wkid = isObject(sr) ? (sr.latestWkid ?? sr.wkid) : undefined;
  if (typeof wkid !== "number" || !SPATIAL_REFERENCES.has(wkid))
    problems.push(
      `${where}: the spatial reference ${say(isObject(sr) ? (sr.wkid ?? sr.wkt ?? null) : sr)} is not one hosted layers take (WGS 84, wkid 4326, or Web Mercator, 102100/3857: hosted data is kept in WGS 84).`,
    );
}

interface FieldDefinition {
  readonly column: ColumnSpec;
  readonly oid: boolean;
}

/** One field of a definition, checked; undefined (with its problems said) when it cannot be one. */
function fieldOf(raw: unknown, where: string, problems: string[]): FieldDefinition | "skip" | undefined {
  if (!isObject(raw)) {
    problems.push(`${where}: each field must be a JSON object.`);
    return undefined;
  }
  const { name, type, alias, length } = raw;
  if (type === "esriFieldTypeGeometry") return "skip"; // The layer's geometry, said by its geometryType.
  // A layer's global id and tracking fields are the server's own (every new layer has them): a definition's are left
  // out, as a definition copied from a layer that has them names them.
  if (type === "esriFieldTypeGlobalID" || (typeof name === "string" && TRACKING_NAMES.has(name.toLowerCase())))
    return "skip";
  const shown = typeof name === "string" ? name.slice(0, 64) : say(name);
  let ok = true;
  if (typeof name !== "string" || !FIELD_NAME.test(name)) {
    problems.push(
      `${where}: the field name ${say(name)} must be 1–63 letters (A–Z), digits and underscores, beginning with a letter.`,
    );
    ok = false;
  }
  if (typeof type !== "string" || (type !== "esriFieldTypeOID" && !(type in FIELD_COLUMNS))) {
    problems.push(
      typeof type === "string" && NOT_YET_FIELDS.has(type)
        ? `${where}: field '${shown}' is of type ${type}, which hosted layers do not keep yet.`
        : `${where}: field '${shown}' has an unknown type ${say(type)} (one of esriFieldTypeOID, ${Object.keys(FIELD_COLUMNS).join(", ")}).`,
    );
    ok = false;
  }
  if (
    alias !== undefined &&
    alias !== null &&
    (typeof alias !== "string" || alias.length > MAX_ALIAS || CONTROL.test(alias))
  ) {
    problems.push(
      `${where}: the alias of field '${shown}' must be text of at most ${MAX_ALIAS} characters, without control characters.`,
    );
    ok = false;
  }
  if (
    type === "esriFieldTypeString" &&
    length !== undefined &&
    length !== null &&
    (typeof length !== "number" || !Number.isInteger(length) || length < 1 || length > MAX_TEXT)
  ) {
    problems.push(`${where}: the length of field '${shown}' must be a whole number from 1 to ${MAX_TEXT}.`);
    ok = false;
  }
  if (!ok || typeof name !== "string" || typeof type !== "string") return undefined;
  if (type === "esriFieldTypeOID") return { oid: true, column: { name, type: "INTEGER" } };
  if (RESERVED.has(name.toLowerCase())) {
    problems.push(`${where}: '${name}' is a name hosted layers keep for themselves: name the field otherwise.`);
    return undefined;
  }
  return {
    oid: false,
    column: {
      name,
      type: FIELD_COLUMNS[type] as ColumnType,
      ...(type === "esriFieldTypeString" ? { maxLength: typeof length === "number" ? length : textLength(0) } : {}),
      ...(typeof alias === "string" && alias !== "" ? { title: alias } : {}),
    },
  };
}

/** A list of fields, checked: no name twice (case-insensitively, with `taken` ones), at most one object id. */
function fieldsOf(
  raw: unknown,
  where: string,
  problems: string[],
  taken: ReadonlySet<string> = new Set(),
): { columns: ColumnSpec[]; oid: string | undefined } {
  if (raw === undefined || raw === null) return { columns: [], oid: undefined };
  if (!Array.isArray(raw)) {
    problems.push(`${where}: 'fields' must be a list.`);
    return { columns: [], oid: undefined };
  }
  if (raw.length + taken.size > MAX_FIELDS) {
    problems.push(`${where}: a layer has at most ${MAX_FIELDS} fields.`);
    return { columns: [], oid: undefined };
  }
  const seen = new Set(taken);
  const columns: ColumnSpec[] = [];
  let oid: string | undefined;
  for (const f of raw) {
    const field = fieldOf(f, where, problems);
    if (field === undefined || field === "skip") continue;
    const lower = field.column.name.toLowerCase();
    if (seen.has(lower)) {
      problems.push(`${where}: field '${field.column.name}' is given twice or exists already.`);
      continue;
    }
    seen.add(lower);
    if (field.oid) {
      if (oid !== undefined) problems.push(`${where}: a layer has one esriFieldTypeOID field, not two.`);
      oid = field.column.name;
    } else columns.push(field.column);
  }
  return { columns, oid };
}

interface LayerDefinition {
  readonly id: number | undefined;
  readonly name: string;
  readonly geometryType: GeometryTypeName | undefined;
  readonly idColumn: string;
  readonly columns: ColumnSpec[];
  /** hasAttachments: true (the layer keeps attachments from the start). */
  readonly attachments: boolean;
}

/** One layer (or table) of an addToDefinition, checked without the service: what it can say on its own. */
function layerOf(
  raw: unknown,
  kind: "layers" | "tables",
  index: number,
  problems: string[],
): LayerDefinition | undefined {
  const where = `${kind}[${index}]`;
  if (!isObject(raw)) {
    problems.push(`${where} must be a JSON object.`);
    return undefined;
  }
  const before = problems.length;
  const name = typeof raw.name === "string" ? raw.name.trim() : "";
  const label = name ? `${kind === "layers" ? "Layer" : "Table"} '${name.slice(0, 64)}'` : where;
  if (
    name === "" ||
    name.length > 120 ||
    CONTROL.test(name) ||
    RESERVED_LAYER.test(name) ||
    name.includes("/") ||
    name.toUpperCase().endsWith(ATTACH_SUFFIX)
  )
    problems.push(
      `${label}: a name of 1–120 characters is required, without control characters or '/', not beginning with gpkg_, rtree_, sqlite_ or mapgate_ nor ending with ${ATTACH_SUFFIX} (a layer's attachment table).`,
    );
  const hasAttachments = raw.hasAttachments;
  if (hasAttachments !== undefined && hasAttachments !== null && typeof hasAttachments !== "boolean")
    problems.push(`${label}: 'hasAttachments' must be true or false (got ${say(hasAttachments)}).`);
  const table = kind === "tables" || raw.type === "Table";
  const g = raw.geometryType;
  let geometryType: GeometryTypeName | undefined;
  if (table) {
    if (g !== undefined && g !== null && g !== "" && g !== "esriGeometryNone")
      problems.push(`${label}: a table has no geometry (its geometryType was ${say(g)}).`);
  } else if (typeof g !== "string" || !(g in GEOMETRIES)) {
    problems.push(`${label}: 'geometryType' must be one of ${Object.keys(GEOMETRIES).join(", ")} (got ${say(g)}).`);
  } else geometryType = GEOMETRIES[g];
  if (raw.type !== undefined && raw.type !== "Feature Layer" && raw.type !== "Table")
    problems.push(`${label}: 'type' must be "Feature Layer" or "Table" (got ${say(raw.type)}).`);
  if (raw.hasZ === true || raw.hasM === true) problems.push(`${label}: hosted layers are 2D (hasZ and hasM false).`);
  checkSpatialReference(isObject(raw.extent) ? raw.extent.spatialReference : undefined, label, problems);
  checkSpatialReference(raw.spatialReference, label, problems);
  const id = raw.id;
  if (
    id !== undefined &&
    id !== null &&
    (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > MAX_LAYER_ID)
  )
    problems.push(`${label}: 'id' must be a whole number from 0 to ${MAX_LAYER_ID}.`);
  const { columns, oid } = fieldsOf(raw.fields, label, problems);
  const objectIdField = raw.objectIdField;
  if (objectIdField !== undefined && objectIdField !== null && objectIdField !== "") {
    if (typeof objectIdField !== "string" || !FIELD_NAME.test(objectIdField))
      problems.push(`${label}: 'objectIdField' ${say(objectIdField)} is no field name.`);
    else if (oid !== undefined && oid.toLowerCase() !== objectIdField.toLowerCase())
      problems.push(`${label}: 'objectIdField' names '${objectIdField}', but the esriFieldTypeOID field is '${oid}'.`);
    else if (oid === undefined && columns.some((c) => c.name.toLowerCase() === objectIdField.toLowerCase()))
      problems.push(`${label}: 'objectIdField' names '${objectIdField}', which is not an esriFieldTypeOID field.`);
  }
  if (problems.length > before) return undefined;
  const idColumn = oid ?? (typeof objectIdField === "string" && objectIdField !== "" ? objectIdField : "OBJECTID");
  return {
    id: typeof id === "number" ? id : undefined,
    name,
    geometryType,
    idColumn,
    columns,
    attachments: hasAttachments === true,
  };
}

/** Only hosted services' definitions change here (a by-reference PostgreSQL layer's capabilities aside). */
const onlyHosted = () =>
  badRequest("Unable to complete operation.", [
    "Only hosted feature services (made by publishing a file or by createService) are changed here.",
  ]);

/**
 * The hosted feature service `folder/name` of the addressed server, with its item, for a change of it: one the
 * caller cannot see is not told to exist (404); one they see but neither own nor administer is refused (403). A
 * hosted view is one only where `views` says so (its definition's changes): its rows are its source's.
 */
export async function ownedHostedService(
  req: RestRequest,
  folder: string,
  name: string,
  views = false,
): Promise<{ readonly service: Service; readonly item: Item }> {
  const owned = await ownedFeatureService(req, folder, name);
  if (owned.service.view && !views)
    throw badRequest("Unable to complete operation.", [
      "This service is a view: its rows are its source service's, changed there.",
    ]);
  if (!owned.service.view && owned.service.source?.datastoreId !== HOSTED_STORE_ID) throw onlyHosted();
  return owned;
}

/** A hosted service as it is under its lock, and how a change of its data is kept. */
export interface Locked {
  /** The service record as it is now. */
  readonly service: Service;
  /** Its item as it is now. */
  readonly item: Item;
  /** Its layers' tables by id (null: deleted); a service published with one layer has its table as 0. */
  readonly layers: readonly HostedLayerEntry[];
  /**
   * The change as the store makes it: its settle counts the new size, gives the record `layers` (when given) and the
   * next revision, and the item the extent the store gives; the store keeps the change only once settled.
   */
  settle(layers?: readonly HostedLayerEntry[]): DefinitionChange;
}

/** A service's current definition, read under its lock, and how a change of it is kept. */
interface Current extends Locked {
  readonly store: HostedDefinitions;
}

/**
 * Runs `change` under the service's lock with its current definition; the data's new size is counted (and the
 * owner's quota checked) and the record's layers changed in one transaction before the store keeps the change, so
 * a refusal (a thrown ApiError) leaves the service as it was. One change of a service at a time.
 */
async function changeDefinition<T>(
  defined: Defined,
  what: string,
  change: (current: Current) => Promise<T>,
): Promise<T> {
  const store = (await hostedStore()).definitions;
  return underServiceLock(defined, what, (locked) => change({ ...locked, store }));
}

const cornersOf = (extent: Item["extent"]): [number, number, number, number] | undefined => {
  const [[a, b] = [], [c, d] = []] = extent ?? [];
  return [a, b, c, d].every((x) => typeof x === "number")
    ? ([a, b, c, d] as [number, number, number, number])
    : undefined;
};

/**
 * Runs `change` of a hosted service's data or definition under the service's lock (shared by the admin wire's
 * changes, append and overwrite, so none interleaves with another): the item and service are read again under it,
 * and whatever `settle` recorded is put back if the store then fails to keep the change.
 */
export async function underServiceLock<T>(
  defined: { readonly service: Service; readonly item: Item },
  what: string,
  change: (locked: Locked) => Promise<T>,
): Promise<T> {
  const { item } = defined;
  let stamp: number | undefined;
  // Changes of one service take turns: a change waits (a little longer each time) for the one running to finish.
  for (let attempt = 0, waited = 0; stamp === undefined; attempt++) {
    try {
      stamp = await lockHostedData(item);
    } catch (err) {
      if (!(err instanceof DefinitionBusyError)) throw err;
      if (waited >= LOCK_WAIT_MS)
        throw new ApiError(409, what, ["Another change of this service's definition is running: try again shortly."]);
      const pause = Math.min(500, 20 * 2 ** attempt) * (0.5 + Math.random() / 2);
      await new Promise((r) => setTimeout(r, pause));
      waited += pause;
    }
  }
  const held = stamp;
  const quota = config().storageQuota;
  try {
    // Read again under the lock: the size and layers a change made before it took the lock are the ones to change.
    const [current, service] = await Promise.all([
      getItem(item.itemId),
      getService(defined.service.serverId, defined.service.folder, defined.service.name),
    ]);
    if (!current || !service?.source || service.itemId !== item.itemId) throw serviceNotFound();
    const source = service.source;
    const layers = source.layers ?? [source.path.split("/").at(-1) ?? ""];
    // Every change moves the revision (fields and rows alike), and with it the catalog's version: readers that keep
    // a layer's schema (its fields, its extent) read it again.
    const revision = (source.revision ?? 0) + 1;
    let settled: number | undefined;
    const settle = (next?: readonly HostedLayerEntry[]): DefinitionChange => ({
      revision,
      settle: async (bytes, extent) => {
        try {
          const record = serviceLayersUpdate(service, next ?? layers, revision);
          await settleHostedData(current, held, bytes, quota, record, extent);
        } catch (err) {
          if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, quota);
          // The item or its service deleted meanwhile (its lock or its record gone): nothing is kept.
          if ((failedConditions(err)?.length ?? 0) > 0) throw serviceNotFound();
          throw err;
        }
        settled = bytes;
      },
    });
    try {
      return await change({ service, item: current, layers, settle });
    } catch (err) {
      // Counted and recorded, but the store could not keep the data (an upload that failed): the record is put back.
      if (settled !== undefined) {
        // The layers and the revision the data still has (a reader that saw the new revision meanwhile kept no
        // schema of it: the data never reached it), and the item's extent as it was.
        const back = serviceLayersUpdate(service, source.layers ?? layers, source.revision ?? 0);
        await settleHostedData(
          { ...current, hostedData: settled },
          held,
          current.hostedData ?? 0,
          quota,
          back,
          cornersOf(current.extent),
        ).catch((e: unknown) =>
          logger.error("hosted definition not put back", { itemId: item.itemId, error: String(e) }),
        );
      }
      throw err;
    }
  } finally {
    await unlockHostedData(item, held).catch((e: unknown) =>
      logger.warn("definition lock not released", { itemId: item.itemId, error: String(e) }),
    );
  }
}

/** The table of layer `id` of the service, which it must serve. */
function tableOf(current: Current, id: number, what: string): string {
  const table = current.layers[id];
  if (typeof table !== "string") throw badRequest(what, [`The service has no layer or table with id ${id}.`]);
  return table;
}

/** Layer `id`'s schema as it is served (its fields, object id and geometry), read under the lock. */
async function schemaOf(current: Current, id: number): Promise<LayerSchema> {
  const source = current.service.source;
  if (!source) throw new Error("a hosted service without a source");
  return (await openDataset({ ...source, layers: current.layers }, id)).schema;
}

/** The names a layer's columns take: its fields', and its geometry's. */
const columnNames = (schema: LayerSchema) => [
  ...schema.fields.map((f) => f.column.toLowerCase()),
  ...(schema.geometry ? [schema.geometry.column.toLowerCase()] : []),
];

/** Service-level addToDefinition: new layers and tables, empty, with their fields. */
function addToService(defined: Defined, definition: Record<string, unknown>) {
  const what = WHAT.add;
  const problems: string[] = [];
  const unknown = Object.keys(definition).filter((k) => k !== "layers" && k !== "tables");
  if (unknown.length > 0)
    problems.push(
      `Only layers and tables are added to a service here (not ${unknown
        .slice(0, 5)
        .map((k) => `'${k.slice(0, 32)}'`)
        .join(", ")}).`,
    );
  const lists = (["layers", "tables"] as const).map((kind) => {
    const list = definition[kind] ?? [];
    if (!Array.isArray(list)) {
      problems.push(`'${kind}' must be a list.`);
      return [];
    }
    if (list.length > MAX_LAYERS) {
      problems.push(`A service has at most ${MAX_LAYERS} layers and tables.`);
      return [];
    }
    return list.map((raw, i) => layerOf(raw, kind, i, problems));
  });
  const [layers = [], tables = []] = lists;
  const all = [...layers, ...tables].filter((l): l is LayerDefinition => l !== undefined);
  if (problems.length === 0 && all.length === 0) problems.push("Give at least one layer or table to add.");
  const names = new Set<string>();
  for (const l of all) {
    if (names.has(l.name.toLowerCase())) problems.push(`The name '${l.name.slice(0, 64)}' is given twice.`);
    names.add(l.name.toLowerCase());
  }
  if (problems.length > 0) throw badRequest(what, problems);
  return changeDefinition(defined, what, async (current) => {
    const listed = current.layers.flatMap((table, id) => (table === null ? [] : [{ id, table }]));
    if (listed.length + all.length > MAX_LAYERS)
      throw badRequest(what, [`A service has at most ${MAX_LAYERS} layers and tables (it has ${listed.length}).`]);
    const existing = new Set(listed.map((l) => l.table.toLowerCase()));
    const clash = all.filter((l) => existing.has(l.name.toLowerCase()));
    if (clash.length > 0)
      throw badRequest(
        what,
        clash.map((l) => `The service has a layer or table named '${l.name.slice(0, 64)}' already.`),
      );
    // An id given is a new one: every id below the service's count was given before (to a layer that is there, or
    // to one deleted, whose id stays its own).
    const given = new Set<number>();
    const taken = all.filter((l) => {
      if (l.id === undefined) return false;
      const twice = l.id < current.layers.length || given.has(l.id);
      given.add(l.id);
      return twice;
    });
    if (taken.length > 0)
      throw badRequest(
        what,
        taken.map((l) => `Layer id ${l.id} is taken (a deleted layer's id is never given again).`),
      );
    const next: HostedLayerEntry[] = [...current.layers];
    let free = Math.max(current.layers.length, ...[...given].map((id) => id + 1));
    const numbered = all.map((l) => ({ ...l, id: l.id ?? free++ }));
    if (free - 1 > MAX_LAYER_ID)
      throw badRequest(what, [`The service has given its ${MAX_LAYER_ID + 1} layer ids: no more layers are added.`]);
    for (const l of numbered) {
      while (next.length <= l.id) next.push(null);
      next[l.id] = l.name;
    }
    const added: DefinedLayer[] = numbered.map((l) => ({
      name: l.name,
      ...(l.geometryType ? { geometryType: l.geometryType } : {}),
      idColumn: l.idColumn,
      // Each new layer gets a global id and editor tracking, recorded with it.
      columns: [...l.columns, ...trackingSpecs()],
      editing: TRACKING,
      ...(l.attachments ? { attachments: true } : {}),
    }));
    await current.store.addLayers(current.service.itemId, added, current.settle(next));
    const summary = (list: readonly (LayerDefinition | undefined)[]) =>
      numbered.filter((n) => list.some((l) => l?.name === n.name)).map((n) => ({ name: n.name, id: n.id }));
    return { success: true, layers: summary(layers), tables: summary(tables) };
  });
}

/** Service-level deleteFromDefinition: layers and tables, with their rows, by id. */
function deleteFromService(defined: Defined, definition: Record<string, unknown>) {
  const what = WHAT.delete;
  const problems: string[] = [];
  const ids: number[] = [];
  for (const kind of ["layers", "tables"] as const) {
    const list = definition[kind] ?? [];
    if (!Array.isArray(list) || list.length > MAX_LAYERS) {
      problems.push(`'${kind}' must be a list of at most ${MAX_LAYERS} {"id": <n>}.`);
      continue;
    }
    for (const entry of list) {
      // ArcGIS's own examples write ids as text ("0").
      const id = isObject(entry) ? Number(entry.id) : NaN;
      if (
        !isObject(entry) ||
        !Number.isInteger(id) ||
        id < 0 ||
        (typeof entry.id !== "number" && typeof entry.id !== "string")
      )
        problems.push(`Each of '${kind}' must be {"id": <a layer's id>} (got ${say(entry)}).`);
      else ids.push(id);
    }
  }
  if (problems.length === 0 && ids.length === 0) problems.push("Give the ids of the layers or tables to delete.");
  if (problems.length > 0) throw badRequest(what, problems);
  return changeDefinition(defined, what, async (current) => {
    const missing = ids.filter((id) => typeof current.layers[id] !== "string");
    if (missing.length > 0)
      throw badRequest(
        what,
        missing.map((id) => `The service has no layer or table with id ${id}.`),
      );
    const next: HostedLayerEntry[] = [...current.layers];
    const tables: string[] = [];
    for (const id of new Set(ids)) {
      tables.push(current.layers[id] as string);
      next[id] = null;
    }
    await current.store.deleteLayers(current.service.itemId, tables, current.settle(next));
    return { success: true };
  });
}

/** Layer-level addToDefinition: new fields (empty in every row). */
function addFields(defined: Defined, id: number, definition: Record<string, unknown>) {
  const what = WHAT.add;
  const unknown = Object.keys(definition).filter((k) => k !== "fields");
  if (unknown.length > 0)
    throw badRequest(what, [
      `Only fields are added to a layer here (not ${unknown
        .slice(0, 5)
        .map((k) => `'${k.slice(0, 32)}'`)
        .join(", ")}).`,
    ]);
  const shape: string[] = [];
  fieldsOf(definition.fields, "fields", shape);
  if (shape.length > 0) throw badRequest(what, shape);
  return changeDefinition(defined, what, async (current) => {
    const table = tableOf(current, id, what);
    const schema = await schemaOf(current, id);
    const problems: string[] = [];
    const { columns, oid } = fieldsOf(definition.fields, "fields", problems, new Set(columnNames(schema)));
    if (oid !== undefined) problems.push("A layer has its esriFieldTypeOID field already.");
    if (problems.length === 0 && columns.length === 0) problems.push("Give at least one field to add.");
    if (problems.length > 0) throw badRequest(what, problems);
    await current.store.addFields(current.service.itemId, table, columns, current.settle());
    return { success: true };
  });
}

/** The fields a layer-level update or delete names, by name (case-insensitively): each must exist. */
function namedFields(raw: unknown, what: string): Record<string, unknown>[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_FIELDS)
    throw badRequest(what, [`'fields' must be a list of 1 to ${MAX_FIELDS} fields, each {"name": …}.`]);
  const problems: string[] = [];
  for (const f of raw)
    if (!isObject(f) || typeof f.name !== "string" || f.name === "")
      problems.push(`Each field must name itself (got ${say(f)}).`);
  if (problems.length > 0) throw badRequest(what, problems);
  return raw as Record<string, unknown>[];
}

/** Layer-level deleteFromDefinition: fields, with their values. */
function deleteFields(defined: Defined, id: number, definition: Record<string, unknown>) {
  const what = WHAT.delete;
  const unknown = Object.keys(definition).filter((k) => k !== "fields");
  if (unknown.length > 0)
    throw badRequest(what, [
      `Only fields are deleted from a layer here (not ${unknown
        .slice(0, 5)
        .map((k) => `'${k.slice(0, 32)}'`)
        .join(", ")}).`,
    ]);
  const fields = namedFields(definition.fields, what);
  return changeDefinition(defined, what, async (current) => {
    const table = tableOf(current, id, what);
    const schema = await schemaOf(current, id);
    const geometry = schema.geometry?.column.toLowerCase();
    const problems: string[] = [];
    const drop: string[] = [];
    for (const f of fields) {
      const name = String(f.name);
      const lower = name.toLowerCase();
      const field = schema.fields.find((c) => c.name.toLowerCase() === lower);
      const isOid = field?.type === "esriFieldTypeOID";
      if (lower === geometry)
        problems.push(`'${schema.geometry?.column ?? name}' is the layer's geometry: it cannot be deleted.`);
      else if (!field) problems.push(`The layer has no field '${name.slice(0, 64)}'.`);
      else if (isOid) problems.push(`'${field.name}' is the layer's object id: it cannot be deleted.`);
      // Its editing record names them: the server fills them on every edit.
      else if (systemFields(schema).has(lower))
        problems.push(`'${field.name}' is the layer's global id or an editor-tracking field: it cannot be deleted.`);
      else if (!drop.includes(field.column)) drop.push(field.column);
    }
    if (problems.length > 0) throw badRequest(what, problems);
    await current.store.deleteFields(current.service.itemId, table, drop, current.settle());
    return { success: true };
  });
}

/** Layer-level updateDefinition: fields' aliases (a field's name, type and length stay what they are). */
function updateFields(defined: Defined, id: number, definition: Record<string, unknown>) {
  const what = WHAT.update;
  const unknown = Object.keys(definition).filter((k) => k !== "fields");
  if (unknown.length > 0)
    throw badRequest(what, [
      `Only fields' aliases are updated here (not ${unknown
        .slice(0, 5)
        .map((k) => `'${k.slice(0, 32)}'`)
        .join(", ")}).`,
    ]);
  const fields = namedFields(definition.fields, what);
  const problems: string[] = [];
  for (const f of fields) {
    const name = String(f.name).slice(0, 64);
    const extra = Object.keys(f).filter(
      (k) =>
        !["name", "alias", "type", "length", "nullable", "editable", "domain", "defaultValue", "sqlType"].includes(k),
    );
    if (extra.length > 0)
      problems.push(
        `Field '${name}': ${extra
          .slice(0, 5)
          .map((k) => `'${k.slice(0, 32)}'`)
          .join(", ")} cannot be updated here.`,
      );
    const alias = f.alias;
    if (typeof alias !== "string" || alias.length > MAX_ALIAS || CONTROL.test(alias))
      problems.push(
        `Field '${name}': 'alias' must be text of at most ${MAX_ALIAS} characters, without control characters.`,
      );
  }
  if (problems.length > 0) throw badRequest(what, problems);
  return changeDefinition(defined, what, async (current) => {
    const table = tableOf(current, id, what);
    const schema = await schemaOf(current, id);
    const wrong: string[] = [];
    const titles: { name: string; title: string }[] = [];
    for (const f of fields) {
      const name = String(f.name);
      const field = schema.fields.find((c) => c.name.toLowerCase() === name.toLowerCase());
      if (!field) {
        wrong.push(`The layer has no field '${name.slice(0, 64)}'.`);
        continue;
      }
      if (f.type !== undefined && f.type !== field.type)
        wrong.push(`Field '${field.name}': its type cannot be changed (it is ${field.type}).`);
      if (f.length !== undefined && f.length !== null && f.length !== field.length)
        wrong.push(`Field '${field.name}': its length cannot be changed.`);
      titles.push({ name: field.column, title: String(f.alias) });
    }
    if (wrong.length > 0) throw badRequest(what, wrong);
    await current.store.setTitles(current.service.itemId, table, titles, current.settle());
    return { success: true };
  });
}

/**
 * Layer-level truncate: every row deleted (the layer's fields stay; the next object id is 1 again, on both stores),
 * under the same lock as every other change.
 */
function truncate(defined: Defined, id: number) {
  return changeDefinition(defined, WHAT.truncate, async (current) => {
    const table = tableOf(current, id, WHAT.truncate);
    await current.store.truncate(current.service.itemId, table, current.settle());
    return { success: true };
  });
}

/** The keys of a service's own definition that mapgate keeps: its capabilities and who may edit which features. */
const SETTING_KEYS = ["capabilities", "editorTrackingInfo", "publicDataCollection"] as const;

/** A service-level change of settings, checked: the capabilities and the editing settings it sets (absent: kept). */
interface SettingsChange {
  readonly capabilities?: string;
  readonly editing: ServiceEditing;
}

/**
 * Layer-level truncate with attachmentOnly: every attachment of the layer deleted (its features kept), under the same
 * lock as every change; the bytes once the rows are gone.
 */
function truncateAttachments(defined: Defined, id: number) {
  return changeDefinition(defined, WHAT.truncate, async (current) => {
    tableOf(current, id, WHAT.truncate);
    const schema = await schemaOf(current, id);
    if (!schema.attachments) return { success: true };
    const store = await hostedStore();
    const removed = await store.transact(current.service.itemId, (tx) =>
      tx.run(deleteAllAttachments(tx.emitter, schema.table)),
    );
    const { removeAttachmentBytes } = await import("#shared/hosted/attachment-charges.ts");
    await removeAttachmentBytes(
      current.service.itemId,
      removed.map((r) => String(r[0])),
    );
    return { success: true };
  });
}

/**
 * A service's own settings from a definition (updateDefinition's, or those addToDefinition carries beside layers):
 * its capabilities (Query, Create, Update, Delete and Editing are offered, Query always kept); `editorTrackingInfo`
 * as ArcGIS takes it (ownership-based access control and what others and anonymous callers may do; editor tracking
 * is always on for hosted layers here); and `publicDataCollection`, whether anonymous callers may edit the service
 * while it is shared with everyone. A setting a definition leaves out keeps its value.
 */
function settingsOf(definition: Record<string, unknown>, what: string): SettingsChange {
  const problems: string[] = [];
  const { capabilities, editorTrackingInfo: tracking, publicDataCollection } = definition;
  let next: string | undefined;
  if (capabilities !== undefined) {
    const named = capabilitiesSetting(capabilities);
    if ("problem" in named) problems.push(named.problem);
    else next = named.capabilities;
  }
  const editing: Record<string, boolean> = {};
  if (tracking !== undefined) {
    const read = readEditorTracking(tracking, problems);
    if (read.enableEditorTracking === false)
      problems.push(
        "'editorTrackingInfo.enableEditorTracking' cannot be turned off: hosted layers here always record their creators and editors.",
      );
    Object.assign(editing, read.editing);
  }
  if (publicDataCollection !== undefined) {
    if (typeof publicDataCollection !== "boolean") problems.push("'publicDataCollection' must be true or false.");
    else editing.publicDataCollection = publicDataCollection;
  }
  if (problems.length > 0) throw badRequest(what, problems);
  return { ...(next !== undefined ? { capabilities: next } : {}), editing };
}

/** Keeps a service's settings change (the record and the catalog version move together). */
async function keepSettings(defined: Defined, change: SettingsChange): Promise<void> {
  // Read again: a change of the settings made meanwhile keeps what this one does not name.
  const current = await getService(defined.service.serverId, defined.service.folder, defined.service.name);
  if (!current || current.itemId !== defined.service.itemId) throw serviceNotFound();
  const capabilities = change.capabilities ?? current.capabilities;
  const editing = { ...current.editing, ...change.editing };
  if (!(await setServiceCapabilities(current, capabilities, editing)))
    throw await settingsNotKept(current, WHAT.update);
  logger.info("hosted service settings changed", { itemId: defined.service.itemId, capabilities, editing });
}

/**
 * Service-level updateDefinition: what the service says of itself that mapgate keeps (SETTING_KEYS); anything else
 * is named as not changed here.
 */
async function updateService(defined: Defined, definition: Record<string, unknown>): Promise<object> {
  onlyKeys(
    definition,
    SETTING_KEYS,
    WHAT.update,
    "A service's own definition",
    ": change a layer's fields at …/FeatureServer/<id>/updateDefinition, and the item's description with its item's update.",
  );
  await keepSettings(defined, settingsOf(definition, WHAT.update));
  return { success: true };
}

/**
 * Service-level addToDefinition: layers and tables, and the settings ArcGIS clients also add this way
 * (`editorTrackingInfo`); the settings are checked before any layer is made and kept once the layers are.
 */
async function addToServiceWithSettings(defined: Defined, definition: Record<string, unknown>): Promise<object> {
  const settings: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(definition))
    ((SETTING_KEYS as readonly string[]).includes(k) ? settings : rest)[k] = v;
  if (Object.keys(settings).length === 0) return addToService(defined, rest);
  const change = settingsOf(settings, WHAT.add);
  const answer = Object.keys(rest).length > 0 ? await addToService(defined, rest) : { success: true };
  await keepSettings(defined, change);
  return answer;
}

const OPERATIONS = ["addToDefinition", "updateDefinition", "deleteFromDefinition"] as const;
type DefinitionOperation = (typeof OPERATIONS)[number];

/** POST /<server>/rest/admin/services/<folder>/<name>/FeatureServer[/<id>]/<operation>. */
export async function adminOperation(req: RestRequest): Promise<object> {
  const defined = await definedService(req);
  if (defined.service.view) return viewOperation(req, defined);
  if (defined.service.source?.datastoreId !== HOSTED_STORE_ID) return byReference(req, defined);
  const [first, second, ...rest] = defined.resource;
  const layerId = first !== undefined && /^(0|[1-9]\d{0,8})$/.test(first) ? Number(first) : undefined;
  const operation = layerId === undefined ? first : second;
  if (rest.length > 0 || operation === undefined || (layerId === undefined && second !== undefined))
    throw new ApiError(404, "Not Found", [
      "The admin wire of a hosted feature service answers addToDefinition, updateDefinition and deleteFromDefinition (of the service and of a layer) and a layer's truncate.",
    ]);
  if (operation === "truncate") {
    if (layerId === undefined)
      throw new ApiError(404, "Not Found", ["truncate is an operation of a layer: …/FeatureServer/<id>/truncate."]);
    if (req.params.get("attachmentOnly")?.toLowerCase() === "true") return truncateAttachments(defined, layerId);
    return truncate(defined, layerId);
  }
  if (!(OPERATIONS as readonly string[]).includes(operation))
    throw new ApiError(404, "Not Found", [
      `'${operation.slice(0, 64)}' is no operation of a hosted feature service here.`,
    ]);
  const op = operation as DefinitionOperation;
  const what = op === "addToDefinition" ? WHAT.add : op === "updateDefinition" ? WHAT.update : WHAT.delete;
  const form = req.params.get(EDITING_FORM);
  if (form !== undefined) {
    if (op !== "updateDefinition" || layerId !== undefined || form !== "true" || req.params.get(op) !== undefined)
      throw badRequest(what, [
        `'${EDITING_FORM}' is the service page's editing form, sent to the service's updateDefinition alone (with no '${op}').`,
      ]);
    await updateService(defined, editingFormDefinition(req, WHAT.update));
    return { success: true, serviceItemId: defined.service.itemId };
  }
  const definition = definitionOf(req.params.get(op), op, what);
  if (layerId === undefined) {
    if (op === "addToDefinition") return addToServiceWithSettings(defined, definition);
    if (op === "deleteFromDefinition") return deleteFromService(defined, definition);
    return updateService(defined, definition);
  }
  // A layer's attachments are turned on by either of its definition's changes (as ArcGIS clients send it): alone, or
  // then its fields' change.
  if (op !== "deleteFromDefinition" && "hasAttachments" in definition) {
    const { hasAttachments, ...rest } = definition;
    const answer = await setAttachments(defined, layerId, hasAttachments, what);
    if (Object.keys(rest).length === 0) return answer;
    return op === "addToDefinition" ? addFields(defined, layerId, rest) : updateFields(defined, layerId, rest);
  }
  if (op === "addToDefinition") return addFields(defined, layerId, definition);
  if (op === "deleteFromDefinition") return deleteFields(defined, layerId, definition);
  return updateFields(defined, layerId, definition);
}

/**
 * A layer's hasAttachments: true gives it an attachment table (once: a layer that has one answers success as it is);
 * turning attachments off, which deletes them all, is not offered.
 */
function setAttachments(defined: Defined, id: number, value: unknown, what: string) {
  if (typeof value !== "boolean")
    throw badRequest(what, [`'hasAttachments' must be true or false (got ${say(value)}).`]);
  return changeDefinition(defined, what, async (current) => {
    const table = tableOf(current, id, what);
    const schema = await schemaOf(current, id);
    if (value === (schema.attachments === true)) return { success: true };
    if (!value)
      throw badRequest(what, [
        "Turning a layer's attachments off (which deletes every one of them) is not offered: delete them with deleteAttachments.",
      ]);
    await current.store.addAttachments(current.service.itemId, [table], current.settle());
    return { success: true };
  });
}

/**
 * A service published by reference: its definition's one change here (a database layer's capabilities) is made by the
 * function that reaches its database (shared/hosted/byref-define.ts, at the same admin path outside the Hosted
 * folder); a by-reference service reached here (one published into the Hosted folder before that folder was kept for
 * hosted services) is answered by the same code.
 */
async function byReference(req: RestRequest, defined: Defined): Promise<object> {
  return (await import("#shared/hosted/byref-define.ts")).byReferenceDefinition(req, defined);
}

/** Whose content a new service joins: the caller's own, or (an administrator) another member's. */
async function ownerFor(req: RestRequest, what: string): Promise<string> {
  const identity = req.identity;
  if (identity.kind !== "user") throw forbidden();
  const owner = req.pathParameters.username ?? "";
  if (owner === identity.user.username) return owner;
  if (identity.user.role !== "org_admin") throw forbidden();
  const member = await getUser(owner);
  if (!member || member.portalId !== identity.user.portalId)
    throw badRequest(what, [`User '${owner.slice(0, 128)}' does not exist.`]);
  return owner;
}

/** POST …/content/users/<u>/createService: `outputType=featureService`, `createParameters` → an empty hosted service. */
export async function createDefinedService(req: RestRequest): Promise<object> {
  const what = WHAT.create;
  const outputType = req.params.caseless("outputType") ?? "";
  if (outputType.toLowerCase() !== "featureservice")
    throw badRequest(what, [`'outputType' must be featureService (got '${outputType.slice(0, 64)}').`]);
  const parameters = definitionOf(req.params.caseless("createParameters"), "createParameters", what);
  const problems: string[] = [];
  const name = typeof parameters.name === "string" ? parameters.name : "";
  if (!SERVICE_NAME.test(name) || RESERVED_TABLE.test(name) || RESERVED_LAYER.test(name))
    problems.push(
      `'${name.slice(0, 64)}' cannot name a service: 1–120 letters (A–Z), digits and underscores, not beginning with gpkg_, rtree_, sqlite_ or mapgate_.`,
    );
  const description = parameters.serviceDescription ?? parameters.description ?? "";
  if (typeof description !== "string" || description.length > 64_000)
    problems.push("'serviceDescription' must be text of at most 64,000 characters.");
  checkSpatialReference(parameters.spatialReference, "createParameters", problems);
  checkSpatialReference(
    isObject(parameters.initialExtent) ? parameters.initialExtent.spatialReference : undefined,
    "createParameters.initialExtent",
    problems,
  );
  const isView = [req.params.caseless("isView"), parameters.isView].some(
    (v) => v === true || String(v).toLowerCase() === "true",
  );
  if (problems.length > 0) throw badRequest(what, problems);
  const owner = await ownerFor(req, what);
  // `…/<u>/<folderId>/createService`: the service's item goes into that folder of the owner's.
  const folder = await namedFolder(req, owner, what);
  const portalId = req.portal.portalId;
  const server = await hostingServer(portalId, what);
  if (await serviceNameTaken(server.serverId, HOSTED_FOLDER, name))
    throw badRequest(what, [`Service name '${name}' already exists.`]);
  if (isView) return createView(req, { owner, folder: folder?.id, server, name, description: description as string });
  const store = await hostedStore();
  const serviceItemId = newItemId();
  // An empty container (a GeoPackage, or a database schema, with no tables yet), made and counted as publishing makes
  // a service's data.
  const kept = await store.create(serviceItemId, []);
  const dataBytes = kept.bytes;
  const service: Service = {
    serverId: server.serverId,
    portalId,
    folder: HOSTED_FOLDER,
    name,
    type: "FeatureServer",
    capabilities: EDITABLE_CAPABILITIES,
    description: description as string,
    tags: [],
    itemId: serviceItemId,
    owner,
    access: "private",
    extensions: [],
    source: store.sourceOf(serviceItemId, []),
    created: Date.now(),
  };
  const base = serviceItem(service, restServiceUrl(serverUrl(server, ""), HOSTED_FOLDER, name, "FeatureServer"));
  const item: Item = {
    ...base,
    typeKeywords: [...base.typeKeywords, "Hosted Service"],
    hostedData: dataBytes,
    ...(folder ? { ownerFolder: folder.id } : {}),
  };
  const quota = config().storageQuota;
  try {
    const charge = usageCharge(portalId, owner, dataBytes, quota);
    await retryingConflicts(() => createService(service, item, undefined, charge));
  } catch (err) {
    await store
      .drop(serviceItemId)
      .catch((e: unknown) => logger.warn("hosted data not removed", { itemId: serviceItemId, error: String(e) }));
    if (err instanceof ServiceExistsError) throw badRequest(what, [`Service name '${name}' already exists.`]);
    const refused = err instanceof StorageQuotaError ? err : quotaFailure(err, 2);
    if (refused) throw quotaExceeded(refused.whose, quota);
    throw err;
  }
  const serviceurl = restServiceUrl(serverUrl(server, req.httpsOrigin), HOSTED_FOLDER, name, "FeatureServer");
  await emit("servicePublished", {
    portalId,
    owner,
    jobId: newItemId(),
    itemId: serviceItemId,
    type: "Feature Service",
    url: serviceurl,
  });
  return {
    encodedServiceURL: serviceurl,
    itemId: serviceItemId,
    name,
    serviceItemId,
    serviceurl,
    size: -1,
    success: true,
    type: "Feature Service",
    isView: false,
  };
}
