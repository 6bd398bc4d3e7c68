import { BatchWriteCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, queryAll, queryByPortal } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";

export const DATASET_TYPES = ["table", "featureClass", "relationshipClass"] as const;
export type DatasetType = (typeof DATASET_TYPES)[number];

/** Caches a scene or tile service can be published from by reference (`pathInCachedStore`). */
export const CACHE_TYPES = ["sceneLayerCache", "tileCache", "vectorTileCache", "imageCache"] as const;
export type CacheType = (typeof CACHE_TYPES)[number];

export interface DataStore {
  readonly datastoreId: string;
  readonly portalId: string;
  readonly title: string;
  readonly owner: string;
  /** The item type on the original, e.g. `Data Store`; `kind` says what it connects to. */
  readonly kind: "database" | "folder" | "cloudStore" | "objectStore";
  readonly serverIds: readonly string[];
  readonly created: number;
  readonly modified: number;
}

export interface Dataset {
  readonly name: string;
  readonly displayName: string;
  readonly type: DatasetType;
  readonly path: string;
}

export interface CachedLayer {
  readonly name: string;
  readonly type: CacheType;
  readonly path: string;
}

export interface DataStoreContents {
  readonly store: DataStore;
  readonly datasets: readonly Dataset[];
  readonly cachedLayers: readonly CachedLayer[];
}

const STORE_ENTRY = "#";
const datasetEntry = (path: string) => `dataset#${path}`;
const cachedEntry = (path: string) => `cached#${path}`;

function toStore(item: Record<string, unknown>): DataStore {
  const r = new RecordReader("data store", item);
  return {
    datastoreId: r.string("datastoreId"),
    portalId: r.string("portalId"),
    title: r.string("title"),
    owner: r.string("owner"),
    kind: r.oneOf("kind", ["database", "folder", "cloudStore", "objectStore"] as const),
    serverIds: r.strings("serverIds"),
    created: r.number("created"),
    modified: r.number("modified"),
  };
}

export async function getDataStoreContents(datastoreId: string): Promise<DataStoreContents | undefined> {
  let store: DataStore | undefined;
  const datasets: Dataset[] = [];
  const cachedLayers: CachedLayer[] = [];
  const items = await queryAll({
    TableName: tableName("datastores"),
    KeyConditionExpression: "datastoreId = :d",
    ExpressionAttributeValues: { ":d": datastoreId },
  });
  for (const item of items) {
    const r = new RecordReader("data store entry", item);
    const entry = r.string("entry");
    if (entry === STORE_ENTRY) store = toStore(item);
    else if (entry.startsWith("dataset#")) {
      datasets.push({
        name: r.string("name"),
        displayName: r.string("displayName"),
        type: r.oneOf("type", DATASET_TYPES),
        path: r.string("path"),
      });
    } else if (entry.startsWith("cached#")) {
      cachedLayers.push({ name: r.string("name"), type: r.oneOf("type", CACHE_TYPES), path: r.string("path") });
    }
  }
  return store ? { store, datasets, cachedLayers } : undefined;
}

export async function listPortalDataStores(portalId: string): Promise<DataStore[]> {
  const items = await queryByPortal("datastores", portalId);
  return items.map(toStore);
}

/** Registers a data store with its contents. The store entry is written last, so a half-written
 * registration is invisible: readers only see a store once its entry exists. */
export async function createDataStore(contents: DataStoreContents): Promise<void> {
  const table = tableName("datastores");
  const { store } = contents;
  const entries = [
    ...contents.datasets.map((d) => ({ datastoreId: store.datastoreId, entry: datasetEntry(d.path), ...d })),
    ...contents.cachedLayers.map((c) => ({ datastoreId: store.datastoreId, entry: cachedEntry(c.path), ...c })),
  ];
  for (let i = 0; i < entries.length; i += 25) {
    let pending: Record<string, unknown>[] = entries.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 8) throw new Error("data store entries could not be written (throttled)");
      const out = await ddb.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as Record<string, unknown>[];
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 25 * 2 ** attempt));
    }
  }
  await ddb.send(
    new PutCommand({
      TableName: table,
      Item: { ...store, entry: STORE_ENTRY },
      ConditionExpression: "attribute_not_exists(datastoreId)",
    }),
  );
}
