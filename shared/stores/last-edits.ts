// When a by-reference layer was last edited (its layer JSON's editingInfo.lastEditDate, which clients refresh on): a
// record per layer in the services table, in a partition of its own beside the server's (`<serverId>#edited`), so a
// catalog read never loads it and an edit never moves the catalog's version (which would make every warm function read
// the catalog again after each edit). Hosted layers keep theirs with their data (mapgate_editing); a database read by
// reference gets no table of mapgate's, so its layers' are kept here. Written inside the edit's transaction, before it
// commits: a crash may leave a date that moved for an edit that did not commit (a client refreshes for nothing), never
// an edit whose date did not move.
import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb } from "#shared/stores/dynamo.ts";

interface ServiceRef {
  readonly serverId: string;
  readonly itemId: string;
}

const key = (service: ServiceRef, layerId: number) => ({
  serverId: `${service.serverId}#edited`,
  entry: `${service.itemId}#${layerId}`,
});

/** Moves the layers' last edit to `ms` (never back: a slower edit of an earlier moment leaves a later one). */
export async function recordLastEdit(service: ServiceRef, layerIds: readonly number[], ms: number): Promise<void> {
  await Promise.all(
    layerIds.map(async (layerId) => {
      try {
        await ddb.send(
          new UpdateCommand({
            TableName: tableName("services"),
            Key: key(service, layerId),
            UpdateExpression: "SET lastEdit = :m",
            ConditionExpression: "attribute_not_exists(lastEdit) OR lastEdit < :m",
            ExpressionAttributeValues: { ":m": ms },
          }),
        );
      } catch (err) {
        if ((err as { name?: unknown }).name !== "ConditionalCheckFailedException") throw err;
      }
    }),
  );
}

/** A layer's last edit (ms), undefined before its first. */
export async function lastEditOf(service: ServiceRef, layerId: number): Promise<number | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("services"), Key: key(service, layerId), ConsistentRead: true }),
  );
  const ms = Item?.lastEdit;
  return typeof ms === "number" && Number.isFinite(ms) ? ms : undefined;
}
