// POST …/content/items/<id>/share|unshare and …/content/users/<owner>/items/<id>/share|unshare: who sees an
// item and its service. `everyone` and `org` (true/false) set the access when either is given: everyone →
// public, org → org, neither → private; unshare takes them away (everyone → no longer public, org → private).
// Groups are not modelled: any group named comes back in notSharedWith / notUnsharedFrom.
import { badRequest, notFound } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { managedItem } from "#shared/items.ts";
import { ItemGoneError, setItemAccess } from "#shared/stores/items.ts";
import type { Access } from "#shared/stores/service-keys.ts";

const FAILED = "Unable to share item.";

function flag(raw: string | undefined, name: string, problems: string[]): boolean | undefined {
  if (raw === undefined || raw === "") return undefined;
  const v = raw.trim().toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  problems.push(`'${name}' must be true or false.`);
  return undefined;
}

function nextAccess(current: Access, unsharing: boolean, everyone?: boolean, org?: boolean): Access {
  if (unsharing) {
    if (org) return "private";
    if (everyone && current === "public") return "org";
    return current;
  }
  if (everyone === undefined && org === undefined) return current;
  return everyone ? "public" : org ? "org" : "private";
}

export const handler = restHandler(
  {
    name: "Share Item",
    postOnly: true,
    form: [
      { name: "everyone", label: "Everyone (public)", type: "checkbox" },
      { name: "org", label: "Organization", type: "checkbox" },
    ],
  },
  async (req) => {
    const unsharing = req.path.endsWith("/unshare");
    const problems: string[] = [];
    const everyone = flag(req.params.get("everyone"), "everyone", problems);
    const org = flag(req.params.get("org"), "org", problems);
    // `account` is what the Home app sends with everyone: it means the organization, as `org` does.
    const account = flag(req.params.get("account"), "account", problems);
    if (problems.length > 0) throw badRequest(FAILED, problems);
    const item = await managedItem(req);
    const groups = (req.params.get("groups") ?? "")
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g !== "");
    // A browser form sends unchecked boxes as nothing: on the share form that means "off".
    const fromForm = req.format === "html" && !unsharing;
    const access = nextAccess(
      item.access,
      unsharing,
      everyone ?? (fromForm ? false : undefined),
      org ?? account ?? (fromForm ? false : undefined),
    );
    try {
      if (access !== item.access) await setItemAccess(item, access);
    } catch (err) {
      if (err instanceof ItemGoneError) throw notFound([`Item '${item.itemId}' does not exist or is inaccessible.`]);
      throw err;
    }
    return unsharing
      ? { notUnsharedFrom: groups, itemId: item.itemId }
      : { notSharedWith: groups, itemId: item.itemId };
  },
);
