// POST …/content/users/<owner>/items/<id>/delete: deletes an item, unpublishing its service in the same
// transaction (gone from the directory, the SOAP catalog and its URL, its name free again, its layer–dataset
// pair removed). A data store's item goes with its data store and its secret, once no layer published from it
// remains (deleteLayers first). What the item keeps goes with it (shared/item-removal.ts).
import { PORTAL_ROOT } from "#shared/urls.ts";
import { renderValue, resultPage } from "#shared/http/html.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { managedItem } from "#shared/items.ts";
import { removeItem } from "#shared/item-removal.ts";

const FAILED = "Unable to delete item.";

/** What a person sees once the item is gone: where to go on (their content, the directory). */
function deletedPage(data: object, req: RestRequest): string {
  const { itemId } = data as { itemId?: string };
  const owner = req.pathParameters.username ?? "";
  return resultPage(
    "Item deleted",
    `The item ${itemId ?? ""} was deleted.`,
    [
      [`${PORTAL_ROOT}/content/users/${encodeURIComponent(owner)}?f=html`, `${owner}'s content`],
      [`${PORTAL_ROOT}?f=html`, "Directory"],
    ],
    renderValue(data),
  );
}

export const handler = restHandler(
  {
    name: "Delete Item",
    postOnly: true,
    confirm: "the item goes for good; a service's item unpublishes the service, a data store's removes the store.",
    html: deletedPage,
  },
  async (req) => {
    const item = await managedItem(req, FAILED, true);
    await removeItem(req, item, FAILED);
    return { success: true, itemId: item.itemId };
  },
);
