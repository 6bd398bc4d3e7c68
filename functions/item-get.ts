// GET|POST …/sharing/rest/content/items/<id>: an item, to whoever may see it (its access decides). Its page also
// offers whoever manages it the groups they may share it with.
import { groupView, mayShareWith } from "#shared/groups.ts";
import { canManage, itemView, visibleItem } from "#shared/items.ts";
import { ITEM_PAGE, type ItemPageData, itemPage } from "#shared/item-pages.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { getGroups } from "#shared/stores/groups.ts";
import { getService } from "#shared/stores/services.ts";
import { getServer } from "#shared/stores/servers.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";

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
  // A feature service's page offers its editing settings: read from its service record, posted to its
  // server's admin wire (updateDefinition), as ArcGIS clients change them.
  const ref = item.service;
  const [service, server] =
    ref?.type === "FeatureServer"
      ? await Promise.all([getService(ref.serverId, ref.folder, ref.name), getServer(ref.serverId)])
      : [undefined, undefined];
  // Hosted services, and those published by reference from a database (their form reaches the service function).
  const editable =
    service?.source?.datastoreId === HOSTED_STORE_ID || (service?.source && "connection" in service.source);
  const editing =
    service && server && service.itemId === item.itemId && editable
      ? {
          action: `/${server.name}/rest/admin/services/${[service.folder, service.name]
            .filter((p) => p !== "")
            .map(encodeURIComponent)
            .join("/")}/FeatureServer/updateDefinition`,
          service,
        }
      : undefined;
  const extra: ItemPageData = { [ITEM_PAGE]: { groups: offered, ...(editing ? { editing } : {}) } };
  return Object.assign(view, extra);
});
