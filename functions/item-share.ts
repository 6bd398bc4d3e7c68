// POST …/content/items/<id>/share|unshare and …/content/users/<owner>/items/<id>/share|unshare: who sees an
// item and its service. `everyone` and `org` (true/false; `account`, which the Home app sends with everyone,
// counts as org) set the access when either is given: everyone → public, org → org, neither → private.
// unshare takes them away: everyone → no longer public (org stays), org → private. Making an item public takes
// `portal:user:shareToPublic`, sharing it with the organization `portal:user:shareToOrg` (administrators hold
// both). Groups are not modelled: any group named comes back in notSharedWith / notUnsharedFrom.
import { badRequest, forbidden } from "#shared/http/errors.ts";
import { boolParam } from "#shared/http/params.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { changing, managedItem } from "#shared/items.ts";
import { changeItemAccess } from "#shared/stores/items.ts";
import type { Access } from "#shared/stores/service-keys.ts";

const FAILED = "Unable to share item.";
/** Marks a POST from mapgate's own share forms, where an unchecked box is sent as nothing and means "off". */
const CHECKBOX_FORM = "checkboxForm";

function nextAccess(current: Access, unsharing: boolean, everyone?: boolean, org?: boolean): Access {
  if (unsharing) {
    if (org) return "private";
    if (everyone && current === "public") return "org";
    return current;
  }
  if (everyone === undefined && org === undefined) return current;
  return everyone ? "public" : org ? "org" : "private";
}

function mayShare(req: RestRequest, access: Access): boolean {
  if (req.identity.kind !== "user" || access === "private") return true;
  if (req.identity.user.role === "org_admin") return true;
  const needed = access === "public" ? "portal:user:shareToPublic" : "portal:user:shareToOrg";
  return req.identity.privileges.includes(needed);
}

export const handler = restHandler(
  {
    name: "Share Item",
    postOnly: true,
    form: [
      { name: "everyone", label: "Everyone (public)", type: "checkbox" },
      { name: "org", label: "Organization", type: "checkbox" },
      { name: CHECKBOX_FORM, type: "hidden" },
    ],
    formValues: async () => ({ [CHECKBOX_FORM]: "true" }),
  },
  async (req) => {
    const unsharing = req.path.endsWith("/unshare");
    const problems: string[] = [];
    const everyone = boolParam(req.params.get("everyone"), "everyone", problems);
    const orgFlag = boolParam(req.params.get("org"), "org", problems);
    const account = boolParam(req.params.get("account"), "account", problems);
    if (problems.length > 0) throw badRequest(FAILED, problems);
    const org = orgFlag === undefined && account === undefined ? undefined : Boolean(orgFlag || account);
    const boxes = !unsharing && req.params.get(CHECKBOX_FORM) === "true";
    const item = await managedItem(req, FAILED);
    const groups = (req.params.get("groups") ?? "")
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g !== "")
      .slice(0, 100);
    await changing(item, () =>
      changeItemAccess(item, (current) => {
        const access = nextAccess(
          current,
          unsharing,
          everyone ?? (boxes ? false : undefined),
          org ?? (boxes ? false : undefined),
        );
        if (access !== current && !mayShare(req, access))
          throw forbidden([`Your role may not share items as ${access}.`]);
        return access;
      }),
    );
    return unsharing
      ? { notUnsharedFrom: groups, itemId: item.itemId }
      : { notSharedWith: groups, itemId: item.itemId };
  },
);
