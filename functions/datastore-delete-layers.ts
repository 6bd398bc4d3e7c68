// POST …/portals/<self | id>/datastores/allDatasets/deleteLayers: deletes every layer bulk-published from a
// data store (each layer's item, its service and its layer–dataset pair, as deleting the item does), so the
// store can be removed from its server or deleted. Bounded in time: a store with more layers than one
// request removes answers `more: true`, and is called again.
import { restHandler } from "#shared/http/pipeline.ts";
import { emit } from "#shared/events.ts";
import { managedDataStore } from "#shared/publishing.ts";
import { deleteItem, getItems, ItemGoneError } from "#shared/stores/items.ts";
import { deletePair, forEachPairPage, type LayerPair } from "#shared/stores/layers.ts";

/** Well inside the 29 s an API Gateway request may take. */
const BUDGET_MS = 20_000;

export const handler = restHandler(
  {
    name: "Delete Layers",
    postOnly: true,
    form: [{ name: "datastoreId", label: "Data store id", required: true }],
  },
  async (req) => {
    const store = await managedDataStore(req, "Unable to delete the data store's layers.");
    const by = req.identity.kind === "user" ? req.identity.user.username : "";
    const until = Date.now() + BUDGET_MS;
    let deleted = 0;
    let more = false;
    const pages: LayerPair[][] = [];
    await forEachPairPage(store.datastoreId, (pairs) => {
      pages.push(pairs);
      return true;
    });
    for (const pairs of pages) {
      const items = await getItems(pairs.map((p) => p.layer.id));
      for (const pair of pairs) {
        if (Date.now() > until) {
          more = true;
          break;
        }
        const item = items.get(pair.layer.id);
        try {
          if (item) await deleteItem(item);
          else await deletePair(store.datastoreId, pair.dataset.path);
        } catch (err) {
          if (!(err instanceof ItemGoneError)) throw err;
        }
        deleted++;
        if (item?.service) {
          await emit("serviceUnpublished", {
            portalId: item.portalId,
            itemId: item.itemId,
            owner: item.owner,
            ...item.service,
            url: item.url,
            by,
          });
        }
      }
      if (more) break;
    }
    return { success: true, deleted, more };
  },
);
