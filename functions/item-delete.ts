// POST …/content/users/<owner>/items/<id>/delete: deletes an item, unpublishing its service in the same
// transaction (gone from the directory, the SOAP catalog and its URL, its name free again, its layer–dataset
// pair removed). A data store's item goes only with the data store (an operator's action).
import { restHandler } from "#shared/http/pipeline.ts";
import { changing, managedItem } from "#shared/items.ts";
import { deleteItem } from "#shared/stores/items.ts";
import { emit } from "#shared/events.ts";

export const handler = restHandler({ name: "Delete Item", postOnly: true }, async (req) => {
  const item = await managedItem(req, "Unable to delete item.");
  await changing(item, () => deleteItem(item));
  if (item.service) {
    await emit("serviceUnpublished", {
      portalId: item.portalId,
      itemId: item.itemId,
      owner: item.owner,
      ...item.service,
      url: item.url,
      by: req.identity.kind === "user" ? req.identity.user.username : "",
    });
  }
  return { success: true, itemId: item.itemId };
});
