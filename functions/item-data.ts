// GET|POST …/content/items/<id>/data: an item's data, to whoever may see the item. A data store's is its JSON
// as registered, the connection string without its password (which nobody reads back, administrators
// included); other items have none (an empty answer, as ArcGIS gives for an item without data).
import { dataStoreJson } from "#shared/datastore-registration.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { visibleItem } from "#shared/items.ts";
import { getDataStore } from "#shared/stores/datastores.ts";
import { DATA_STORE_TYPE } from "#shared/stores/items.ts";

export const handler = restHandler({ name: "Item Data" }, async (req) => {
  const item = await visibleItem(req.identity, req.pathParameters.itemId);
  if (item.type !== DATA_STORE_TYPE) return {};
  const store = await getDataStore(item.itemId);
  return store ? dataStoreJson(store) : {};
});
