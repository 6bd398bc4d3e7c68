import {
  BatchWriteCommand,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { type Item, itemPut } from "#shared/stores/items.ts";
import { tableName } from "#shared/config.ts";
import { ddb, failedConditions, isConditionFailure, queryAll, queryByPortal } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";
import type { StoreLocation } from "#shared/storage/storage.ts";

export const DATASET_TYPES = ["table", "featureClass", "relationshipClass"] as const;
export type DatasetType = (typeof DATASET_TYPES)[number];

/** Caches a scene or tile service can be published from by reference (`pathInCachedStore`). */
export const CACHE_TYPES = ["sceneLayerCache", "tileCache", "vectorTileCache", "imageCache"] as const;
export type CacheType = (typeof CACHE_TYPES)[number];

export const SSL_MODES = ["disable", "prefer", "require", "verify-full"] as const;
export type SslMode = (typeof SSL_MODES)[number];

/**
 * How a database store connects: everything but the password, which is kept as a secret of the data store
 * (shared/stores/datastore-secrets.ts) and read only by the functions that connect.
 */
export interface PostgresConnection {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  readonly sslmode: SslMode;
  /**
   * Advanced by every change of the connection or its password. Published layers keep a copy of the
   * connection, and a warm function keeps one pool per copy: a new revision makes a new pool, which reads the
   * secret again.
   */
  readonly revision?: number;
}

export interface DataStore {
  readonly datastoreId: string;
  readonly portalId: string;
  readonly title: string;
  /**
   * The name registered through the portal (`/enterpriseDatabases/<name>`, `/cloudStores/<name>`,
   * `/fileShares/<name>`), unique per kind in the organization whatever its letter case.
   */
  readonly name?: string;
  readonly owner: string;
  /** The item type on the original, e.g. `Data Store`; `kind` says what it connects to. */
  readonly kind: "database" | "folder" | "cloudStore" | "objectStore";
  readonly serverIds: readonly string[];
  /** Folder and cloud stores have one. */
  readonly location?: StoreLocation;
  /**
   * A database store's connection (PostgreSQL with PostGIS). A database store with neither lists the datasets
   * registered with it (a fixture of the tests, and of stores registered before connections existed).
   */
  readonly connection?: PostgresConnection;
  readonly created: number;
  readonly modified: number;
}

export interface Dataset {
  readonly name: string;
  readonly displayName: string;
  readonly type: DatasetType;
  readonly path: string;
}

export interface DataStoreContents {
  readonly store: DataStore;
  readonly datasets: readonly Dataset[];
}

const STORE_ENTRY = "#";
const datasetEntry = (path: string) => `dataset#${path}`;

function toLocation(value: unknown): StoreLocation | undefined {
  if (value === undefined) return undefined;
  const r = new RecordReader("data store location", (value ?? {}) as Record<string, unknown>);
  const folder = r.optionalString("folder");
  return folder !== undefined ? { folder } : { bucket: r.string("bucket"), prefix: r.string("prefix") };
}

export function toConnection(value: unknown): PostgresConnection | undefined {
  if (value === undefined) return undefined;
  const r = new RecordReader("data store connection", (value ?? {}) as Record<string, unknown>);
  return {
    host: r.string("host"),
    port: r.number("port"),
    database: r.string("database"),
    user: r.string("user"),
    sslmode: r.oneOf("sslmode", SSL_MODES),
    ...(r.optionalNumber("revision") !== undefined ? { revision: r.number("revision") } : {}),
  };
}

function toStore(item: Record<string, unknown>): DataStore {
  const r = new RecordReader("data store", item);
  const location = toLocation(item.location);
  const connection = toConnection(item.connection);
  return {
    datastoreId: r.string("datastoreId"),
    portalId: r.string("portalId"),
    title: r.string("title"),
    ...(r.optionalString("name") !== undefined ? { name: r.string("name") } : {}),
    owner: r.string("owner"),
    kind: r.oneOf("kind", ["database", "folder", "cloudStore", "objectStore"] as const),
    serverIds: r.strings("serverIds"),
    ...(location ? { location } : {}),
    ...(connection ? { connection } : {}),
    created: r.number("created"),
    modified: r.number("modified"),
  };
}

export async function getDataStoreContents(datastoreId: string): Promise<DataStoreContents | undefined> {
  let store: DataStore | undefined;
  const datasets: Dataset[] = [];
  const items = await queryAll({
    TableName: tableName("datastores"),
    KeyConditionExpression: "datastoreId = :d",
    ExpressionAttributeValues: { ":d": datastoreId },
  });
  for (const item of items) {
    const r = new RecordReader("data store entry", item);
    const entry = r.string("entry");
    if (entry === STORE_ENTRY) store = toStore(item);
    else if (entry.startsWith("dataset#")) datasets.push(toDataset(r));
  }
  return store ? { store, datasets } : undefined;
}

function toDataset(r: RecordReader): Dataset {
  return {
    name: r.string("name"),
    displayName: r.string("displayName"),
    type: r.oneOf("type", DATASET_TYPES),
    path: r.string("path"),
  };
}

/** A data store without its datasets (one read, however many datasets it holds). */
export async function getDataStore(datastoreId: string): Promise<DataStore | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("datastores"), Key: { datastoreId, entry: STORE_ENTRY } }),
  );
  return Item ? toStore(Item) : undefined;
}

/**
 * Up to `limit` datasets in path order (DynamoDB's order of their entries), starting after the dataset at
 * `after` ("" for the first). `more` is false once the last dataset was read (it may be true with nothing
 * left when the last page ended exactly at `limit`). Reads only the page itself, so walking a data store
 * page by page reads each dataset once.
 */
export async function datasetPage(
  datastoreId: string,
  after: string,
  limit: number,
): Promise<{ datasets: Dataset[]; more: boolean }> {
  const datasets: Dataset[] = [];
  let start: Record<string, unknown> | undefined = after ? { datastoreId, entry: datasetEntry(after) } : undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName("datastores"),
        KeyConditionExpression: "datastoreId = :d AND begins_with(#e, :p)",
        ExpressionAttributeNames: { "#e": "entry" },
        ExpressionAttributeValues: { ":d": datastoreId, ":p": "dataset#" },
        ExclusiveStartKey: start,
        Limit: limit - datasets.length,
      }),
    );
    for (const item of page.Items ?? []) datasets.push(toDataset(new RecordReader("data store entry", item)));
    start = page.LastEvaluatedKey;
  } while (start && datasets.length < limit);
  return { datasets, more: start !== undefined };
}

export async function listPortalDataStores(portalId: string): Promise<DataStore[]> {
  const items = await queryByPortal("datastores", portalId);
  return items.map(toStore);
}

/** A registered name is taken: another data store of the organization holds it. */
export class DataStoreNameTakenError extends Error {
  constructor() {
    super("A data store of this organization has this name.");
    this.name = "DataStoreNameTakenError";
  }
}

/** The data store changed or went while a change was computed from what was read: read it again. */
export class DataStoreChangedError extends Error {
  constructor() {
    super("The data store changed meanwhile.");
    this.name = "DataStoreChangedError";
  }
}

/**
 * A name's reservation: a record of its own (no `portalId`, so the byPortal index never lists it), which the
 * transaction creating the store creates on condition it does not exist, so of concurrent registrations of
 * one name exactly one lands.
 */
const nameKey = (store: DataStore) =>
  store.name === undefined
    ? undefined
    : { datastoreId: `name#${store.portalId}#${store.kind}#${store.name.normalize("NFKC").toLowerCase()}`, entry: "#" };

const storeRecord = (store: DataStore) => ({
  ...store,
  serverIds: [...store.serverIds],
  ...(store.location ? { location: { ...store.location } } : {}),
  ...(store.connection ? { connection: { ...store.connection } } : {}),
  entry: STORE_ENTRY,
});

/** Registers a data store with its contents. The store entry is written last, so a half-written
 * registration is invisible: readers only see a store once its entry exists. */
export async function createDataStore(contents: DataStoreContents, item: Item): Promise<void> {
  const table = tableName("datastores");
  const { store } = contents;
  const entries = contents.datasets.map((d) => ({ datastoreId: store.datastoreId, entry: datasetEntry(d.path), ...d }));
  for (let i = 0; i < entries.length; i += 25) {
    let pending: Record<string, unknown>[] = entries.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 8) throw new Error("data store entries could not be written (throttled)");
      const out = await ddb.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as Record<string, unknown>[];
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 25 * 2 ** attempt));
    }
  }
  // The store entry, its name's reservation and its portal item are one transaction: a data store is never
  // without its item, and a name never held twice.
  const reservation = nameKey(store);
  for (let attempt = 0; ; attempt++) {
    try {
      await putStore(table, store, item, reservation);
      return;
    } catch (err) {
      if (reservation && failedConditions(err)?.includes(2)) throw new DataStoreNameTakenError();
      // Concurrent registrations of one name cancel each other's transactions: tried again, one lands and
      // the others find the name taken.
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (!reasons.some((r) => r.Code === "TransactionConflict") || attempt >= 8) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
    }
  }
}

async function putStore(
  table: string,
  store: DataStore,
  item: Item,
  reservation: ReturnType<typeof nameKey>,
): Promise<void> {
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: table,
            Item: storeRecord(store),
            ConditionExpression: "attribute_not_exists(datastoreId)",
          },
        },
        itemPut(item),
        ...(reservation
          ? [
              {
                Put: {
                  TableName: table,
                  Item: { ...reservation, reservedBy: store.datastoreId },
                  ConditionExpression: "attribute_not_exists(datastoreId)",
                },
              },
            ]
          : []),
      ],
    }),
  );
}

/**
 * Replaces what may change of a registered store (its servers, its connection), on condition it is still as
 * read (`modified`): a change computed from a stale read never lands (DataStoreChangedError).
 */
export async function updateDataStore(
  store: DataStore,
  changes: {
    readonly serverIds?: readonly string[];
    readonly connection?: PostgresConnection;
    readonly title?: string;
  },
): Promise<DataStore> {
  const modified = Math.max(Date.now(), store.modified + 1);
  const next: DataStore = { ...store, ...changes, modified };
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("datastores"),
        Key: { datastoreId: store.datastoreId, entry: STORE_ENTRY },
        UpdateExpression: "SET serverIds = :s, title = :t, modified = :m" + (next.connection ? ", #c = :c" : ""),
        ConditionExpression: "modified = :old",
        ...(next.connection ? { ExpressionAttributeNames: { "#c": "connection" } } : {}),
        ExpressionAttributeValues: {
          ":s": [...next.serverIds],
          ":t": next.title,
          ":m": modified,
          ":old": store.modified,
          ...(next.connection ? { ":c": { ...next.connection } } : {}),
        },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new DataStoreChangedError();
    throw err;
  }
  return next;
}

/**
 * Removes a data store: its entry, its name's reservation and its item at once (on condition it is as read),
 * then its registered datasets, which nothing reads without the store entry.
 */
export async function deleteDataStore(store: DataStore, item: Item | undefined): Promise<void> {
  const table = tableName("datastores");
  const reservation = nameKey(store);
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: table,
              Key: { datastoreId: store.datastoreId, entry: STORE_ENTRY },
              ConditionExpression: "modified = :old",
              ExpressionAttributeValues: { ":old": store.modified },
            },
          },
          ...(reservation
            ? [
                {
                  Delete: {
                    TableName: table,
                    Key: reservation,
                    ConditionExpression: "reservedBy = :id",
                    ExpressionAttributeValues: { ":id": store.datastoreId },
                  },
                },
              ]
            : []),
          ...(item ? [{ Delete: { TableName: tableName("items"), Key: { itemId: item.itemId } } }] : []),
        ],
      }),
    );
  } catch (err) {
    if (failedConditions(err)?.length) throw new DataStoreChangedError();
    throw err;
  }
  const datasets = await queryAll({
    TableName: table,
    KeyConditionExpression: "datastoreId = :d",
    ExpressionAttributeValues: { ":d": store.datastoreId },
    ProjectionExpression: "datastoreId, entry",
  });
  for (let i = 0; i < datasets.length; i += 25) {
    let pending: Record<string, unknown>[] = datasets
      .slice(i, i + 25)
      .map((Key) => ({ DeleteRequest: { Key: { datastoreId: Key.datastoreId, entry: Key.entry } } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 8) throw new Error("data store entries could not be deleted (throttled)");
      const out = await ddb.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as Record<string, unknown>[];
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 25 * 2 ** attempt));
    }
  }
}
