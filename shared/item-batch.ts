// A bulk operation on a member's items (moveItems, deleteItems): the ids of `items` read and bounded, then each item
// acted on apart, the answer one result per id in the order named (a failure is that item's error, never the
// request's), as ArcGIS answers its bulk content operations.
import { ApiError, badRequest } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { canManage } from "#shared/items.ts";
import { getItems, type Item } from "#shared/stores/items.ts";

/** The most items one bulk request names (as ArcGIS's bulk operations). */
export const MAX_BATCH_ITEMS = 100;

/** The ids `items` names (comma-separated): at least one, at most MAX_BATCH_ITEMS, else a 400 saying so. */
export function batchIds(req: RestRequest, what: string): string[] {
  const ids = (req.params.get("items") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const problems: string[] = [];
  if (ids.length === 0) problems.push("'items' must name at least one item id.");
  if (ids.length > MAX_BATCH_ITEMS) problems.push(`'items' may name at most ${MAX_BATCH_ITEMS} items.`);
  if (problems.length > 0) throw badRequest(what, problems);
  return ids;
}

/**
 * `act` on each item `ids` names that `owner` owns and the caller may change (any other is answered as not there):
 * `{results: [{itemId, success[, error]}]}`.
 */
export async function eachOwnedItem(
  req: RestRequest,
  owner: string,
  ids: readonly string[],
  what: string,
  act: (item: Item) => Promise<void>,
): Promise<{ results: Record<string, unknown>[] }> {
  const found = await getItems(ids.filter((id) => /^[0-9a-f]{32}$/.test(id)));
  const results: Record<string, unknown>[] = [];
  for (const id of ids) {
    const item = found.get(id);
    try {
      if (!item || item.owner !== owner || !canManage(req.identity, item))
        throw badRequest(what, [`Item '${id.slice(0, 64)}' does not exist or is inaccessible.`]);
      await act(item);
      results.push({ itemId: id, success: true });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      results.push({
        itemId: id.slice(0, 64),
        success: false,
        error: { code: err.code, message: err.message, details: err.details },
      });
    }
  }
  return { results };
}
