// POST …/content/users/<owner>/items/<id>/delete: deletes an item, unpublishing its service in the same
// transaction (gone from the directory, the SOAP catalog and its URL, its name free again, its layer–dataset
// pair removed). A data store's item goes only with the data store (an operator's action).
import { badRequest, notFound } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { managedItem } from "#shared/items.ts";
import { DATA_STORE_TYPE, deleteItem, ItemGoneError } from "#shared/stores/items.ts";

export const handler = restHandler({ name: "Delete Item", postOnly: true }, async (req) => {
  const item = await managedItem(req);
  if (item.type === DATA_STORE_TYPE) {
    throw badRequest("Unable to delete item.", [
      "A data store's item is removed with the data store itself, by an operator.",
    ]);
  }
  try {
    await deleteItem(item);
  } catch (err) {
    if (err instanceof ItemGoneError) throw notFound([`Item '${item.itemId}' does not exist or is inaccessible.`]);
    throw err;
  }
  return { success: true, itemId: item.itemId };
});
