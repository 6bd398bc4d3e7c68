// Services and folders of a federated server, as the SOAP catalog lists them and publishing writes them.
// Every change also advances the server's catalog version in the same transaction, so a reader may keep
// the catalog in memory and re-read it only when the version moved (one small read per request).
import { DeleteCommand, GetCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, failedConditions, isConditionFailure, queryAll } from "#shared/stores/dynamo.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { type PostgresConnection, toConnection } from "#shared/stores/datastores.ts";
import type { StoreLocation } from "#shared/storage/storage.ts";
import { type Item, itemPut } from "#shared/stores/items.ts";
import {
  ACCESS,
  type Access,
  CATALOG,
  catalogBump,
  catalogVersionKey,
  folderEntry,
  infoKey,
  SERVICE_TYPES,
  serviceEntry,
  type ServiceType,
} from "#shared/stores/service-keys.ts";
import { RecordReader } from "#shared/stores/records.ts";
import { CorruptRecordError } from "#shared/errors.ts";

export interface ServiceExtension {
  readonly type: ServiceType;
  readonly capabilities: string;
}

/**
 * Where a published service reads its content: the data store's storage (a cache's or a GeoPackage table's
 * path in it) or its database (a table's `schema.table` path), copied from the data store when published so
 * that serving reads no data store record.
 */
export type ServiceSource =
  | {
      readonly datastoreId: string;
      readonly location: StoreLocation;
      readonly path: string;
      /**
       * A hosted service of several layers, or one its clients define (createService, the admin wire): the tables
       * of its GeoPackage (the file `path` names), layer id by position, null at the id of a layer deleted from its
       * definition (an id is never given to another layer, so a web map naming it never reaches a different one);
       * empty for a defined service with no layers yet. Absent: one layer, the table `path` names.
       */
      readonly layers?: readonly HostedLayerEntry[];
      /** A hosted service's definition revision (below). */
      readonly revision?: number;
    }
  | {
      readonly datastoreId: string;
      readonly connection: PostgresConnection;
      readonly path: string;
      /** A hosted service of several layers: the tables of its schema (the one `path` names), as above. */
      readonly layers?: readonly HostedLayerEntry[];
      /**
       * A hosted service's definition revision (absent: 0), one more with every change of its definition, so that
       * a reader that keeps a layer's schema (the PostGIS reader, for a minute) reads it again after a change.
       */
      readonly revision?: number;
      /**
       * A table read by reference: the columns its publisher named as its editor-tracking fields (absent: none),
       * which its layer's schema then carries as a hosted layer's does (shared/features/sources.ts).
       */
      readonly trackingFields?: TrackingFields;
    };

/**
 * The editor-tracking columns of a table read by reference, named by its publisher (shared/hosted/byref-define.ts):
 * any of the four, each a column of the table, filled by the server on every add and update.
 */
export interface TrackingFields {
  readonly creatorField?: string;
  readonly creationDateField?: string;
  readonly editorField?: string;
  readonly editDateField?: string;
}

export const TRACKING_FIELDS = [
  "creatorField",
  "creationDateField",
  "editorField",
  "editDateField",
] as const satisfies readonly (keyof TrackingFields)[];

function toTrackingFields(value: unknown): TrackingFields | undefined {
  if (value === undefined) return undefined;
  const r = new RecordReader("service tracking fields", (value ?? {}) as Record<string, unknown>);
  const out: Record<string, string> = {};
  for (const k of TRACKING_FIELDS) {
    const v = r.optionalString(k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** A hosted service's layer, by its id's position in `layers`: its table's name, or null once it is deleted. */
export type HostedLayerEntry = string | null;

/**
 * A layer of a hosted view: the source layer it shows (by id in the source service), the name it goes by, the
 * definition query (a `where` of the standardized subset) every read of it ANDs into its plan, and the source fields
 * it shows by name (absent: all of them; a field the source gains later is hidden until shown).
 */
export interface ViewLayer {
  readonly name: string;
  readonly sourceLayerId: number;
  readonly definitionQuery?: string;
  readonly fields?: readonly string[];
}

/**
 * A hosted view (`createService` with `isView`): a service of its own (item, sharing, capabilities) whose layers read
 * the rows of a hosted service's layers where they lie, never copied. Its source is named by its item id (absent
 * until the view's first layer names it); `layers` by id as a hosted service's are (null at a deleted layer's id);
 * `revision` moves with every change, which is made only over the revision it read.
 */
export interface ServiceView {
  readonly sourceItemId?: string;
  readonly layers: readonly (ViewLayer | null)[];
  readonly revision: number;
}

function toView(value: unknown): ServiceView | undefined {
  if (value === undefined) return undefined;
  const r = new RecordReader("service view", (value ?? {}) as Record<string, unknown>);
  const raw = (value as Record<string, unknown> | null)?.layers;
  if (!Array.isArray(raw)) throw new CorruptRecordError("service view", "layers is not a list");
  const layers = raw.map((l: unknown): ViewLayer | null => {
    if (l === null) return null;
    const x = new RecordReader("service view layer", (l ?? {}) as Record<string, unknown>);
    const definitionQuery = x.optionalString("definitionQuery");
    const fields = (l as Record<string, unknown>).fields;
    return {
      name: x.string("name"),
      sourceLayerId: x.number("sourceLayerId"),
      ...(definitionQuery !== undefined ? { definitionQuery } : {}),
      ...(fields !== undefined ? { fields: x.strings("fields") } : {}),
    };
  });
  const sourceItemId = r.optionalString("sourceItemId");
  return { ...(sourceItemId !== undefined ? { sourceItemId } : {}), layers, revision: r.number("revision") };
}

/** The `layers` of a stored source: names and nulls (absent: none). */
function layerEntries(value: unknown): HostedLayerEntry[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => v === null || typeof v === "string"))
    throw new CorruptRecordError("service source", "layers is not a list of names and nulls");
  return value as HostedLayerEntry[];
}

/**
 * What a hosted feature service's owner set of who may edit which features (shared/features/ownership.ts reads it
 * with its defaults): ownership-based access control, as `editorTrackingInfo` names its settings, and whether
 * anonymous callers may edit a service shared with everyone (public data collection). Absent: the defaults.
 */
export interface ServiceEditing {
  readonly ownershipAccessControl?: boolean;
  readonly allowOthersToQuery?: boolean;
  readonly allowOthersToUpdate?: boolean;
  readonly allowOthersToDelete?: boolean;
  readonly allowAnonymousToQuery?: boolean;
  readonly allowAnonymousToUpdate?: boolean;
  readonly allowAnonymousToDelete?: boolean;
  readonly publicDataCollection?: boolean;
}

export const EDITING_SETTINGS = [
  "ownershipAccessControl",
  "allowOthersToQuery",
  "allowOthersToUpdate",
  "allowOthersToDelete",
  "allowAnonymousToQuery",
  "allowAnonymousToUpdate",
  "allowAnonymousToDelete",
  "publicDataCollection",
] as const satisfies readonly (keyof ServiceEditing)[];

function toEditing(value: unknown): ServiceEditing | undefined {
  if (value === undefined) return undefined;
  const r = new RecordReader("service editing", (value ?? {}) as Record<string, unknown>);
  const out: Record<string, boolean> = {};
  for (const k of EDITING_SETTINGS) if ((value as Record<string, unknown>)[k] !== undefined) out[k] = r.boolean(k);
  return out;
}

export interface Service {
  readonly serverId: string;
  readonly portalId: string;
  /** "" for the root folder. */
  readonly folder: string;
  readonly name: string;
  readonly type: ServiceType;
  readonly capabilities: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly itemId: string;
  readonly owner: string;
  readonly access: Access;
  /** The groups the service's item is shared with, whose members see it too (absent: none). */
  readonly groups?: readonly string[];
  /** Capabilities exposed as services of their own (e.g. a FeatureServer on a MapServer): ParentType set. */
  readonly extensions: readonly ServiceExtension[];
  /** Services published by reference read their content here (listed-only services and views have none). */
  readonly source?: ServiceSource;
  /** A hosted feature service's editing settings (absent: the defaults). */
  readonly editing?: ServiceEditing;
  /**
   * How many times its capabilities and editing settings were changed (absent: never): each change is made only while
   * the record holds the revision its maker read, so two changes made at once never lose one silently.
   */
  readonly settingsRevision?: number;
  /** A hosted view reads its source service's rows through this (it has no source of its own). */
  readonly view?: ServiceView;
  readonly created: number;
}

export interface Catalog {
  readonly version: number;
  readonly folders: readonly string[];
  readonly services: readonly Service[];
}

function toSource(value: unknown): ServiceSource | undefined {
  if (value === undefined) return undefined;
  const r = new RecordReader("service source", (value ?? {}) as Record<string, unknown>);
  const connection = toConnection((value as Record<string, unknown> | null)?.connection);
  const layers = layerEntries((value as Record<string, unknown> | null)?.layers);
  const revision = r.optionalNumber("revision");
  const kept = { ...(layers ? { layers } : {}), ...(revision !== undefined ? { revision } : {}) };
  if (connection) {
    const trackingFields = toTrackingFields((value as Record<string, unknown> | null)?.trackingFields);
    return {
      datastoreId: r.string("datastoreId"),
      connection,
      path: r.string("path"),
      ...kept,
      ...(trackingFields ? { trackingFields } : {}),
    };
  }
  const l = new RecordReader("service source location", (r.object("location") ?? {}) as Record<string, unknown>);
  const folder = l.optionalString("folder");
  return {
    datastoreId: r.string("datastoreId"),
    location: folder !== undefined ? { folder } : { bucket: l.string("bucket"), prefix: l.string("prefix") },
    path: r.string("path"),
    ...kept,
  };
}

function toService(item: Record<string, unknown>): Service {
  const r = new RecordReader("service", item);
  const extensions = Array.isArray(item.extensions) ? (item.extensions as Record<string, unknown>[]) : [];
  const source = toSource(item.source);
  const view = toView(item.view);
  return {
    serverId: r.string("serverId"),
    portalId: r.string("portalId"),
    folder: r.string("folder"),
    name: r.string("name"),
    type: r.oneOf("type", SERVICE_TYPES),
    capabilities: r.string("capabilities"),
    description: r.string("description"),
    tags: r.strings("tags"),
    itemId: r.string("itemId"),
    owner: r.string("owner"),
    access: r.oneOf("access", ACCESS),
    ...(item.groups !== undefined ? { groups: r.strings("groups") } : {}),
    extensions: extensions.map((e) => {
      const x = new RecordReader("service extension", e);
      return { type: x.oneOf("type", SERVICE_TYPES), capabilities: x.string("capabilities") };
    }),
    ...(source ? { source } : {}),
    ...(item.editing !== undefined ? { editing: toEditing(item.editing) } : {}),
    ...(typeof item.settingsRevision === "number" ? { settingsRevision: item.settingsRevision } : {}),
    ...(view ? { view } : {}),
    created: r.number("created"),
  };
}

/** The version an item read at catalogVersionKey holds (0 before the first change). */
export const versionOf = (item: Record<string, unknown> | null | undefined) =>
  typeof item?.version === "number" ? item.version : 0;

export async function catalogVersion(serverId: string): Promise<number> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("services"), Key: catalogVersionKey(serverId), ConsistentRead: true }),
  );
  return versionOf(Item);
}

export async function readCatalog(serverId: string): Promise<Catalog> {
  let version = 0;
  const folders: string[] = [];
  const services: Service[] = [];
  const items = await queryAll({
    TableName: tableName("services"),
    KeyConditionExpression: "serverId = :s",
    ExpressionAttributeValues: { ":s": serverId },
    ConsistentRead: true,
  });
  for (const item of items) {
    const entry = String(item.entry);
    if (entry === CATALOG) version = Number(item.version);
    else if (entry.startsWith("folder#")) folders.push(new RecordReader("folder", item).string("folder"));
    else if (entry.startsWith("svc#")) services.push(toService(item));
  }
  return { version, folders, services };
}

const sourceRecord = (source: ServiceSource) =>
  "connection" in source
    ? {
        ...source,
        connection: { ...source.connection },
        ...(source.layers ? { layers: [...source.layers] } : {}),
        ...(source.trackingFields ? { trackingFields: { ...source.trackingFields } } : {}),
      }
    : { ...source, location: { ...source.location }, ...(source.layers ? { layers: [...source.layers] } : {}) };

const viewRecord = (view: ServiceView) => ({
  ...view,
  layers: view.layers.map((l) => (l ? { ...l, ...(l.fields ? { fields: [...l.fields] } : {}) } : null)),
});

/** The stored form of a service (lists copied: the SDK marshals plain arrays). */
const serviceRecord = (service: Service) => ({
  ...service,
  tags: [...service.tags],
  extensions: service.extensions.map((e) => ({ ...e })),
  ...(service.source ? { source: sourceRecord(service.source) } : {}),
  ...(service.view ? { view: viewRecord(service.view) } : {}),
  entry: serviceEntry(service.folder, service.name),
});

/** The write that stores a new service unless its folder/name is taken, for a transaction's first item. */
export const newServicePut = (service: Service) => ({
  Put: {
    TableName: tableName("services"),
    Item: serviceRecord(service),
    ConditionExpression: "attribute_not_exists(#e)",
    ExpressionAttributeNames: { "#e": "entry" },
  },
});

export class ServiceExistsError extends Error {
  /** When the name is held by a publishing job rather than a service: that job, and since when. */
  readonly pending: { readonly jobId: string; readonly since: number } | undefined;

  constructor(folder: string, name: string, pending?: { jobId: string; since: number }) {
    super(`A service named '${folder ? `${folder}/` : ""}${name}' exists already.`);
    this.name = "ServiceExistsError";
    this.pending = pending;
  }
}

/** Creates a folder if it does not exist (an existing one is fine). */
export async function ensureFolder(serverId: string, folder: string): Promise<void> {
  if (!folder) return;
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName("services"),
              Item: { serverId, entry: folderEntry(folder), folder },
              ConditionExpression: "attribute_not_exists(#e)",
              ExpressionAttributeNames: { "#e": "entry" },
            },
          },
          catalogBump(serverId),
        ],
      }),
    );
  } catch (err) {
    if (!failedConditions(err)?.includes(0)) throw err;
  }
}

/**
 * Writes a new service with its portal item (and whatever else must change with it) and advances the
 * catalog version, at once: there is never a service without its item, nor an item without its service.
 */
async function putService(service: Service, item: Item, alsoWith: object[]): Promise<void> {
  await ensureFolder(service.serverId, service.folder);
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [newServicePut(service), itemPut(item), ...alsoWith, catalogBump(service.serverId)],
    }),
  );
}

/** The item that keeps what serving a published service needs, written with the service. */
const infoPut = (service: Service, info: CacheInfo) => ({
  Put: {
    TableName: tableName("services"),
    Item: {
      ...infoKey(service.serverId, service.folder, service.name),
      itemId: service.itemId,
      info: JSON.stringify(info),
    },
  },
});

/** Creates a service; one service per folder and name (case-insensitively), whatever its type. */
export async function createService(
  service: Service,
  item: Item,
  info?: CacheInfo,
  alsoWith: readonly object[] = [],
): Promise<void> {
  try {
    await putService(service, item, [...(info ? [infoPut(service, info)] : []), ...alsoWith]);
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new ServiceExistsError(service.folder, service.name);
    throw err;
  }
}

const pendingEntry = (folder: string, name: string) => `pending#${folder.toLowerCase()}#${name.toLowerCase()}`;

/**
 * Reserves a folder/name for a publishing job: fails if a service or another job holds it. The check and
 * the reservation are one transaction, so of two concurrent publishes of one name exactly one gets it.
 */
export async function reserveServiceName(serverId: string, folder: string, name: string, jobId: string): Promise<void> {
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: tableName("services"),
              Key: { serverId, entry: serviceEntry(folder, name) },
              ConditionExpression: "attribute_not_exists(#e)",
              ExpressionAttributeNames: { "#e": "entry" },
            },
          },
          {
            Put: {
              TableName: tableName("services"),
              Item: { serverId, entry: pendingEntry(folder, name), jobId, reservedAt: Date.now() },
              ConditionExpression: "attribute_not_exists(#e)",
              ExpressionAttributeNames: { "#e": "entry" },
            },
          },
        ],
      }),
    );
  } catch (err) {
    const failed = failedConditions(err);
    if (!failed?.length) throw err;
    if (failed.includes(0)) throw new ServiceExistsError(folder, name);
    const { Item } = await ddb.send(
      new GetCommand({
        TableName: tableName("services"),
        Key: { serverId, entry: pendingEntry(folder, name) },
        ConsistentRead: true,
      }),
    );
    throw new ServiceExistsError(
      folder,
      name,
      typeof Item?.jobId === "string" ? { jobId: Item.jobId, since: Number(Item.reservedAt ?? 0) } : undefined,
    );
  }
}

/** Gives a reservation up (the job failed); only the job that made it can. */
export async function releaseServiceName(serverId: string, folder: string, name: string, jobId: string): Promise<void> {
  try {
    await ddb.send(
      new DeleteCommand({
        TableName: tableName("services"),
        Key: { serverId, entry: pendingEntry(folder, name) },
        ConditionExpression: "jobId = :j",
        ExpressionAttributeValues: { ":j": jobId },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

export async function getService(serverId: string, folder: string, name: string): Promise<Service | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({
      TableName: tableName("services"),
      Key: { serverId, entry: serviceEntry(folder, name) },
      ConsistentRead: true,
    }),
  );
  return Item ? toService(Item) : undefined;
}

/**
 * Creates the service a job reserved, releasing the reservation in the same transaction (with `alsoWith` after
 * it). Idempotent: when the service exists already with this item id (a retried task), that is success.
 */
export async function createReservedService(
  service: Service,
  item: Item,
  jobId: string,
  info?: CacheInfo,
  alsoWith: readonly object[] = [],
): Promise<void> {
  try {
    await putService(service, item, [
      ...(info ? [infoPut(service, info)] : []),
      {
        Delete: {
          TableName: tableName("services"),
          Key: { serverId: service.serverId, entry: pendingEntry(service.folder, service.name) },
          ConditionExpression: "jobId = :j",
          ExpressionAttributeValues: { ":j": jobId },
        },
      },
      ...alsoWith,
    ]);
  } catch (err) {
    const failed = failedConditions(err);
    if (!failed?.length) throw err;
    // A refusal of the writes that came with it (a quota's) is the caller's to read, not a taken name.
    const reservationAt = info ? 3 : 2;
    if (failed.every((i) => i > reservationAt)) throw err;
    const existing = await getService(service.serverId, service.folder, service.name);
    if (existing?.itemId === service.itemId) return;
    throw new ServiceExistsError(service.folder, service.name);
  }
}

/** What serving a published service needs from its cache (undefined for a service listed without one). */
export async function getServiceInfo(service: Service): Promise<CacheInfo | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({
      TableName: tableName("services"),
      Key: infoKey(service.serverId, service.folder, service.name),
      ConsistentRead: true,
    }),
  );
  if (!Item || Item.itemId !== service.itemId) return undefined;
  return JSON.parse(new RecordReader("service info", Item).string("info")) as CacheInfo;
}

/** Whether a folder/name is taken on a server: by a service, or reserved by a publishing job in flight. */
export async function serviceNameTaken(serverId: string, folder: string, name: string): Promise<boolean> {
  const keys = [serviceEntry(folder, name), pendingEntry(folder, name)];
  const found = await Promise.all(
    keys.map((entry) =>
      ddb.send(new GetCommand({ TableName: tableName("services"), Key: { serverId, entry }, ConsistentRead: true })),
    ),
  );
  return found.some((f) => f.Item !== undefined);
}

/**
 * The writes that give a hosted service's record its layers (after its definition changed), for the transaction
 * that counts the data's new size: the record is changed only while it is still the item's service, and the server's
 * catalog version moves, so every cached catalog serves the new layers on its next request.
 */
export function serviceLayersUpdate(service: Service, layers: readonly HostedLayerEntry[], revision: number) {
  return [
    {
      Update: {
        TableName: tableName("services"),
        Key: { serverId: service.serverId, entry: serviceEntry(service.folder, service.name) },
        UpdateExpression: "SET #src.#layers = :layers, #src.#revision = :revision",
        ConditionExpression: "itemId = :id AND attribute_exists(#src)",
        ExpressionAttributeNames: { "#src": "source", "#layers": "layers", "#revision": "revision" },
        ExpressionAttributeValues: { ":layers": [...layers], ":revision": revision, ":id": service.itemId },
      },
    },
    catalogBump(service.serverId),
  ];
}

/**
 * Sets a service's capabilities (an owner turning editing on or off) and, when given, its editing settings, while
 * the record is still the item's service; the server's catalog version moves in the same transaction, so every cached
 * catalog answers the new capabilities and rules on its next request. False when the service is gone or its settings
 * changed since it was read (settingsRevision).
 */
export async function setServiceCapabilities(
  service: Service,
  capabilities: string,
  editing?: ServiceEditing,
): Promise<boolean> {
  const read = settingsRead(service);
  return updateRecordAndCatalog(service, {
    UpdateExpression: `SET capabilities = :c, settingsRevision = :next${editing ? ", editing = :e" : ""}`,
    ConditionExpression: `itemId = :id AND ${read.condition}`,
    ExpressionAttributeValues: {
      ":c": capabilities,
      ":id": service.itemId,
      ...read.values,
      ...(editing ? { ":e": { ...editing } } : {}),
    },
  });
}

/** The condition that the record still holds the settings revision `service` was read at, and the next one's value. */
function settingsRead(service: Service): { condition: string; values: Record<string, number> } {
  const read = service.settingsRevision;
  return read === undefined
    ? { condition: "attribute_not_exists(settingsRevision)", values: { ":next": 1 } }
    : { condition: "settingsRevision = :rev", values: { ":rev": read, ":next": read + 1 } };
}

/**
 * Sets a by-reference service's capabilities, editing settings and its table's tracking columns (undefined: none), at
 * once and while the record is still the item's service with its source; the catalog version moves in the same
 * transaction. False when the service is gone or its settings changed since it was read (settingsRevision).
 */
export async function setByReferenceEditing(
  service: Service,
  capabilities: string,
  editing: ServiceEditing,
  trackingFields: TrackingFields | undefined,
): Promise<boolean> {
  const read = settingsRead(service);
  return updateRecordAndCatalog(service, {
    UpdateExpression: `SET capabilities = :c, editing = :e, settingsRevision = :next${trackingFields ? ", #src.#tf = :tf" : " REMOVE #src.#tf"}`,
    ConditionExpression: `itemId = :id AND attribute_exists(#src) AND ${read.condition}`,
    ExpressionAttributeNames: { "#src": "source", "#tf": "trackingFields" },
    ExpressionAttributeValues: {
      ":c": capabilities,
      ":id": service.itemId,
      ...read.values,
      ":e": { ...editing },
      ...(trackingFields ? { ":tf": { ...trackingFields } } : {}),
    },
  });
}

/**
 * Gives a hosted view its next definition (`next`, whose revision is one more than the one read), only while the
 * record is still the item's view at the revision read; the catalog version moves in the same transaction, so every
 * cached catalog reads the view's new layers on its next request. False when the view changed meanwhile or is gone.
 */
export async function setServiceView(service: Service, next: ServiceView): Promise<boolean> {
  return updateRecordAndCatalog(service, {
    UpdateExpression: "SET #view = :v",
    ConditionExpression: "itemId = :id AND #view.#rev = :rev",
    ExpressionAttributeNames: { "#view": "view", "#rev": "revision" },
    ExpressionAttributeValues: { ":v": viewRecord(next), ":id": service.itemId, ":rev": service.view?.revision ?? -1 },
  });
}

/**
 * One conditional update of a service's record with the catalog version's move, in one transaction (every cached
 * catalog reads the change on its next request). False when the condition failed (the record changed or is gone).
 */
async function updateRecordAndCatalog(
  service: Service,
  update: {
    readonly UpdateExpression: string;
    readonly ConditionExpression: string;
    readonly ExpressionAttributeNames?: Record<string, string>;
    readonly ExpressionAttributeValues: Record<string, unknown>;
  },
): Promise<boolean> {
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName("services"),
              Key: { serverId: service.serverId, entry: serviceEntry(service.folder, service.name) },
              ...update,
            },
          },
          catalogBump(service.serverId),
        ],
      }),
    );
    return true;
  } catch (err) {
    if ((failedConditions(err)?.length ?? 0) > 0) return false;
    throw err;
  }
}

/** The hosted views that read a service (by its item id), by their paths: none for a service no view reads. */
export async function viewsOf(serverId: string, itemId: string): Promise<string[]> {
  return (await readCatalog(serverId)).services
    .filter((s) => s.view?.sourceItemId === itemId)
    .map((s) => `${s.folder ? `${s.folder}/` : ""}${s.name}`);
}
