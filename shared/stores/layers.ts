// Layer–dataset pairs recorded by bulk publishing, per data store; read with paged Queries, never a Scan.
import { PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
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

/** The write that records a pair unless the dataset has one already (for a transaction or on its own). */
export const pairPut = (datastoreId: string, pair: LayerPair, access: PairAccess) => ({
  TableName: tableName("layers"),
  Item: {
    datastoreId,
    entry: pairEntry(pair.dataset.path),
    layer: { ...pair.layer },
    dataset: { ...pair.dataset },
    ...access,
  },
  ConditionExpression: "attribute_not_exists(#e)",
  ExpressionAttributeNames: { "#e": "entry" },
});

/** Records a pair unless the dataset has one already; answers whether this call recorded it. */
export async function recordPair(datastoreId: string, pair: LayerPair, access: PairAccess): Promise<boolean> {
  try {
    await ddb.send(new PutCommand(pairPut(datastoreId, pair, access)));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
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

export async function pairedPaths(datastoreId: string): Promise<Set<string>> {
  const paths = new Set<string>();
  await forEachPairPage(datastoreId, (pairs) => {
    for (const p of pairs) paths.add(p.dataset.path);
    return true;
  });
  return paths;
}
