// Deleting an item and everything it keeps, whichever operation deletes it (`…/items/<id>/delete`, a folder's
// `delete`): delete protection holds on every path (checked in the delete's own write), a service's item unpublishes
// its service, a data store's goes with its registration, and what the item kept in the item files (its file, a large
// text, its resources, its thumbnail) and a hosted service's data are removed after the item, so a failure there
// leaves only bytes no item names (logged), never an item without its bytes.
import { removeDataStore } from "#shared/datastore-registration.ts";
import { dropHostedData } from "#shared/hosted/deployment-store.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { deleteProtected } from "#shared/item-protect.ts";
import { badRequest } from "#shared/errors.ts";
import { viewsOf } from "#shared/stores/services.ts";
import { changing } from "#shared/items.ts";
import { logger } from "#shared/log.ts";
import { registering } from "#shared/publishing.ts";
import { getDataStore } from "#shared/stores/datastores.ts";
import { emit } from "#shared/stores/events.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import { listResources } from "#shared/stores/item-resources.ts";
import {
  DATA_STORE_TYPE,
  forgetRelationshipEnd,
  deleteItem,
  getItems,
  type Item,
  ItemProtectedError,
} from "#shared/stores/items.ts";

const orphan = (what: string, itemId: string) => (e: unknown) =>
  logger.warn(`${what} not removed`, { itemId, error: e instanceof Error ? e.message : String(e) });

/** Deletes the item (its caller may; `what` names the operation in a refusal) and what it keeps. */
export async function removeItem(req: RestRequest, read: Item, what: string): Promise<void> {
  if (read.protected) throw deleteProtected();
  // A hosted service that views read stays while they do (ArcGIS's rule: its dependent views are deleted first);
  // deleting a view leaves its source as it is (a view keeps no data).
  if (read.service?.type === "FeatureServer") {
    const views = await viewsOf(read.service.serverId, read.itemId);
    if (views.length > 0)
      throw badRequest(
        "Unable to delete item. This service item has a related Service item",
        views.slice(0, 10).map((v) => `The view '${v}' reads this service: delete it first.`),
      );
  }
  // Read before the item goes (its list goes with it): their bytes are removed after.
  const resources = read.resourceBytes !== undefined ? (await listResources(read.itemId)).resources : [];
  const store = read.type === DATA_STORE_TYPE ? await getDataStore(read.itemId) : undefined;
  let item = read;
  if (store) await registering(what, () => removeDataStore(store));
  else {
    try {
      item = await changing(read, () => deleteItem(read));
    } catch (err) {
      // Protected after it was read: the delete's own condition held it.
      if (err instanceof ItemProtectedError) throw deleteProtected();
      throw err;
    }
  }
  const files = itemFiles();
  // An item of text kept in the item files: after its item, as a file is.
  if (item.text?.blob !== undefined) await files.remove(item.text.blob);
  // After its item: a failure here leaves a file no item names, never an item without its file.
  if (item.file) await files.remove(item.itemId);
  // A file still coming in parts: its parts, and a file an interrupted commit may have assembled.
  if (item.upload) {
    await files.removeParts(item.itemId);
    await files.remove(item.itemId);
  }
  for (const r of resources) await files.remove(r.blob).catch(orphan("item resource", item.itemId));
  if (item.thumbnail) await files.remove(item.thumbnail.blob).catch(orphan("item thumbnail", item.itemId));
  // Relationships go with either of their items (as ArcGIS has it): the other ends forget this one. A failure leaves an
  // entry that names no item, which relatedItems never answers.
  await forgetRelationships(item).catch(orphan("relationship", item.itemId));
  // A hosted service's data is mapgate's own: it goes with the service (the file it was published from stays).
  // The item is gone already: data left by a failed drop is only an orphan (logged), never a failed delete.
  if (item.hostedData) await dropHostedData(item.itemId).catch(orphan("hosted data", item.itemId));
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
}

/** Removes a deleted item's relationships from the items at their other ends. */
async function forgetRelationships(item: Item): Promise<void> {
  const ends = [
    ...(item.related ?? []).map((r) => ({ r, forward: true })),
    ...(item.relatedFrom ?? []).map((r) => ({ r, forward: false })),
  ];
  if (ends.length === 0) return;
  const others = await getItems(ends.map(({ r }) => r.slice(r.indexOf(":") + 1)));
  for (const { r, forward } of ends) {
    const type = r.slice(0, r.indexOf(":"));
    const other = others.get(r.slice(r.indexOf(":") + 1));
    if (!other) continue;
    // The deleted end is gone: only the other end's entry is removed (its own write, outside a transaction).
    await forgetRelationshipEnd(other.itemId, forward ? "relatedFrom" : "related", `${type}:${item.itemId}`);
  }
}
