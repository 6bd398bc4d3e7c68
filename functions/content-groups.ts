// What no other content route serves (…/sharing/rest/content/{path+}), as ArcGIS has it: a group's items and an
// item's groups (shared/groups/content.ts). One function for both, its operations declared in the `{name}`
// templates of its route (shared/system.ts); anything else is the usual 404.
import { groupContent, itemGroups } from "#shared/groups/content.ts";
import { familyHandler } from "#shared/http/router.ts";
import { itemsPage } from "#shared/item-pages.ts";

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
  },
});
