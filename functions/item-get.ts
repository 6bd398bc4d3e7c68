// GET|POST …/sharing/rest/content/items/<id>: an item, to whoever may see it (its access decides).
import { itemView, visibleItem } from "#shared/items.ts";
import { itemPage } from "#shared/item-pages.ts";
import { restHandler } from "#shared/http/pipeline.ts";

export const handler = restHandler({ name: "Item", html: itemPage }, async (req) => {
  const item = await visibleItem(req.identity, req.pathParameters.itemId);
  return itemView(item, req.identity, req.httpsOrigin);
});
