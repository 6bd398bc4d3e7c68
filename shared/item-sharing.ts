// Sharing an item (…/content/items/<id>/share|unshare): who sees an item and its service. `everyone` and `org` (true/false; `account`, which the Home app sends with everyone,
// counts as org) set the access when either is given: everyone → public, org → org, neither → private.
// unshare takes them away: everyone → no longer public (org stays), org → private. Making an item public takes
// `portal:user:shareToPublic`, sharing it with the organization `portal:user:shareToOrg` (administrators hold
// both). `groups` (comma-separated ids) shares with those groups: each one the caller may share to (shared/groups.ts:
// mayShareWith) is added, the others come back in notSharedWith; unshare takes groups away (whoever manages the
// item may take it from any group, a group's owner and managers any item from their group), the others in
// notUnsharedFrom. The access and the groups change in one transaction with the service and the group's records.
import { ApiError, badRequest, forbidden } from "#shared/errors.ts";
import { listParam, managesGroup, mayShareWith } from "#shared/groups.ts";
import { getGroups } from "#shared/stores/groups.ts";
import { MAX_USER_GROUPS } from "#shared/stores/users.ts";
import { boolParam } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { GROUP_BOX, OFFERED_GROUPS } from "#shared/item-pages.ts";
import { resultPage } from "#shared/http/html.ts";
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import { changing, managedItem, visibleItem } from "#shared/items.ts";
import { changeItemSharing, type Item, MAX_GROUP_CHANGES, MAX_ITEM_GROUPS } from "#shared/stores/items.ts";
import type { Access } from "#shared/stores/service-keys.ts";

const FAILED = "Unable to share item.";
/** Marks a POST from mapgate's own share forms, where an unchecked box is sent as nothing and means "off". */
export const CHECKBOX_FORM = "checkboxForm";

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

/** What sharing did, for its result page (a symbol key: never part of a JSON answer). */
const SHARE_RESULT = Symbol("shareResult");
interface ShareResult {
  readonly [SHARE_RESULT]?: {
    readonly item: Item;
    readonly access: Access;
    readonly groups: number;
    readonly refused: number;
  };
}

const WHO: Readonly<Record<Access, string>> = {
  public: "visible to everyone (public)",
  org: "visible to the organization",
  private: "private (its owner and administrators)",
};

/** The page after sharing: who sees the item now, in words, and the ways back and on. */
export function sharePage(data: object, req: RestRequest): string {
  const r = (data as ShareResult)[SHARE_RESULT];
  const title = req.path.endsWith("/unshare") ? "Unshared" : "Shared";
  if (!r) return resultPage(title, "Done.", [[`${PORTAL_ROOT}?f=html`, "Directory"]]);
  const n = `${r.groups} group${r.groups === 1 ? "" : "s"}`;
  const who =
    r.access === "private" && r.groups > 0
      ? `shared with ${n} (and seen by its owner and administrators)`
      : `${WHO[r.access]}${r.groups === 0 ? "" : `, and shared with ${n}`}`;
  const refused =
    r.refused === 0
      ? ""
      : ` ${r.refused} group${r.refused === 1 ? " was" : "s were"} left as they were (not yours to change).`;
  return resultPage(title, `“${r.item.title}” is now ${who}.${refused}`, [
    [itemPageHref(r.item.itemId), "The item"],
    ...(r.item.url ? [[`${r.item.url}?f=html`, "Its service"] as const] : []),
    [`${PORTAL_ROOT}/content/users/${encodeURIComponent(r.item.owner)}?f=html`, "Its owner's content"],
    [`${PORTAL_ROOT}?f=html`, "Directory"],
  ]);
}

export interface ShareRequest {
  readonly unsharing: boolean;
  readonly everyone: boolean | undefined;
  readonly org: boolean | undefined;
  /** Sent from mapgate's own share form, whose unchecked boxes mean "off". */
  readonly boxes: boolean;
  /** Groups to share with (or unshare from). */
  readonly groups: readonly string[];
  /** Groups the item page offered and the user left unchecked: taken away. */
  readonly unchecked: ReadonlySet<string>;
}

/** What a share or unshare request asks for, every problem of its parameters listed at once. */
export function readShareRequest(req: RestRequest): ShareRequest {
  const unsharing = req.path.endsWith("/unshare");
  const problems: string[] = [];
  const everyone = boolParam(req.params.get("everyone"), "everyone", problems);
  const orgFlag = boolParam(req.params.get("org"), "org", problems);
  const account = boolParam(req.params.get("account"), "account", problems);
  if (problems.length > 0) throw badRequest(FAILED, problems);
  const org = orgFlag === undefined && account === undefined ? undefined : Boolean(orgFlag || account);
  const boxes = !unsharing && req.params.get(CHECKBOX_FORM) === "true";
  const groups = listParam(req.params.get("groups"), "groups", MAX_GROUP_CHANGES, problems);
  // The item page's form: a checked group box shares, an offered box left unchecked unshares.
  const offered = boxes
    ? listParam(req.params.get(OFFERED_GROUPS), OFFERED_GROUPS, MAX_USER_GROUPS + MAX_ITEM_GROUPS, problems)
    : [];
  const checked = offered.filter((g) => req.params.get(`${GROUP_BOX}${g}`) === "true");
  const unchecked = new Set(offered.filter((g) => !checked.includes(g)));
  groups.push(...checked.filter((g) => !groups.includes(g)));
  if (problems.length > 0) throw badRequest(FAILED, problems);
  return { unsharing, everyone, org, boxes, groups, unchecked };
}

/** Changes the item's access and groups as asked, in one transaction; groups the caller may not change come back. */
export async function shareItem(req: RestRequest, asked: ShareRequest) {
  const { unsharing, everyone, org, boxes, groups, unchecked } = asked;
  // A group's owner and managers may take an item they see out of their group (unshare with groups alone), as
  // on ArcGIS; everything else takes whoever manages the item.
  let item: Item;
  let managesItem = true;
  try {
    item = await managedItem(req, FAILED);
  } catch (err) {
    const groupsOnly = unsharing && everyone === undefined && org === undefined && groups.length > 0;
    if (!groupsOnly || !(err instanceof ApiError) || err.code !== 403) throw err;
    item = await visibleItem(req.identity, req.pathParameters.itemId);
    managesItem = false;
  }
  // Groups the caller may share to; unsharing, any group for the item's manager, else the groups they manage.
  const found = await getGroups(groups);
  const allowed = new Set<string>();
  for (const id of groups) {
    const group = found.get(id);
    if (!group) continue;
    const may = unsharing
      ? managesItem || (await managesGroup(req.identity, group))
      : await mayShareWith(req.identity, group, item.portalId);
    if (may) allowed.add(id);
  }
  const refused = groups.filter((g) => !allowed.has(g));
  let after: { access: Access; groups: number } = { access: item.access, groups: item.groups?.length ?? 0 };
  await changing(item, () =>
    changeItemSharing(item, (current) => {
      const access = nextAccess(
        current.access,
        unsharing,
        everyone ?? (boxes ? false : undefined),
        org ?? (boxes ? false : undefined),
      );
      if (access !== current.access && !mayShare(req, access))
        throw forbidden([`Your role may not share items as ${access}.`]);
      const next = unsharing
        ? current.groups.filter((g) => !allowed.has(g))
        : [...new Set([...current.groups.filter((g) => !unchecked.has(g)), ...allowed])];
      if (next.length > MAX_ITEM_GROUPS) {
        throw badRequest(FAILED, [`An item may be shared with at most ${MAX_ITEM_GROUPS} groups.`]);
      }
      after = { access, groups: next.length };
      return { access, groups: next };
    }),
  );
  const result = { [SHARE_RESULT]: { item, ...after, refused: refused.length } };
  return unsharing
    ? { notUnsharedFrom: refused, itemId: item.itemId, ...result }
    : { notSharedWith: refused, itemId: item.itemId, ...result };
}
