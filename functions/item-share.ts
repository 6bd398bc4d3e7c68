// POST …/content/items/<id>/share|unshare and …/content/users/<owner>/items/<id>/share|unshare: who sees an
// item and its service. `everyone` and `org` (true/false; `account`, which the Home app sends with everyone,
// counts as org) set the access when either is given: everyone → public, org → org, neither → private.
// unshare takes them away: everyone → no longer public (org stays), org → private. Making an item public takes
// `portal:user:shareToPublic`, sharing it with the organization `portal:user:shareToOrg` (administrators hold
// both). `groups` (comma-separated ids) shares with those groups: each one the caller may share to (shared/groups.ts:
// mayShareWith) is added, the others come back in notSharedWith; unshare takes groups away (whoever manages the
// item may take it from any group, a group's owner and managers any item from their group), the others in
// notUnsharedFrom. The access and the groups change in one transaction with the service and the group's records.
import { restHandler } from "#shared/http/pipeline.ts";
import { CHECKBOX_FORM, readShareRequest, sharePage, shareItem } from "#shared/item-sharing.ts";

export const handler = restHandler(
  {
    name: "Share Item",
    postOnly: true,
    html: sharePage,
    form: [
      { name: "everyone", label: "Everyone (public)", type: "checkbox" },
      { name: "org", label: "Organization", type: "checkbox" },
      { name: CHECKBOX_FORM, type: "hidden" },
    ],
    formValues: async () => ({ [CHECKBOX_FORM]: "true" }),
  },
  async (req) => shareItem(req, readShareRequest(req)),
);
