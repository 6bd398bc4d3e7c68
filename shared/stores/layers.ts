// Layer–dataset pairs recorded by bulk publishing, per data store; read with paged Queries, never a Scan.
import { GetCommand, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import type { Dataset } from "#shared/stores/datastores.ts";
import { ddb, isConditionFailure } from "#shared/stores/dynamo.ts";
import type { Access } from "#shared/stores/service-keys.ts";

export interface Layer {
  readonly id: string;
  readonly title: string;
  readonly created: number;
  readonly modified: number;
  readonly url: string;
  readonly type: string;
}

export interface LayerPair {
  readonly layer: Layer;
  readonly dataset: Dataset & { readonly datastoreId: string };
  /** Who may see the layer (absent on pairs recorded before items existed: visible as before). */
  readonly access?: PairAccess;
}

const pairEntry = (path: string) => `pair#${path}`;

/**
 * Who may see a pair's layer: a copy of its item's access, owner and organization, changed with the item, so
 * getLayers filters without reading each item.
 */
export interface PairAccess {
  readonly access: Access;
  readonly owner: string;
  readonly portalId: string;
}

/**
 * The write that records a pair unless the dataset has one already (for a transaction or on its own). The pair
 * keeps the id of the job that made it, so a job run again after a crash tells its own layers from older ones.
 */
export const pairPut = (datastoreId: string, pair: LayerPair, access: PairAccess, jobId: string) => ({
  TableName: tableName("layers"),
  Item: {
    datastoreId,
    entry: pairEntry(pair.dataset.path),
    layer: { ...pair.layer },
    dataset: { ...pair.dataset },
    ...access,
    jobId,
  },
  ConditionExpression: "attribute_not_exists(#e)",
  ExpressionAttributeNames: { "#e": "entry" },
});

/** Records a pair unless the dataset has one already; answers whether this call recorded it. */
export async function recordPair(
  datastoreId: string,
  pair: LayerPair,
  access: PairAccess,
  jobId: string,
): Promise<boolean> {
  try {
    await ddb.send(new PutCommand(pairPut(datastoreId, pair, access, jobId)));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** The job that made a pair ("" for pairs from before jobs were recorded on them). */
const makerOf = (item: Record<string, unknown>) => (typeof item.jobId === "string" ? item.jobId : "");

/**
 * The pairs of the datasets whose paths lie from `first` to `last` (inclusive, in DynamoDB's order): dataset
 * path → the job that made the pair. Reads only that key range, and only two small attributes of each pair.
 */
export async function pairMakers(datastoreId: string, first: string, last: string): Promise<Map<string, string>> {
  const makers = new Map<string, string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName("layers"),
        KeyConditionExpression: "datastoreId = :d AND #e BETWEEN :first AND :last",
        ProjectionExpression: "#e, jobId",
        ExpressionAttributeNames: { "#e": "entry" },
        ExpressionAttributeValues: { ":d": datastoreId, ":first": pairEntry(first), ":last": pairEntry(last) },
        // A retried page must see the pairs its earlier attempt wrote.
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) makers.set(String(item.entry).slice("pair#".length), makerOf(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return makers;
}

/** The job that made one dataset's pair, or undefined when it has none. */
export async function pairMaker(datastoreId: string, path: string): Promise<string | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({
      TableName: tableName("layers"),
      Key: { datastoreId, entry: pairEntry(path) },
      // The key attribute too: a pair without a jobId still answers an item.
      ProjectionExpression: "#e, jobId",
      ExpressionAttributeNames: { "#e": "entry" },
      ConsistentRead: true,
    }),
  );
  return Item ? makerOf(Item) : undefined;
}

/** Calls `each` with every page of pairs in dataset-path order; stops early when it answers false. */
export async function forEachPairPage(
  datastoreId: string,
  each: (pairs: LayerPair[]) => boolean | undefined,
): Promise<void> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName("layers"),
        KeyConditionExpression: "datastoreId = :d AND begins_with(#e, :p)",
        ExpressionAttributeNames: { "#e": "entry" },
        ExpressionAttributeValues: { ":d": datastoreId, ":p": "pair#" },
        ExclusiveStartKey: start,
      }),
    );
    const pairs = (page.Items ?? []).map((item) => ({
      layer: item.layer as Layer,
      dataset: item.dataset as LayerPair["dataset"],
      ...(typeof item.access === "string"
        ? { access: { access: item.access as Access, owner: String(item.owner), portalId: String(item.portalId) } }
        : {}),
    }));
    if (each(pairs) === false) return;
    start = page.LastEvaluatedKey;
  } while (start);
}
