// What names hosted data, in a module of its own that imports nothing: serving code tells hosted sources apart, and
// the hosted stores (shared/hosted/) check the ids that name their files and schemas, without bundling each other.
// It stands with the features, under the hosted stores, as serving a hosted layer needs nothing of writing one.

/** The `datastoreId` a hosted service's source carries (no registered data store's id, 32 hex digits, is this). */
export const HOSTED_STORE_ID = "hosted";

const ITEM_ID = /^[0-9a-f]{32}$/;

/** A service item's id, checked before it names a file or a schema. */
export function checkedItemId(serviceItemId: string): string {
  if (!ITEM_ID.test(serviceItemId)) throw new Error(`not an item id: ${serviceItemId.slice(0, 40)}`);
  return serviceItemId;
}
