// What no other content route serves (…/sharing/rest/content/{path+}), as ArcGIS has it: a group's items and an
// item's groups (shared/groups/content.ts), an item's resources and thumbnail (shared/item-resources.ts) and its
// related items (shared/item-relationships.ts). One function for them all, its operations declared in the `{name}`
// templates of its route (shared/system.ts); anything else is the usual 404.
import { groupContent, itemGroups } from "#shared/groups/content.ts";
import { familyHandler } from "#shared/http/router.ts";
import { itemsPage } from "#shared/item-pages.ts";
import { resourceOperation, resourcesOperation, thumbnailOperation } from "#shared/item-resources.ts";
import { relatedItemsOperation } from "#shared/item-relationships.ts";

const ID = /^[0-9A-Za-z]{1,64}$/;

export const handler = familyHandler({
  greedy: "path",
  notFound: "Not Found",
  shapes: { groupId: ID, itemId: ID },
  operations: {
    "groups/{groupId}": {
      op: {
        name: "Group Content",
        html: (data) =>
          itemsPage("Group content", (data as { items?: Record<string, unknown>[] }).items ?? [], undefined),
      },
      compute: groupContent,
    },
    "items/{itemId}/groups": { op: { name: "Item Groups" }, compute: itemGroups },
    "items/{itemId}/resources": resourcesOperation,
    "items/{itemId}/resources/{r1}": resourceOperation,
    "items/{itemId}/resources/{r1}/{r2}": resourceOperation,
    "items/{itemId}/resources/{r1}/{r2}/{r3}": resourceOperation,
    "items/{itemId}/resources/{r1}/{r2}/{r3}/{r4}": resourceOperation,
    "items/{itemId}/info/thumbnail/{name}": thumbnailOperation,
    "items/{itemId}/relatedItems": relatedItemsOperation,
  },
});
