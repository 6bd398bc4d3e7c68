// POST …/content/users/<owner>/items/<id>/delete: deletes an item, unpublishing its service in the same
// transaction (gone from the directory, the SOAP catalog and its URL, its name free again, its layer–dataset
// pair removed). A data store's item goes with its data store and its secret, once no layer published from it
// remains (deleteLayers first).
import { removeDataStore } from "#shared/datastore-registration.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { renderValue, resultPage } from "#shared/http/html.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { changing, managedItem } from "#shared/items.ts";
import { registering } from "#shared/publishing.ts";
import { getDataStore } from "#shared/stores/datastores.ts";
import { dropHostedData } from "#shared/hosted/deployment-store.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import { DATA_STORE_TYPE, deleteItem, ItemProtectedError } from "#shared/stores/items.ts";
import { deleteProtected } from "#shared/item-protect.ts";
import { emit } from "#shared/stores/events.ts";
import { logger } from "#shared/log.ts";

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
    if (item.protected) throw deleteProtected();
    const store = item.type === DATA_STORE_TYPE ? await getDataStore(item.itemId) : undefined;
    if (store) await registering(FAILED, () => removeDataStore(store));
    else {
      try {
        await changing(item, () => deleteItem(item));
      } catch (err) {
        // Protected after it was read: the delete's own condition held it.
        if (err instanceof ItemProtectedError) throw deleteProtected();
        throw err;
      }
    }
    // An item of text kept in the item files: after its item, as a file is.
    if (item.text?.blob !== undefined) await itemFiles().remove(item.text.blob);
    // After its item: a failure here leaves a file no item names, never an item without its file.
    if (item.file) await itemFiles().remove(item.itemId);
    // A file still coming in parts: its parts, and a file an interrupted commit may have assembled.
    if (item.upload) {
      await itemFiles().removeParts(item.itemId);
      await itemFiles().remove(item.itemId);
    }
    // A hosted service's data is mapgate's own: it goes with the service (the file it was published from stays).
    // The item is gone already: data left by a failed drop is only an orphan (logged), never a failed delete.
    if (item.hostedData)
      await dropHostedData(item.itemId).catch((e: unknown) =>
        logger.warn("hosted data not dropped", {
          itemId: item.itemId,
          error: e instanceof Error ? e.message : String(e),
        }),
      );
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
  },
);
