// The rules of groups: who sees a group, who manages it, who may share with it, how it reads on the wire, and
// the fields createGroup and update take.
import type { Identity } from "#shared/auth/identity.ts";
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, forbidden, tokenRequired } from "#shared/errors.ts";
import { boolParam } from "#shared/http/params.ts";
import type { Params } from "#shared/http/params.ts";
import { readSort } from "#shared/paging.ts";
import { readTags } from "#shared/publishing.ts";
import {
  getGroup,
  getMember,
  type Group,
  type GroupFields,
  GROUP_SORT_FIELDS,
  isGroupId,
  listGroupItemIds,
  type Member,
  type MemberType,
} from "#shared/stores/groups.ts";
import { getItems, type Item } from "#shared/stores/items.ts";
import { ACCESS, type Access } from "#shared/stores/service-keys.ts";

type UserIdentity = Extract<Identity, { kind: "user" }>;

/** Whether the caller holds a privilege (default administrators hold them all). */
export function holds(identity: Identity, privilege: string): boolean {
  return identity.kind === "user" && (identity.user.role === "org_admin" || identity.privileges.includes(privilege));
}

/** An administrator of the group's organization holding `privilege` (e.g. portal:admin:updateGroups). */
export const orgAdminFor = (identity: Identity, group: Group, privilege: string) =>
  identity.kind === "user" && identity.user.portalId === group.portalId && holds(identity, privilege);

/**
 * Public groups are seen by anyone, org groups by members of the organization whose role may view them (and its
 * applications), private ones by their members and the organization's administrators who may view groups.
 */
export function groupVisibleTo(identity: Identity, group: Group): boolean {
  if (group.deleting) return false;
  if (group.access === "public") return true;
  if (identity.kind === "anonymous" || identity.portal.portalId !== group.portalId) return false;
  if (identity.kind === "app") return group.access === "org";
  if (identity.user.groups.has(group.groupId)) return true;
  // Org groups take the role's portal:user:viewOrgGroups (every default role holds it), as on ArcGIS.
  if (group.access === "org" && holds(identity, "portal:user:viewOrgGroups")) return true;
  return orgAdminFor(identity, group, "portal:admin:viewGroups");
}

const groupNotFound = (groupId: string) =>
  new ApiError(400, "Group does not exist or is inaccessible.", [
    `Group '${groupId.slice(0, 64)}' does not exist or is inaccessible.`,
  ]);

/** The group, if the caller may see it (anonymous callers are asked to sign in for anything else). */
export async function visibleGroup(identity: Identity, groupId: string): Promise<Group> {
  const group = isGroupId(groupId) ? await getGroup(groupId) : undefined;
  if (group && groupVisibleTo(identity, group)) return group;
  if (identity.kind === "anonymous") throw tokenRequired();
  throw groupNotFound(groupId);
}

/** The caller's membership of a group (undefined: not a member); read only when their record says they are. */
export async function membershipOf(identity: Identity, group: Group): Promise<Member | undefined> {
  if (identity.kind !== "user" || !identity.user.groups.has(group.groupId)) return undefined;
  return getMember(group.groupId, identity.user.username);
}

/** Whether the caller is the group's owner or a manager, or an administrator of its organization who may update groups. */
export async function managesGroup(identity: Identity, group: Group): Promise<boolean> {
  if (orgAdminFor(identity, group, "portal:admin:updateGroups")) return true;
  const member = await membershipOf(identity, group);
  return member?.memberType === "owner" || member?.memberType === "admin";
}

/** The group's owner and managers, and the organization's administrators who may update groups. */
export async function managedGroup(
  identity: Identity,
  groupId: string,
): Promise<{ group: Group; caller: UserIdentity }> {
  if (identity.kind === "app") throw forbidden(["An application token does not act for a user."]);
  if (identity.kind !== "user") throw tokenRequired();
  const group = await visibleGroup(identity, groupId);
  if (await managesGroup(identity, group)) return { group, caller: identity };
  throw forbidden(["Only the group's owner and managers, and administrators, may do this."]);
}

/**
 * Whether the caller may share an item with the group: a member holding portal:user:shareToGroup (only its
 * owner and managers when the group is view-only), or an administrator of its organization. The item and the
 * group must be of one organization.
 */
export async function mayShareWith(identity: Identity, group: Group, itemPortalId: string): Promise<boolean> {
  if (group.deleting || identity.kind !== "user" || group.portalId !== itemPortalId) return false;
  if (identity.user.portalId !== group.portalId) return false;
  if (identity.user.role === "org_admin" || holds(identity, "portal:admin:updateGroups")) return true;
  if (!holds(identity, "portal:user:shareToGroup")) return false;
  const member = await membershipOf(identity, group);
  if (!member) return false;
  return !group.isViewOnly || member.memberType !== "member";
}

export type GroupSortField = (typeof GROUP_SORT_FIELDS)[number];
export interface ItemOrder {
  readonly field: GroupSortField;
  readonly order: "asc" | "desc";
}

/** An item's value for a group's sort field (ratings and views are not kept: every item has none). */
function sortValue(item: Item, field: GroupSortField): string | number {
  switch (field) {
    case "title":
      return item.title;
    case "owner":
      return item.owner;
    case "created":
      return item.created;
    case "modified":
      return item.modified;
    default:
      return 0;
  }
}

function compareItems(a: Item, b: Item, { field, order }: ItemOrder): number {
  const x = sortValue(a, field);
  const y = sortValue(b, field);
  const by =
    typeof x === "number" && typeof y === "number"
      ? x - y
      : String(x).localeCompare(String(y), "en", { sensitivity: "base" });
  // Ties: newest first, then by id, so pages never skip nor repeat an item.
  return (order === "desc" ? -by : by) || b.created - a.created || a.itemId.localeCompare(b.itemId);
}

/**
 * The group's items the caller may see, in the order asked for or else the group's own (`sortField`,
 * `sortOrder`). The group's records of its items say where to look; each item's own record says whether it is
 * still shared with the group (and a deleted item is simply not found).
 */
export async function groupItems(identity: Identity, group: Group, order?: ItemOrder): Promise<Item[]> {
  const asked = order ?? { field: group.sortField as GroupSortField, order: group.sortOrder };
  // A group's field is checked when set; one stored otherwise reads as the default.
  const by = (GROUP_SORT_FIELDS as readonly string[]).includes(asked.field)
    ? asked
    : { ...asked, field: "title" as const };
  return [...(await getItems(await listGroupItemIds(group.groupId))).values()]
    .filter((i) => i.groups?.includes(group.groupId) && visibleTo(identity, i))
    .sort((a, b) => compareItems(a, b, by));
}

/** A user's membership of a group as ArcGIS answers it (`userMembership`). */
export interface UserMembership {
  readonly username: string;
  readonly memberType: MemberType | "none";
  /** Pending join requests: only to the group's owner and managers. */
  readonly applications?: number;
}

export function userMembership(group: Group, username: string, member: Member | undefined): UserMembership {
  const memberType = member?.memberType ?? "none";
  return {
    username,
    memberType,
    ...(memberType === "owner" || memberType === "admin" ? { applications: group.applications } : {}),
  };
}

/** A group as the sharing API answers it, with a user's membership (the caller's, or the profile's user's). */
export function groupView(group: Group, membership?: UserMembership): Record<string, unknown> {
  return {
    id: group.groupId,
    title: group.title,
    isInvitationOnly: group.isInvitationOnly,
    owner: group.owner,
    description: group.description,
    snippet: group.snippet,
    tags: group.tags,
    typeKeywords: [],
    phone: null,
    sortField: group.sortField,
    sortOrder: group.sortOrder,
    isViewOnly: group.isViewOnly,
    isOpenData: false,
    featuredItemsId: null,
    thumbnail: null,
    created: group.created,
    modified: group.modified,
    access: group.access,
    capabilities: [],
    isFav: false,
    isReadOnly: false,
    protected: false,
    autoJoin: group.autoJoin,
    notificationsEnabled: false,
    provider: null,
    providerGroupName: null,
    leavingDisallowed: false,
    hiddenMembers: false,
    displaySettings: { itemTypes: "" },
    orgId: group.portalId,
    ...(membership ? { userMembership: membership } : {}),
  };
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * The group fields a request sets (all of them, with ArcGIS's defaults, when `creating`; only those given
 * otherwise). Problems are listed, never guessed around.
 */
export function readGroupFields(params: Params, creating: boolean, problems: string[]): Partial<GroupFields> {
  const out: { -readonly [K in keyof GroupFields]?: GroupFields[K] } = {};
  const title = params.get("title");
  if (title !== undefined || creating) {
    const t = (title ?? "").trim();
    if (t === "" || t.length > 250 || CONTROL.test(t)) problems.push("'title' must have 1–250 characters.");
    else out.title = t;
  }
  const tags = params.get("tags");
  if (tags !== undefined) {
    const list = readTags(tags, problems);
    if (list.length > 128 || list.some((t) => t.length > 256)) problems.push("'tags' takes at most 128 tags.");
    else out.tags = list;
  } else if (creating) out.tags = [];
  const text = (name: "description" | "snippet", max: number) => {
    const v = params.get(name);
    if (v === undefined) {
      if (creating) out[name] = "";
      return;
    }
    if (v.length > max) problems.push(`'${name}' may have at most ${max} characters.`);
    else out[name] = v;
  };
  text("description", 64 * 1024);
  text("snippet", 250);
  const access = params.get("access")?.trim().toLowerCase();
  if (access !== undefined && access !== "") {
    if (!(ACCESS as readonly string[]).includes(access)) problems.push("'access' must be private, org or public.");
    else out.access = access as Access;
  } else if (creating) out.access = "private";
  for (const flag of ["isInvitationOnly", "isViewOnly", "autoJoin"] as const) {
    const v = boolParam(params.get(flag), flag, problems);
    if (v !== undefined) out[flag] = v;
    else if (creating) out[flag] = false;
  }
  // A value refused is listed in problems, so what is set for it (the default) is never stored.
  const sort = readSort(params, GROUP_SORT_FIELDS, problems);
  if (sort.field !== undefined) out.sortField = sort.field;
  else if (creating) out.sortField = "title";
  if (sort.order !== undefined) out.sortOrder = sort.order;
  else if (creating) out.sortOrder = "asc";
  return out;
}

/** Comma-separated usernames (or group ids) as clients send them, deduplicated, at most `max`. */
export function listParam(raw: string | undefined, name: string, max: number, problems: string[]): string[] {
  const list = [
    ...new Set(
      (raw ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
    ),
  ];
  if (list.length > max) problems.push(`'${name}' takes at most ${max} names.`);
  if (list.some((s) => s.length > 128)) problems.push(`'${name}' holds a name of more than 128 characters.`);
  return list.slice(0, max);
}
