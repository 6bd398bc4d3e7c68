// What an item keeps besides its data: its resources (files an app stores with its item, `addResources`) and its
// thumbnail. Their bytes are in the item files under fresh ids (never a name a user chose), and they count against
// the owner's and organization's quotas as files do: the item records their total (`resourceBytes`, its thumbnail's
// size), so deleting the item gives them back in its own transaction.
//
// The resources' list is one record beside the item (`resources#<item id>`, a key no item id can take: searches never
// read it), written whole under a version, as a member's folders are: a change made meanwhile is read again and
// applied again, so two requests never lose each other's resource.
import { GetCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, failedConditions, isTransactionConflict, retryingConflicts } from "#shared/stores/dynamo.ts";
import {
  getItem,
  type Item,
  ItemBusyError,
  type ItemThumbnail,
  ItemGoneError,
  quotaFailure,
  resourcesKey,
  usageDelta,
} from "#shared/stores/items.ts";

export interface ItemResource {
  /** The resource's name with its prefix (`images/logo.png`): checked by its caller, a key of the list only. */
  readonly name: string;
  /** Where its bytes are in the item files. */
  readonly blob: string;
  readonly size: number;
  readonly created: number;
  /** `private`: only those who may change the item read it (else it is read as the item is). */
  readonly access?: "private";
}

export interface ResourceList {
  readonly version: number;
  readonly resources: readonly ItemResource[];
}

type Quota = { readonly userBytes: number; readonly organizationBytes: number };

/** An item's resources in the order of their names (empty when it has none). */
export async function listResources(itemId: string): Promise<ResourceList> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("items"), Key: resourcesKey(itemId), ConsistentRead: true }),
  );
  if (!Item) return { version: 0, resources: [] };
  const held = (Item.resources ?? {}) as Record<
    string,
    { blob?: unknown; size?: unknown; created?: unknown; access?: unknown }
  >;
  const resources = Object.entries(held).map(([name, r]): ItemResource => ({
    name,
    blob: String(r.blob),
    size: Number(r.size),
    created: Number(r.created),
    ...(r.access === "private" ? { access: "private" } : {}),
  }));
  return { version: Number(Item.version ?? 0), resources: resources.sort((a, b) => (a.name < b.name ? -1 : 1)) };
}

/** The list changed since it was read, or its item did: read both again. */
export class ResourcesStaleError extends Error {
  constructor() {
    super("The item's resources changed since they were read.");
    this.name = "ResourcesStaleError";
  }
}

/**
 * Writes the item's resource list as `next` (read as `was`), with the item's `resourceBytes` and the quotas changed
 * by the difference, at once: a list or item changed meanwhile is ResourcesStaleError, a quota passed
 * StorageQuotaError, the item gone ItemGoneError.
 */
export async function writeResources(
  item: Item,
  was: ResourceList,
  next: readonly ItemResource[],
  quota: Quota,
): Promise<void> {
  const before = was.resources.reduce((n, r) => n + r.size, 0);
  const after = next.reduce((n, r) => n + r.size, 0);
  const delta = after - before;
  const table = tableName("items");
  const list =
    next.length === 0
      ? { Delete: { TableName: table, Key: resourcesKey(item.itemId), ...versionCondition(was.version) } }
      : {
          Put: {
            TableName: table,
            Item: {
              ...resourcesKey(item.itemId),
              version: was.version + 1,
              resources: Object.fromEntries(
                next.map((r) => [r.name, { blob: r.blob, size: r.size, created: r.created, access: r.access }]),
              ),
            },
            ...versionCondition(was.version),
          },
        };
  const actions = [
    list,
    {
      Update: {
        TableName: table,
        Key: { itemId: item.itemId },
        UpdateExpression: "SET #r = :r, modified = :m",
        ConditionExpression: "attribute_exists(itemId) AND (#r = :was OR (attribute_not_exists(#r) AND :was = :zero))",
        ExpressionAttributeNames: { "#r": "resourceBytes" },
        ExpressionAttributeValues: {
          ":r": after,
          ":was": item.resourceBytes ?? 0,
          ":zero": 0,
          ":m": Math.max(Date.now(), item.modified + 1),
        },
      },
    },
    ...usageDelta(item, delta, quota),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    const failed = failedConditions(err) ?? [];
    if (failed.includes(0)) throw new ResourcesStaleError();
    if (failed.includes(1)) throw (await getItem(item.itemId)) ? new ResourcesStaleError() : new ItemGoneError();
    const refused = delta > 0 ? quotaFailure(err, 2) : undefined;
    throw refused ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}

const versionCondition = (version: number) =>
  version === 0
    ? { ConditionExpression: "attribute_not_exists(itemId)" }
    : {
        ConditionExpression: "#v = :v",
        ExpressionAttributeNames: { "#v": "version" },
        ExpressionAttributeValues: { ":v": version },
      };

/**
 * Sets an item's thumbnail (kept in the item files already, under `thumbnail.blob`), its size counted against the
 * quotas in place of the one it replaces, if the item is still as read (its `modified`): else ResourcesStaleError.
 */
export async function writeThumbnail(item: Item, thumbnail: ItemThumbnail, quota: Quota): Promise<void> {
  const delta = thumbnail.size - (item.thumbnail?.size ?? 0);
  const actions = [
    {
      Update: {
        TableName: tableName("items"),
        Key: { itemId: item.itemId },
        UpdateExpression: "SET #t = :t, modified = :m",
        ConditionExpression: "attribute_exists(itemId) AND modified = :was",
        ExpressionAttributeNames: { "#t": "thumbnail" },
        ExpressionAttributeValues: {
          ":t": { ...thumbnail },
          ":was": item.modified,
          ":m": Math.max(Date.now(), item.modified + 1),
        },
      },
    },
    ...usageDelta(item, delta, quota),
  ];
  try {
    await retryingConflicts(() => ddb.send(new TransactWriteCommand({ TransactItems: actions as never })));
  } catch (err) {
    if (failedConditions(err)?.includes(0))
      throw (await getItem(item.itemId)) ? new ResourcesStaleError() : new ItemGoneError();
    const refused = delta > 0 ? quotaFailure(err, 1) : undefined;
    throw refused ?? (isTransactionConflict(err) ? new ItemBusyError() : err);
  }
}
