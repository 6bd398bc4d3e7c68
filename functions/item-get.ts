// GET|POST …/sharing/rest/content/items/<id>: an item, to whoever may see it (its access decides). Its page also
// offers whoever manages it the groups they may share it with.
import { groupView, mayShareWith } from "#shared/groups.ts";
import { canManage, itemView, visibleItem } from "#shared/items.ts";
import { ITEM_PAGE, type ItemPageData, itemPage } from "#shared/item-pages.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { getGroups } from "#shared/stores/groups.ts";

export const handler = restHandler({ name: "Item", html: itemPage }, async (req) => {
  const item = await visibleItem(req.identity, req.pathParameters.itemId);
  const view = itemView(item, req.identity, req.httpsOrigin);
  if (req.format !== "html" || req.identity.kind !== "user" || !canManage(req.identity, item)) return view;
  const groups = await getGroups([...req.identity.user.groups, ...(item.groups ?? [])]);
  const offered = [];
  for (const group of groups.values()) {
    if (item.groups?.includes(group.groupId) || (await mayShareWith(req.identity, group, item.portalId))) {
      offered.push(groupView(group));
    }
  }
  offered.sort((a, b) => String(a.title).localeCompare(String(b.title)));
  const extra: ItemPageData = { [ITEM_PAGE]: { groups: offered } };
  return Object.assign(view, extra);
});
