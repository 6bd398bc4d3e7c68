// GET|POST …/content/items/<id>/data: an item's data, to whoever may see the item. An uploaded file's item gives
// the file back as it was uploaded, as an attachment that never runs as mapgate's own content. A data store's is
// its JSON as registered, the connection string without its password (which nobody reads back, administrators
// included); other items have none (an empty answer, as ArcGIS gives for an item without data).
import { dataStoreJson } from "#shared/datastore-registration.ts";
import { badRequest } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { Content } from "#shared/http/render.ts";
import { visibleItem } from "#shared/items.ts";
import { itemTextContent } from "#shared/item-content.ts";
import { getDataStore } from "#shared/stores/datastores.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import { DATA_STORE_TYPE } from "#shared/stores/items.ts";

export const handler = restHandler({ name: "Item Data" }, async (req) => {
  const item = await visibleItem(req.identity, req.pathParameters.itemId);
  if (item.upload) {
    throw badRequest("Unable to get item data.", [
      `The item's file is not whole yet (its upload is ${item.upload.state}): its status says when it is.`,
    ]);
  }
  if (item.file) {
    const bytes = await itemFiles().get(item.itemId);
    // The item commits after its file is kept: a missing file is a fault of the storage, logged as one (a 500).
    if (!bytes) throw new Error(`the file of item ${item.itemId} is missing`);
    return new Content(bytes, item.file.contentType, { attachment: item.file.name });
  }
  if (item.text) return itemTextContent({ ...item, text: item.text });
  if (item.type !== DATA_STORE_TYPE) return {};
  const store = await getDataStore(item.itemId);
  return store ? dataStoreJson(store) : {};
});
