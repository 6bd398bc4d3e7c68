// Portal items: what a published service, a bulk-published layer or a registered data store is to the portal.
// An item is the source of truth for who sees its service; the service record keeps a copy of `access` (and
// of the description and tags the catalog shows), changed in the same transaction as the item, with the
// server's catalog version, so every cached catalog sees the change on its next request.
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import {
  batchGet,
  ddb,
  failedConditions,
  isConditionFailure,
  isTransactionConflict,
  retryingConflicts,
  scanAll,
} from "#shared/stores/dynamo.ts";
import { groupTouched } from "#shared/stores/groups.ts";
import { RecordReader } from "#shared/stores/records.ts";
import {
  ACCESS,
  type Access,
  catalogBump,
  serviceKey,
  serviceInfoKey,
  type ServiceType,
} from "#shared/stores/service-keys.ts";

/** The item type of each service type, as the original labels them. */
export const ITEM_TYPES: Readonly<Record<ServiceType, string>> = {
  SceneServer: "Scene Service",
  MapServer: "Map Service",
  VectorTileServer: "Vector Tile Service",
  ImageServer: "Image Service",
  FeatureServer: "Feature Service",
  GPServer: "Geoprocessing Service",
  GeocodeServer: "Geocoding Service",
};
export const DATA_STORE_TYPE = "Data Store";

/** Where a service item's service lives (the key of its record in the services table). */
export interface ServiceRef {
  readonly serverId: string;
  readonly folder: string;
  readonly name: string;
  readonly type: ServiceType;
}

export interface Item {
  readonly itemId: string;
  readonly portalId: string;
  readonly owner: string;
  readonly title: string;
  readonly type: string;
  readonly typeKeywords: readonly string[];
  readonly url: string;
  readonly tags: readonly string[];
  readonly description: string;
  readonly snippet: string;
  readonly access: Access;
  /** The groups the item is shared with besides its access: their members see it too (absent: none). */
  readonly groups?: readonly string[];
  readonly created: number;
  readonly modified: number;
  /** WGS84 `[[xmin, ymin], [xmax, ymax]]` where the content says where it is. */
  readonly extent?: readonly (readonly number[])[];
  readonly service?: ServiceRef;
  /** A bulk-published layer's layer–dataset pair (removed with the item). */
  readonly pair?: { readonly datastoreId: string; readonly path: string };
  /** An uploaded file's item: the file as the uploader named it, its size and type (kept in item files). */
  readonly file?: ItemFile;
  /**
   * A hosted service's item: the bytes of its data, which is mapgate's own (shared/hosted/store.ts), counted
   * against its owner's quota like an uploaded file and removed with the item.
   */
  readonly hostedData?: number;
  /**
   * A hosted service's item: the bytes of its features' attachments (kept in object storage beside its data), counted
   * against its owner's quota as each is kept and given back as each is removed (shared/hosted/attachment-charges.ts).
   */
  readonly attachmentBytes?: number;
  /** A hosted service's item: the file item it was published from (ArcGIS's Service2Data relationship). */
  readonly sourceItemId?: string;
  /** A file uploaded in parts, not yet whole (`addItem` with `multipart=true`); gone once its file is. */
  readonly upload?: ItemUpload;
  /** The owner's folder the item is in (shared/stores/folders.ts); absent: their root folder. */
  readonly ownerFolder?: string;
  /** An item of text (a web map, an app's configuration): where its text is kept and what it takes. */
  readonly text?: ItemText;
  /** Delete protection (`protect`): the item cannot be deleted until `unprotect`. */
  readonly protected?: boolean;
  readonly spatialReference?: string;
  readonly accessInformation?: string;
  readonly licenseInfo?: string;
  /** JSON text of an object (an app's settings), kept as given once checked. */
  readonly properties?: string;
  /** The bytes of the item's resources (shared/stores/item-resources.ts), counted against the quotas. */
  readonly resourceBytes?: number;
  /** An image uploaded as the item's thumbnail, kept in the item files and counted against the quotas. */
  readonly thumbnail?: ItemThumbnail;
  /** Relationships from this item (`<type>:<destination item id>`, addRelationship). */
  readonly related?: readonly string[];
  /** Relationships to this item (`<type>:<origin item id>`): the same relationships, read from the other end. */
  readonly relatedFrom?: readonly string[];
}

/** An item's thumbnail: an image uploaded with addItem or update, kept in the item files under `blob`. */
export interface ItemThumbnail {
  /** As the item answers it (`thumbnail/<file name>`) and `info/` serves it. */
  readonly name: string;
  readonly blob: string;
  readonly size: number;
  readonly contentType: string;
}

/** The key of an item's resource list (a key no item id can take: item ids are 32 hex digits). */
export const resourcesKey = (itemId: string) => ({ itemId: `resources#${itemId}` });

/** A string set as the document client reads it (a Set), as plain strings. */
const stringSet = (value: unknown): string[] | undefined =>
  value instanceof Set ? [...(value as Set<unknown>)].map(String) : undefined;

/**
 * Where an item's text lies: up to INLINE_TEXT_BYTES in a record of its own beside the item (`text#<item id>`, a key
 * no item id can take), so searches never read it; above, in the item files under `blob` (a fresh id per version,
 * so a text being replaced is never overwritten before the item names the new one). Its bytes count against the
 * owner's and organization's quotas as a file's do.
 */
export interface ItemText {
  readonly size: number;
  readonly json: boolean;
  readonly blob?: string;
}

/**
 * A file coming in parts: its name, what its parts count against the quotas so far (`bytes`), and where it stands:
 * `partial` takes parts; `processing` is being (or waits to be, `claimed` 0) assembled; `failed` says why.
 */
export interface ItemUpload {
  readonly state: "partial" | "processing" | "failed";
  readonly name: string;
  readonly bytes: number;
  /** When an assembly began (ms); 0 while an asynchronous commit waits for one. */
  readonly claimed?: number;
  readonly reason?: string;
}

export interface ItemFile {
  /** The file's name as uploaded (untrusted text: escaped wherever it is shown, never a path). */
  readonly name: string;
  readonly size: number;
  readonly contentType: string;
}

/** Item fields an owner may change (`update`). */
export type ItemChanges = Partial<
  Pick<
    Item,
    | "title"
    | "tags"
    | "description"
    | "snippet"
    | "typeKeywords"
    | "url"
    | "extent"
    | "spatialReference"
    | "accessInformation"
    | "licenseInfo"
    | "properties"
  >
>;

const PUBLIC = "public";

export function toItem(record: Record<string, unknown>): Item {
  const r = new RecordReader("item", record);
  const service = r.object("service");
  const pair = r.object("pair");
  const file = r.object("file");
  const upload = r.object("upload");
  const text = r.object("text");
  const thumbnail = r.object("thumbnail");
  const related = stringSet(record.related);
  const relatedFrom = stringSet(record.relatedFrom);
  const extent = record.extent;
  return {
    itemId: r.string("itemId"),
    portalId: r.string("portalId"),
    owner: r.string("owner"),
    title: r.string("title"),
    type: r.string("type"),
    typeKeywords: r.strings("typeKeywords"),
    url: r.string("url"),
    tags: r.strings("tags"),
    description: r.string("description"),
    snippet: r.string("snippet"),
    access: r.oneOf("access", ACCESS),
    ...(record.groups !== undefined ? { groups: r.strings("groups") } : {}),
    created: r.number("created"),
    modified: r.number("modified"),
    ...(Array.isArray(extent) ? { extent: extent as number[][] } : {}),
    ...(service
      ? {
          service: {
            serverId: String(service.serverId),
            folder: String(service.folder),
            name: String(service.name),
            type: String(service.type) as ServiceType,
          },
        }
      : {}),
    ...(pair ? { pair: { datastoreId: String(pair.datastoreId), path: String(pair.path) } } : {}),
    ...(file
      ? { file: { name: String(file.name), size: Number(file.size), contentType: String(file.contentType) } }
      : {}),
    ...(typeof record.hostedData === "number" ? { hostedData: record.hostedData } : {}),
    ...(typeof record.sourceItemId === "string" ? { sourceItemId: record.sourceItemId } : {}),
    ...(typeof record.ownerFolder === "string" ? { ownerFolder: record.ownerFolder } : {}),
    ...(text
      ? {
          text: {
            size: Number(text.size),
            json: text.json === true,
            ...(typeof text.blob === "string" ? { blob: text.blob } : {}),
          },
        }
      : {}),
    ...(record.protected === true ? { protected: true } : {}),
    ...(typeof record.spatialReference === "string" ? { spatialReference: record.spatialReference } : {}),
    ...(typeof record.accessInformation === "string" ? { accessInformation: record.accessInformation } : {}),
    ...(typeof record.licenseInfo === "string" ? { licenseInfo: record.licenseInfo } : {}),
    ...(typeof record.properties === "string" ? { properties: record.properties } : {}),
    ...(typeof record.resourceBytes === "number" ? { resourceBytes: record.resourceBytes } : {}),
    ...(typeof record.attachmentBytes === "number" ? { attachmentBytes: record.attachmentBytes } : {}),
    ...(thumbnail
      ? {
          thumbnail: {
            name: String(thumbnail.name),
            blob: String(thumbnail.blob),
            size: Number(thumbnail.size),
            contentType: String(thumbnail.contentType),
          },
        }
      : {}),
    ...(related && related.length > 0 ? { related } : {}),
    ...(relatedFrom && relatedFrom.length > 0 ? { relatedFrom } : {}),
    ...(upload
      ? {
          upload: {
            state: String(upload.state) as ItemUpload["state"],
            name: String(upload.name),
            bytes: Number(upload.bytes),
            ...(typeof upload.claimed === "number" ? { claimed: upload.claimed } : {}),
            ...(typeof upload.reason === "string" ? { reason: upload.reason } : {}),
          },
        }
      : {}),
  };
}

/**
 * The stored form: lists copied (the SDK marshals plain arrays), and `listed` set only on public items, so
 * the sparse `byPublic` index holds public items alone.
 */
function record(item: Item): Record<string, unknown> {
  return {
    ...item,
    typeKeywords: [...item.typeKeywords],
    tags: [...item.tags],
    ...(item.groups ? { groups: [...item.groups] } : {}),
    ...(item.extent ? { extent: item.extent.map((p) => [...p]) } : {}),
    ...(item.service ? { service: { ...item.service } } : {}),
    ...(item.pair ? { pair: { ...item.pair } } : {}),
    ...(item.file ? { file: { ...item.file } } : {}),
    ...(item.upload ? { upload: { ...item.upload } } : {}),
    ...(item.text ? { text: { ...item.text } } : {}),
    ...(item.thumbnail ? { thumbnail: { ...item.thumbnail } } : {}),
    // String sets, as addRelationship's ADD and DELETE change them (an empty set cannot be stored).
    related: item.related && item.related.length > 0 ? new Set(item.related) : undefined,
    relatedFrom: item.relatedFrom && item.relatedFrom.length > 0 ? new Set(item.relatedFrom) : undefined,
    createdKey: String(item.created).padStart(16, "0"),
    ...(item.access === "public" ? { listed: PUBLIC } : {}),
  };
}

/** The write that creates an item, for the transaction that creates what it describes. */
export const itemPut = (item: Item) => ({
  Put: {
    TableName: tableName("items"),
    Item: record(item),
    ConditionExpression: "attribute_not_exists(itemId)",
  },
});

/**
 * The bytes of uploaded files an organization, and each of its members, keeps: counters in the items table
 * (keys no item id can take: item ids are 32 hex digits), changed in the transaction that adds or deletes a file's
 * item, so a quota holds under concurrent uploads and a crash can never count a file twice or lose one.
 */
const usageKey = (portalId: string, username?: string) => ({
  itemId: username === undefined ? `usage#${portalId}` : `usage#${portalId}#${username}`,
});

/** A file would take its owner, or their organization, past what they may keep. */
export class StorageQuotaError extends Error {
  readonly whose: "user" | "organization";
  constructor(whose: "user" | "organization") {
    super(`The ${whose}'s storage quota would be exceeded.`);
    this.whose = whose;
    this.name = "StorageQuotaError";
  }
}

function usageChange(portalId: string, username: string | undefined, bytes: number, limit?: number) {
  return {
    Update: {
      TableName: tableName("items"),
      Key: usageKey(portalId, username),
      UpdateExpression: "ADD #b :n",
      ExpressionAttributeNames: { "#b": "bytes" },
      ExpressionAttributeValues: { ":n": bytes, ...(limit !== undefined ? { ":room": limit - bytes } : {}) },
      // DynamoDB's conditions cannot add: "used + size ≤ limit" is asked as "used ≤ limit − size".
      ...(limit !== undefined ? { ConditionExpression: "attribute_not_exists(#b) OR #b <= :room" } : {}),
    },
  };
}

/** The bytes an item counts against its owner's and organization's quotas (its file, or its hosted data). */
const keptBytes = (item: Item) =>
  (item.file?.size ?? item.hostedData ?? item.upload?.bytes ?? item.text?.size ?? 0) +
  (item.resourceBytes ?? 0) +
  (item.attachmentBytes ?? 0) +
  (item.thumbnail?.size ?? 0);

function usageRelease(item: Item) {
  const bytes = keptBytes(item);
  return bytes > 0
    ? [usageChange(item.portalId, item.owner, -bytes), usageChange(item.portalId, undefined, -bytes)]
    : [];
}

/**
 * The writes that count `bytes` against a member's and their organization's quotas, for a transaction that makes
 * what takes them (a hosted service's data); `quotaFailure` reads which refused, by where they were placed.
 */
export function usageCharge(
  portalId: string,
  owner: string,
  bytes: number,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): object[] {
  if (bytes > quota.userBytes) throw new StorageQuotaError("user");
  if (bytes > quota.organizationBytes) throw new StorageQuotaError("organization");
  return [
    usageChange(portalId, owner, bytes, quota.userBytes),
    usageChange(portalId, undefined, bytes, quota.organizationBytes),
  ];
}

/**
 * Counts `delta` bytes of a hosted service's attachments against its item and its owner's and organization's quotas
 * (a negative delta gives them back, at most what the item counts), at once: past a quota nothing is counted
 * (StorageQuotaError). Counted by adding,
 * so concurrent attachments need no turns; an owner changed meanwhile is read again, so the bytes go to whoever holds
 * the item. An item gone: a charge is ItemGoneError, a release nothing (the item's deletion gave back what it held).
 */
export async function chargeAttachments(
  itemId: string,
  delta: number,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): Promise<void> {
  if (delta === 0) return;
  for (let attempt = 0; attempt < 8; attempt++) {
    const item = await getItem(itemId);
    if (!item) {
      if (delta > 0) throw new ItemGoneError();
      return;
    }
    // Never more given back than was counted (attachments kept before they were counted were never charged).
    const change = delta > 0 ? delta : -Math.min(-delta, item.attachmentBytes ?? 0);
    if (change === 0) return;
    const actions = [
      {
        Update: {
          ...itemKey(item),
          UpdateExpression: "ADD #a :d",
          ConditionExpression:
            change > 0
              ? "attribute_exists(itemId) AND #o = :o"
              : "attribute_exists(itemId) AND #o = :o AND #a >= :back",
          ExpressionAttributeNames: { "#a": "attachmentBytes", "#o": "owner" },
          ExpressionAttributeValues: { ":d": change, ":o": item.owner, ...(change < 0 ? { ":back": -change } : {}) },
        },
      },
      ...usageDelta(item, change, quota),
    ];
    try {
      await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
      return;
    } catch (err) {
      if (failedConditions(err)?.includes(0)) continue;
      throw (change > 0 ? quotaFailure(err, 1) : undefined) ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
    }
  }
  throw new ItemBusyError();
}

/**
 * The usage writes of a change of `delta` bytes an item keeps, for its owner and organization: with `quota`, growth is
 * charged against the quotas (usageCharge: refused past them); without, counted with no limit; bytes given back when
 * it shrinks; nothing when unchanged.
 */
export function usageDelta(
  item: Pick<Item, "portalId" | "owner">,
  delta: number,
  quota?: { readonly userBytes: number; readonly organizationBytes: number },
): object[] {
  if (delta === 0) return [];
  if (delta > 0 && quota) return usageCharge(item.portalId, item.owner, delta, quota);
  return [usageChange(item.portalId, item.owner, delta), usageChange(item.portalId, undefined, delta)];
}

/** Which quota refused a transaction whose usageCharge writes were placed from index `at` on (else undefined). */
export function quotaFailure(err: unknown, at: number): StorageQuotaError | undefined {
  const failed = failedConditions(err) ?? [];
  if (failed.includes(at)) return new StorageQuotaError("user");
  if (failed.includes(at + 1)) return new StorageQuotaError("organization");
  return undefined;
}

/** Bytes of uploaded files kept by a member (with `username`) or by the whole organization. */
export async function storageUsed(portalId: string, username?: string): Promise<number> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("items"), Key: usageKey(portalId, username), ConsistentRead: true }),
  );
  return typeof Item?.bytes === "number" ? Item.bytes : 0;
}

/**
 * Creates an uploaded file's item and counts its bytes against its owner's and organization's quotas, at once:
 * past either quota nothing is written (StorageQuotaError).
 */
export async function putFileItem(
  item: Item & { file: ItemFile },
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): Promise<void> {
  // A counter not made yet passes any condition: a file larger than a whole quota is refused here.
  if (item.file.size > quota.userBytes) throw new StorageQuotaError("user");
  if (item.file.size > quota.organizationBytes) throw new StorageQuotaError("organization");
  const actions = [
    itemPut(item),
    usageChange(item.portalId, item.owner, item.file.size, quota.userBytes),
    usageChange(item.portalId, undefined, item.file.size, quota.organizationBytes),
  ];
  // Every upload of an organization updates its one counter: concurrent ones cancel each other with
  // TransactionConflict on DynamoDB, and are tried again rather than answered 500.
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    throw quotaFailure(err, 1) ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}

/** Creates an item on its own, unless it exists (for items of what existed before items did). */
export async function putMissingItem(item: Item): Promise<boolean> {
  try {
    await ddb.send(new PutCommand(itemPut(item).Put));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

export async function getItem(itemId: string): Promise<Item | undefined> {
  if (!/^[0-9a-f]{32}$/.test(itemId)) return undefined;
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("items"), Key: { itemId }, ConsistentRead: true }),
  );
  return Item ? toItem(Item) : undefined;
}

/** A page of a query over one index partition, newest first, with where to go on. */
export interface ItemPage {
  readonly items: Item[];
  readonly next: Record<string, unknown> | undefined;
}

export type ItemIndex = "byOwner" | "byPortal" | "byPublic";

/** The `byPublic` index holds one partition: every public item. */
export const PUBLIC_PARTITION = PUBLIC;
const INDEX_KEYS: Readonly<Record<ItemIndex, string>> = { byOwner: "owner", byPortal: "portalId", byPublic: "listed" };

/** One page (≤ `limit` items) of one index partition: an owner's items, an organization's, or public ones. */
export async function queryItems(
  index: ItemIndex,
  value: string,
  limit: number,
  start?: Record<string, unknown>,
): Promise<ItemPage> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: tableName("items"),
      IndexName: index,
      KeyConditionExpression: "#k = :v",
      ExpressionAttributeNames: { "#k": INDEX_KEYS[index] },
      ExpressionAttributeValues: { ":v": value },
      ScanIndexForward: false,
      Limit: limit,
      ExclusiveStartKey: start,
    }),
  );
  return { items: (out.Items ?? []).map(toItem), next: out.LastEvaluatedKey };
}

/**
 * Items as they are now, read from the table itself (strongly consistent): index pages may lag a change by a
 * moment, so whatever is shown is checked against these. Missing ids are left out.
 */
export async function getItems(itemIds: readonly string[]): Promise<Map<string, Item>> {
  const out = new Map<string, Item>();
  const table = tableName("items");
  const ids = [...new Set(itemIds)];
  // BatchGetItem takes at most 100 keys.
  for (let i = 0; i < ids.length; i += 100) {
    const keys = ids.slice(i, i + 100).map((itemId) => ({ itemId }));
    const found = await batchGet({ [table]: { Keys: keys, ConsistentRead: true } });
    for (const record of found[table] ?? []) out.set(String(record.itemId), toItem(record));
  }
  return out;
}

/** The item no longer exists (a concurrent delete won). */
export class ItemGoneError extends Error {
  constructor() {
    super("The item no longer exists.");
    this.name = "ItemGoneError";
  }
}

/** The item kept changing under concurrent requests: the caller may try again. */
export class ItemBusyError extends Error {
  constructor() {
    super("The item is being changed by other requests.");
    this.name = "ItemBusyError";
  }
}

/** The item changed since it was read (its access is not what the change was computed from). */
export class ItemChangedError extends Error {}

/**
 * Every write to an item also advances its server's catalog version, so concurrent changes of one server's
 * items cancel each other with TransactionConflict: they are retried with jittered backoff (≈ 2.5 s in all).
 */
async function transact(items: object[], guarded = false): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await ddb.send(new TransactWriteCommand({ TransactItems: items as never }));
      return;
    } catch (err) {
      if (failedConditions(err)?.includes(0)) throw guarded ? new ItemChangedError() : new ItemGoneError();
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (!reasons.some((r) => r.Code === "TransactionConflict")) throw err;
      if (attempt >= 8) throw new ItemBusyError();
      await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
    }
  }
}

const itemKey = (item: Pick<Item, "itemId">) => ({ TableName: tableName("items"), Key: { itemId: item.itemId } });
const serviceOf = (item: Item) => ({
  TableName: tableName("services"),
  Key: serviceKey(item.service as ServiceRef),
  ConditionExpression: "itemId = :id",
});
const pairOf = (item: Item) => ({
  TableName: tableName("layers"),
  Key: { datastoreId: item.pair?.datastoreId, entry: `pair#${item.pair?.path}` },
});

/** Who an item is shared with: its access, and the groups whose members see it too. */
export interface Sharing {
  readonly access: Access;
  readonly groups: readonly string[];
}

/** The most groups one item (and its service) may be shared with: the service record carries them all. */
export const MAX_ITEM_GROUPS = 100;
/**
 * Group changes one share request may make: each added group is two actions of the item's transaction (its record
 * of the item, and a check that the group is not being deleted), and a transaction holds at most 100.
 */
export const MAX_GROUP_CHANGES = 45;

/** A group the item was being shared with is gone or being deleted (a concurrent delete won). */
export class SharedGroupGoneError extends Error {
  constructor() {
    super("A group the item was being shared with no longer exists.");
    this.name = "SharedGroupGoneError";
  }
}

/** The partition key and entry of a group's record of an item shared with it (the group's content). */
export const groupItemKey = (groupId: string, itemId: string) => ({ groupId, entry: `item#${itemId}` });

const sameGroups = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((g) => b.includes(g));

/**
 * Shares an item (public, org or private, and with groups) with its service and layer pair, in one
 * transaction that also advances the catalog version and records the item in each group it joins or leaves.
 * `next` computes the new sharing from the current one; the write applies only if the item is still as it was
 * read (its `modified`), else it is read again and `next` asked again, so a change computed from a stale read
 * never lands. A concurrent delete wins cleanly (ItemGoneError).
 */
export async function changeItemSharing(item: Item, next: (current: Sharing) => Sharing): Promise<Item> {
  let current = item;
  for (let attempt = 0; attempt < 10; attempt++) {
    const was: Sharing = { access: current.access, groups: current.groups ?? [] };
    const wanted = next(was);
    const groups = [...new Set(wanted.groups)];
    if (wanted.access === was.access && sameGroups(groups, was.groups)) return current;
    try {
      await writeSharing(current, wanted.access, groups);
      return { ...current, access: wanted.access, groups };
    } catch (err) {
      if (!(err instanceof ItemChangedError)) throw err;
      const fresh = await getItem(current.itemId);
      if (!fresh) throw new ItemGoneError();
      current = fresh;
    }
  }
  throw new ItemBusyError();
}

/** Changes only an item's access (public, org or private), keeping its groups. */
export const changeItemAccess = (item: Item, next: (current: Access) => Access): Promise<Item> =>
  changeItemSharing(item, (s) => ({ access: next(s.access), groups: s.groups }));

async function writeSharing(item: Item, access: Access, groups: readonly string[]): Promise<void> {
  const now = Math.max(Date.now(), item.modified + 1);
  const before = item.groups ?? [];
  const added = groups.filter((g) => !before.includes(g));
  const removed = before.filter((g) => !groups.includes(g));
  // Lists, written whole: an empty list is removed rather than stored.
  const setGroups = groups.length > 0;
  const groupsPart = setGroups ? ", #g = :g" : "";
  const groupsRemove = setGroups ? "" : " REMOVE #g";
  const groupValues = setGroups ? { ":g": [...groups] } : {};
  const groupsTable = tableName("groups");
  const actions = [
    {
      Update: {
        ...itemKey(item),
        UpdateExpression:
          access === "public"
            ? `SET #a = :a, modified = :m, listed = :l${groupsPart}${groupsRemove}`
            : `SET #a = :a, modified = :m${groupsPart} REMOVE listed${setGroups ? "" : ", #g"}`,
        ConditionExpression: "#a = :was AND modified = :wasm",
        ExpressionAttributeNames: { "#a": "access", "#g": "groups" },
        ExpressionAttributeValues: {
          ":a": access,
          ":was": item.access,
          ":wasm": item.modified,
          ":m": now,
          ...groupValues,
          ...(access === "public" ? { ":l": PUBLIC } : {}),
        },
      },
    },
    ...(item.service
      ? [
          {
            Update: {
              ...serviceOf(item),
              UpdateExpression: `SET #a = :a${groupsPart}${groupsRemove}`,
              ExpressionAttributeNames: { "#a": "access", "#g": "groups" },
              ExpressionAttributeValues: { ":a": access, ":id": item.itemId, ...groupValues },
            },
          },
          catalogBump(item.service.serverId),
        ]
      : []),
    ...(item.pair
      ? [
          {
            Update: {
              ...pairOf(item),
              UpdateExpression: `SET #a = :a${groupsPart}${groupsRemove}`,
              ConditionExpression: "attribute_exists(entry)",
              ExpressionAttributeNames: { "#a": "access", "#g": "groups" },
              ExpressionAttributeValues: { ":a": access, ...groupValues },
            },
          },
        ]
      : []),
    ...removed.map((groupId) => ({ Delete: { TableName: groupsTable, Key: groupItemKey(groupId, item.itemId) } })),
    ...added.map((groupId) => ({
      Put: {
        TableName: groupsTable,
        Item: { ...groupItemKey(groupId, item.itemId), itemId: item.itemId, shared: now },
      },
    })),
    // Last: a group deleted meanwhile cancels the share, so no item is left shared with a deleted group (a
    // delete marks the group before it reads the items to unshare).
    ...added.map((groupId) => groupTouched(groupId)),
  ];
  try {
    await transact(actions, true);
  } catch (err) {
    const checksFrom = actions.length - added.length;
    if (failedConditions(err)?.some((i) => i >= checksFrom)) throw new SharedGroupGoneError();
    throw err;
  }
}

/** Changes an item's title, tags, description or snippet (the service's copies with it). */
export async function updateItem(item: Item, changes: ItemChanges): Promise<void> {
  const now = Math.max(Date.now(), item.modified + 1);
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":m": now };
  const sets = ["modified = :m"];
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) continue;
    names[`#${key}`] = key;
    values[`:${key}`] = Array.isArray(value) ? [...value] : value;
    sets.push(`#${key} = :${key}`);
  }
  const serviceSets = (["description", "tags"] as const).filter((k) => changes[k] !== undefined);
  await transact([
    {
      Update: {
        ...itemKey(item),
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(itemId)",
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      },
    },
    ...(item.service && serviceSets.length > 0
      ? [
          {
            Update: {
              ...serviceOf(item),
              UpdateExpression: `SET ${serviceSets.map((k) => `#${k} = :${k}`).join(", ")}`,
              ExpressionAttributeNames: Object.fromEntries(serviceSets.map((k) => [`#${k}`, k])),
              ExpressionAttributeValues: {
                ":id": item.itemId,
                ...Object.fromEntries(serviceSets.map((k) => [`:${k}`, values[`:${k}`]])),
              },
            },
          },
          catalogBump(item.service.serverId),
        ]
      : []),
  ]);
}

/**
 * Deletes an item and unpublishes what it describes, all at once: the service record, what serving it
 * kept, its layer–dataset pair, and a new catalog version. The name is free again the moment this commits.
 */
export async function deleteItem(item: Item): Promise<Item> {
  // What the item gives back (its upload's parts so far, its resources, its thumbnail) is what it counted when read:
  // the delete holds only if the item is still so, else it is read again.
  let current = item;
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      await deleteItemAsRead(current);
      return current;
    } catch (err) {
      if (!(err instanceof ItemGoneError)) throw err;
      const fresh = await getItem(current.itemId);
      if (!fresh) throw err;
      current = fresh;
    }
  }
  throw new ItemBusyError();
}

async function deleteItemAsRead(item: Item): Promise<void> {
  const asRead = item.upload
    ? {
        ConditionExpression: "attribute_exists(itemId) AND #u.#b = :b",
        ExpressionAttributeNames: { "#u": "upload", "#b": "bytes" },
        ExpressionAttributeValues: { ":b": item.upload.bytes },
      }
    : { ConditionExpression: "attribute_exists(itemId)" };
  // Delete protection is checked in the delete itself, so a protect made meanwhile wins (ItemProtectedError); its
  // resources and thumbnail must be as read, so the bytes given back are the bytes it holds.
  const guarded = {
    ...asRead,
    ConditionExpression:
      `${asRead.ConditionExpression} AND (attribute_not_exists(#p) OR #p = :no)` +
      " AND (attribute_not_exists(#rb) OR #rb = :rb) AND (attribute_not_exists(#th) OR #th.#blob = :tb)" +
      " AND (attribute_not_exists(#ab) OR #ab = :ab) AND (attribute_not_exists(#hd) OR #hd = :hd)",
    ExpressionAttributeNames: {
      ...("ExpressionAttributeNames" in asRead ? asRead.ExpressionAttributeNames : {}),
      "#p": "protected",
      "#rb": "resourceBytes",
      "#ab": "attachmentBytes",
      "#hd": "hostedData",
      "#th": "thumbnail",
      "#blob": "blob",
    },
    ExpressionAttributeValues: {
      ...("ExpressionAttributeValues" in asRead ? asRead.ExpressionAttributeValues : {}),
      ":no": false,
      ":rb": item.resourceBytes ?? 0,
      ":ab": item.attachmentBytes ?? 0,
      ":hd": item.hostedData ?? 0,
      ":tb": item.thumbnail?.blob ?? "",
    },
  };
  try {
    await transact([
      { Delete: { ...itemKey(item), ...guarded } },
      ...(item.text && item.text.blob === undefined
        ? [{ Delete: { TableName: tableName("items"), Key: textKey(item.itemId) } }]
        : []),
      // Its resources' list goes with it (their bytes are given back with the item's, as resourceBytes counts them).
      ...(item.resourceBytes !== undefined
        ? [{ Delete: { TableName: tableName("items"), Key: resourcesKey(item.itemId) } }]
        : []),
      ...(item.service
        ? [
            {
              Delete: {
                ...serviceOf(item),
                ExpressionAttributeValues: { ":id": item.itemId },
              },
            },
            { Delete: { TableName: tableName("services"), Key: serviceInfoKey(item.service) } },
            catalogBump(item.service.serverId),
          ]
        : []),
      ...(item.pair ? [{ Delete: pairOf(item) }] : []),
      // An uploaded file's bytes (or a hosted service's data) leave its owner's and organization's usage with the item.
      ...usageRelease(item),
    ]);
  } catch (err) {
    if (err instanceof ItemGoneError && (await getItem(item.itemId))?.protected) throw new ItemProtectedError();
    throw err;
  }
  // The groups' records of the item are an index that group content checks against the item itself: removed
  // after the item, so a failure here leaves only entries that no longer find an item.
  for (const groupId of item.groups ?? []) {
    await ddb.send(new DeleteCommand({ TableName: tableName("groups"), Key: groupItemKey(groupId, item.itemId) }));
  }
}

/**
 * Deletes an item whose file is still coming in parts (`cancel`, or an upload abandoned for days), giving back what
 * its parts counted, only while it takes parts: a commit begun meanwhile keeps it (UploadStateError), a part that
 * arrived meanwhile is counted and given back too (read again), an item deleted meanwhile is ItemGoneError.
 */
export async function cancelUpload(item: Item & { upload: ItemUpload }): Promise<void> {
  let current = item;
  for (let attempt = 0; ; attempt++) {
    try {
      await retryingConflicts(() =>
        ddb.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Delete: {
                  ...itemKey(current),
                  ConditionExpression: "#u.#s = :partial AND #u.#b = :b",
                  ExpressionAttributeNames: { "#u": "upload", "#s": "state", "#b": "bytes" },
                  ExpressionAttributeValues: { ":partial": "partial", ":b": current.upload.bytes },
                },
              },
              ...usageRelease(current),
            ] as never,
          }),
        ),
      );
      return;
    } catch (err) {
      if (!failedConditions(err)?.includes(0)) throw isTransactionConflict(err) ? new ItemBusyError() : err;
      const now = await getItem(item.itemId);
      if (!now) throw new ItemGoneError();
      if (now.upload?.state !== "partial") throw new UploadStateError();
      if (attempt >= 8) throw new ItemBusyError();
      current = now as Item & { upload: ItemUpload };
    }
  }
}

// Files uploaded in parts (shared/upload-parts.ts). The item exists from `addItem` on, as `upload`; each part's bytes
// count against the quotas as it arrives, and the commit that makes the file whole counts the file instead.

/** The item is no longer taking parts (committed, or being committed). */
export class UploadStateError extends Error {
  constructor() {
    super("The item is no longer taking parts.");
    this.name = "UploadStateError";
  }
}

/**
 * Counts `delta` more bytes (fewer, when a part is replaced by a smaller one) against the item's upload and its
 * owner's and organization's quotas, at once, while the item still takes parts.
 */
export async function chargeUpload(
  item: Item,
  delta: number,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): Promise<void> {
  const limits = delta > 0 ? [quota.userBytes, quota.organizationBytes] : [undefined, undefined];
  if (delta > quota.userBytes) throw new StorageQuotaError("user");
  if (delta > quota.organizationBytes) throw new StorageQuotaError("organization");
  const actions = [
    {
      Update: {
        ...itemKey(item),
        // ADD takes top-level attributes only: a nested counter is SET from itself.
        UpdateExpression: "SET #u.#b = #u.#b + :d",
        ConditionExpression: "#u.#s = :partial",
        ExpressionAttributeNames: { "#u": "upload", "#b": "bytes", "#s": "state" },
        ExpressionAttributeValues: { ":d": delta, ":partial": "partial" },
      },
    },
    usageChange(item.portalId, item.owner, delta, limits[0]),
    usageChange(item.portalId, undefined, delta, limits[1]),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new UploadStateError();
    throw quotaFailure(err, 1) ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}

/**
 * Takes the assembly of an upload: a partial upload (`from` partial), or one whose asynchronous commit waits or
 * whose assembler stopped before `staleBefore` (`from` processing). False when someone else holds it.
 */
export async function claimUpload(
  item: Item,
  from: "partial" | "processing",
  claimed: number,
  staleBefore = 0,
): Promise<boolean> {
  try {
    await ddb.send(
      new UpdateCommand({
        ...itemKey(item),
        UpdateExpression: "SET #u.#s = :processing, #u.#c = :c",
        ConditionExpression:
          from === "partial"
            ? "#u.#s = :partial"
            : "#u.#s = :processing AND (attribute_not_exists(#u.#c) OR #u.#c < :stale)",
        ExpressionAttributeNames: { "#u": "upload", "#s": "state", "#c": "claimed" },
        ExpressionAttributeValues: {
          ":processing": "processing",
          ":c": claimed,
          ...(from === "partial" ? { ":partial": "partial" } : { ":stale": staleBefore }),
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** The claim an assembler holds: the item still processing, claimed when it claimed it. */
const heldClaim = (claimed: number) => ({
  ConditionExpression: "#u.#s = :processing AND #u.#c = :c",
  names: { "#u": "upload", "#s": "state", "#c": "claimed" },
  values: { ":processing": "processing", ":c": claimed },
});

/** The assembler no longer holds the upload (another took it over after it stalled, or the item is gone). */
export class ClaimLostError extends Error {
  constructor() {
    super("The upload's assembly was taken over or the item deleted.");
    this.name = "ClaimLostError";
  }
}

/**
 * The upload is whole: the item gets its file, and the quotas count the file's size instead of its parts' (the
 * difference charged, or given back).
 */
export async function completeUpload(
  item: Item & { upload: ItemUpload },
  claimed: number,
  file: ItemFile,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): Promise<void> {
  const delta = file.size - item.upload.bytes;
  const claim = heldClaim(claimed);
  const actions = [
    {
      Update: {
        ...itemKey(item),
        UpdateExpression: "SET #f = :f, modified = :m REMOVE #u",
        ConditionExpression: claim.ConditionExpression,
        ExpressionAttributeNames: { ...claim.names, "#f": "file" },
        ExpressionAttributeValues: {
          ...claim.values,
          ":f": { ...file },
          ":m": Math.max(Date.now(), item.modified + 1),
        },
      },
    },
    ...(delta !== 0
      ? [
          usageChange(item.portalId, item.owner, delta, delta > 0 ? quota.userBytes : undefined),
          usageChange(item.portalId, undefined, delta, delta > 0 ? quota.organizationBytes : undefined),
        ]
      : []),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new ClaimLostError();
    throw quotaFailure(err, 1) ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}

/** The upload failed (`reason` is what its owner reads): its parts' bytes are given back to the quotas. */
export async function failUpload(item: Item & { upload: ItemUpload }, claimed: number, reason: string): Promise<void> {
  const claim = heldClaim(claimed);
  const bytes = item.upload.bytes;
  const actions = [
    {
      Update: {
        ...itemKey(item),
        UpdateExpression: "SET #u.#s = :failed, #u.#r = :r, #u.#b = :zero, modified = :m",
        ConditionExpression: `${claim.ConditionExpression} AND #u.#b = :b`,
        ExpressionAttributeNames: { ...claim.names, "#r": "reason", "#b": "bytes" },
        ExpressionAttributeValues: {
          ...claim.values,
          ":failed": "failed",
          ":r": reason,
          ":zero": 0,
          ":b": bytes,
          ":m": Math.max(Date.now(), item.modified + 1),
        },
      },
    },
    ...(bytes !== 0
      ? [usageChange(item.portalId, item.owner, -bytes), usageChange(item.portalId, undefined, -bytes)]
      : []),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new ClaimLostError();
    throw err;
  }
}

/**
 * How long a hosted service's definition change may hold its lock: a change that crashed frees the service after
 * this, and a change runs far shorter (one GeoPackage copied, changed and put back).
 */
export const DEFINING_LOCK_MS = 120_000;

/** Another change of the same hosted service's definition is running. */
export class DefinitionBusyError extends Error {
  constructor() {
    super("The service's definition is being changed by another request.");
    this.name = "DefinitionBusyError";
  }
}

/**
 * Takes a hosted service's definition lock on its item (one change at a time, whichever function runs it, so no
 * change is lost to another made at once); answers the lock's stamp, which settling and releasing name.
 */
export async function lockHostedData(item: Item, now = Date.now()): Promise<number> {
  try {
    await ddb.send(
      new UpdateCommand({
        ...itemKey(item),
        UpdateExpression: "SET definingSince = :now",
        ConditionExpression:
          "attribute_exists(itemId) AND (attribute_not_exists(definingSince) OR definingSince < :stale)",
        ExpressionAttributeValues: { ":now": now, ":stale": now - DEFINING_LOCK_MS },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new DefinitionBusyError();
    throw err;
  }
  return now;
}

/** Releases the lock of a change that made nothing (its data unchanged). */
export async function unlockHostedData(item: Item, stamp: number): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        ...itemKey(item),
        UpdateExpression: "REMOVE definingSince",
        ConditionExpression: "definingSince = :mine",
        ExpressionAttributeValues: { ":mine": stamp },
      }),
    );
  } catch (err) {
    // Taken over after it went stale: nothing of ours to release.
    if (!isConditionFailure(err)) throw err;
  }
}

/**
 * Releases every hosted service's definition lock taken before `before`: for the local engine at its start, when the
 * only process that could hold one (the engine before it, which owned the data folder alone) is gone, so an edit or a
 * definition change killed mid-way does not keep its service busy for the lock's lease. Each release names the lock
 * it found (a lock taken since is kept). Answers how many were released. Never on AWS, where a holder may still run.
 */
export async function releaseDefinitionLocks(before: number): Promise<number> {
  const held = await scanAll({
    TableName: tableName("items"),
    ProjectionExpression: "itemId, definingSince",
    FilterExpression: "definingSince < :before",
    ExpressionAttributeValues: { ":before": before },
  });
  let released = 0;
  for (const row of held) {
    const stamp = row.definingSince;
    if (typeof row.itemId !== "string" || typeof stamp !== "number") continue;
    try {
      await ddb.send(
        new UpdateCommand({
          ...itemKey({ itemId: row.itemId }),
          UpdateExpression: "REMOVE definingSince",
          ConditionExpression: "definingSince = :found",
          ExpressionAttributeValues: { ":found": stamp },
        }),
      );
      released++;
    } catch (err) {
      // Taken again since the scan read it (by a request of this engine): that lock is kept.
      if (!isConditionFailure(err)) throw err;
    }
  }
  return released;
}

/**
 * Records a hosted service's data size, under its lock, before the changed data takes the kept data's place: the
 * difference counts against (or is given back to) its owner's and organization's quotas, and growing past either
 * is a StorageQuotaError (nothing recorded, nothing replaced). `also` are writes made in the same transaction (the
 * service record's layers).
 */
export async function settleHostedData(
  item: Item,
  stamp: number,
  bytes: number,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
  also: readonly object[] = [],
  extent?: readonly [number, number, number, number],
): Promise<void> {
  const delta = bytes - (item.hostedData ?? 0);
  const now = Math.max(Date.now(), item.modified + 1);
  // A change of rows moves the item's extent (WGS 84 corners, as publishing records it).
  const where = extent
    ? {
        set: ", extent = :e",
        values: {
          ":e": [
            [extent[0], extent[1]],
            [extent[2], extent[3]],
          ],
        },
      }
    : { set: "", values: {} };
  try {
    // Changes of one organization's data meet on its usage counter: tried again on conflict.
    await retryingConflicts(() =>
      ddb.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                ...itemKey(item),
                UpdateExpression: `SET hostedData = :b, modified = :m${where.set}`,
                ConditionExpression: "definingSince = :mine",
                ExpressionAttributeValues: { ":b": bytes, ":m": now, ":mine": stamp, ...where.values },
              },
            },
            ...usageDelta(item, delta, quota),
            // The service record's layers, when the change gave or took some (shared/stores/services.ts).
            ...also,
          ],
        }),
      ),
    );
  } catch (err) {
    const refused = delta > 0 ? quotaFailure(err, 1) : undefined;
    if (refused) throw refused;
    throw err;
  }
}

/**
 * Records a hosted service's data size after an edit changed its rows, the difference counted against (or given back
 * to) its owner's and organization's usage with no limit: the rows are kept already (an edit is refused before it
 * writes while the owner is at a quota). Held only while the item is as read (its size and owner) and no definition
 * change holds the service: else it is left to whoever changed it (a definition change measures the data whole, and a
 * later edit measures it again), so an older measurement never replaces a newer one, and the usage moves exactly as
 * the recorded size does. Whether it was recorded.
 */
export async function noteHostedDataSize(item: Item, bytes: number): Promise<boolean> {
  const was = item.hostedData ?? 0;
  if (bytes === was) return true;
  const recorded = {
    Update: {
      ...itemKey(item),
      UpdateExpression: "SET hostedData = :b",
      ConditionExpression:
        "attribute_exists(itemId) AND attribute_not_exists(definingSince) AND #o = :o AND (hostedData = :was OR (attribute_not_exists(hostedData) AND :was = :zero))",
      ExpressionAttributeNames: { "#o": "owner" },
      ExpressionAttributeValues: { ":b": bytes, ":was": was, ":zero": 0, ":o": item.owner },
    },
  };
  try {
    await transact([recorded, ...usageDelta(item, bytes - was)]);
    return true;
  } catch (err) {
    if (err instanceof ItemGoneError) return false;
    throw err;
  }
}

// Items of text (web maps, apps' configurations): the text is kept beside the item (ItemText) and counted against
// the quotas with it.

/** The key of an item's text record (a key no item id can take: item ids are 32 hex digits). */
const textKey = (itemId: string) => ({ itemId: `text#${itemId}` });

/** The item is protected from deletion (`protect`). */
export class ItemProtectedError extends Error {
  constructor() {
    super("The item is protected from deletion.");
    this.name = "ItemProtectedError";
  }
}

/** A text's writes beside its item: its record when it is kept there (the item files hold the larger ones). */
const textPut = (itemId: string, text: ItemText, body: string) =>
  text.blob === undefined ? [{ Put: { TableName: tableName("items"), Item: { ...textKey(itemId), body } } }] : [];

/**
 * Creates an item of text (its text kept in the same transaction when it is small; a larger one is in the item
 * files already, under `text.blob`) and counts the text against the quotas: past either nothing is written.
 */
export async function putTextItem(
  item: Item & { text: ItemText },
  body: string,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): Promise<void> {
  const actions = [
    itemPut(item),
    ...usageCharge(item.portalId, item.owner, item.text.size, quota),
    ...textPut(item.itemId, item.text, body),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    throw quotaFailure(err, 1) ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}

/**
 * An item's text kept in its table record (undefined when there is none: an item without text, or one whose text
 * is in the item files, which shared/item-content.ts reads there).
 */
export async function getRecordText(item: Item): Promise<Buffer | undefined> {
  if (!item.text || item.text.blob !== undefined) return undefined;
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("items"), Key: textKey(item.itemId), ConsistentRead: true }),
  );
  return typeof Item?.body === "string" ? Buffer.from(Item.body, "utf8") : undefined;
}

/** The item changed since it was read: read it again and recompute the change. */
export class ItemStaleError extends Error {
  constructor() {
    super("The item changed since it was read.");
    this.name = "ItemStaleError";
  }
}

/**
 * Changes an item's text (and other fields with it) if the item is still as read (its `modified`): the new text's
 * record (or its blob, kept already) replaces the old, and the quotas are charged the difference, at once. A
 * concurrent change is ItemStaleError (the caller reads again), past a quota StorageQuotaError.
 */
export async function changeItemText(
  item: Item,
  text: ItemText,
  body: string,
  changes: ItemChanges,
  quota: { readonly userBytes: number; readonly organizationBytes: number },
): Promise<void> {
  const now = Math.max(Date.now(), item.modified + 1);
  const names: Record<string, string> = { "#t": "text" };
  const values: Record<string, unknown> = { ":m": now, ":was": item.modified, ":t": { ...text } };
  const sets = ["modified = :m", "#t = :t"];
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) continue;
    names[`#${key}`] = key;
    values[`:${key}`] = Array.isArray(value) ? [...value] : value;
    sets.push(`#${key} = :${key}`);
  }
  const delta = text.size - (item.text?.size ?? 0);
  const actions = [
    {
      Update: {
        ...itemKey(item),
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "modified = :was",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
    ...usageDelta(item, delta, quota),
    ...(text.blob === undefined
      ? textPut(item.itemId, text, body)
      : item.text && item.text.blob === undefined
        ? [{ Delete: { TableName: tableName("items"), Key: textKey(item.itemId) } }]
        : []),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new ItemStaleError();
    const refused = delta > 0 ? quotaFailure(err, 1) : undefined;
    throw refused ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}

/** Turns an item's delete protection on or off. */
export async function setItemProtected(item: Item, on: boolean): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        ...itemKey(item),
        UpdateExpression: on ? "SET #p = :p, modified = :m" : "REMOVE #p SET modified = :m",
        ConditionExpression: "attribute_exists(itemId)",
        ExpressionAttributeNames: { "#p": "protected" },
        ExpressionAttributeValues: { ...(on ? { ":p": true } : {}), ":m": Math.max(Date.now(), item.modified + 1) },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new ItemGoneError();
    throw err;
  }
}

// Relationships between items (addRelationship): each is kept at both ends, as a string of a set (`<type>:<id>`), so
// either direction is read from one item; both ends change in one transaction.

/** The most relationships one item may have in each direction (each is a few dozen bytes of its record). */
export const MAX_RELATIONSHIPS = 100;

/** One end has as many relationships as it may. */
export class RelationshipsFullError extends Error {
  constructor() {
    super("An item has as many relationships as it may.");
    this.name = "RelationshipsFullError";
  }
}

/** Adds (or, with `remove`, deletes) the relationship `type` from `origin` to `destination`, at both ends at once. */
export async function changeRelationship(origin: Item, destination: Item, type: string, remove = false): Promise<void> {
  const end = (item: Item, attribute: string, value: string) => ({
    Update: {
      ...itemKey(item),
      UpdateExpression: remove ? "DELETE #r :s" : "ADD #r :s",
      ConditionExpression: remove
        ? "attribute_exists(itemId)"
        : "attribute_exists(itemId) AND (attribute_not_exists(#r) OR size(#r) < :max OR contains(#r, :v))",
      ExpressionAttributeNames: { "#r": attribute },
      ExpressionAttributeValues: {
        ":s": new Set([value]),
        ...(remove ? {} : { ":max": MAX_RELATIONSHIPS, ":v": value }),
      },
    },
  });
  const actions = [
    end(origin, "related", `${type}:${destination.itemId}`),
    end(destination, "relatedFrom", `${type}:${origin.itemId}`),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    const failed = failedConditions(err) ?? [];
    if (failed.length > 0) {
      const [a, b] = await Promise.all([getItem(origin.itemId), getItem(destination.itemId)]);
      if (!a || !b) throw new ItemGoneError();
      throw new RelationshipsFullError();
    }
    throw isTransactionConflict(err) ? new ItemBusyError() : err;
  }
}

/** Removes one end's entry of a relationship whose other end is gone (nothing happens when the item is gone too). */
export async function forgetRelationshipEnd(
  itemId: string,
  attribute: "related" | "relatedFrom",
  value: string,
): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("items"),
        Key: { itemId },
        UpdateExpression: "DELETE #r :s",
        ConditionExpression: "attribute_exists(itemId)",
        ExpressionAttributeNames: { "#r": attribute },
        ExpressionAttributeValues: { ":s": new Set([value]) },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** Moves an item to one of its owner's folders (undefined: the root), if it is still its owner's. */
export async function moveItemToFolder(item: Item, folder: string | undefined): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        ...itemKey(item),
        UpdateExpression: folder === undefined ? "REMOVE #f SET modified = :m" : "SET #f = :f, modified = :m",
        ConditionExpression: "attribute_exists(itemId) AND #o = :o",
        ExpressionAttributeNames: { "#f": "ownerFolder", "#o": "owner" },
        ExpressionAttributeValues: {
          ":o": item.owner,
          ":m": Math.max(Date.now(), item.modified + 1),
          ...(folder === undefined ? {} : { ":f": folder }),
        },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new ItemGoneError();
    throw err;
  }
}

/**
 * Gives an item to another member (reassign): its owner and folder change, its service's owner with it, and what it
 * keeps moves from one member's storage use to the other's (the organization's stays), in one transaction. Past the
 * new owner's quota nothing changes (StorageQuotaError); an item changed meanwhile is ItemChangedError.
 */
export async function reassignItemTo(
  item: Item,
  target: string,
  folder: string | undefined,
  quota: { readonly userBytes: number },
): Promise<void> {
  const bytes = keptBytes(item);
  const now = Math.max(Date.now(), item.modified + 1);
  const names: Record<string, string> = { "#o": "owner" };
  const actions: object[] = [
    {
      Update: {
        ...itemKey(item),
        UpdateExpression:
          folder === undefined ? "SET #o = :t, modified = :m REMOVE #f" : "SET #o = :t, modified = :m, #f = :f",
        // Its attachments' bytes and the size its edits leave are counted without moving `modified`: they too must
        // be as read.
        ConditionExpression:
          "#o = :o AND modified = :wasm AND (attribute_not_exists(#ab) OR #ab = :ab) AND (attribute_not_exists(#hd) OR #hd = :hd)",
        ExpressionAttributeNames: { "#o": "owner", "#f": "ownerFolder", "#ab": "attachmentBytes", "#hd": "hostedData" },
        ExpressionAttributeValues: {
          ":t": target,
          ":o": item.owner,
          ":m": now,
          ":wasm": item.modified,
          ":ab": item.attachmentBytes ?? 0,
          ":hd": item.hostedData ?? 0,
          ...(folder === undefined ? {} : { ":f": folder }),
        },
      },
    },
    ...(item.service
      ? [
          {
            Update: {
              ...serviceOf(item),
              UpdateExpression: "SET #o = :t",
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: { ":t": target, ":id": item.itemId },
            },
          },
          catalogBump(item.service.serverId),
        ]
      : []),
    ...(bytes > 0
      ? [usageChange(item.portalId, item.owner, -bytes), usageChange(item.portalId, target, bytes, quota.userBytes)]
      : []),
  ];
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: actions as TransactWriteCommandInput["TransactItems"] }));
  } catch (err) {
    const failed = failedConditions(err);
    if (failed?.includes(actions.length - 1) && bytes > 0) throw new StorageQuotaError("user");
    if (failed?.includes(0)) throw new ItemChangedError();
    throw err;
  }
}
