// A group's lifecycle: created (its owner its first member), read (with what its page shows), updated, deleted
// (the cascade through its items and members) and reassigned.
import { groupPage, type JoinRequests } from "#shared/group-pages.ts";
import {
  groupItems,
  groupView,
  holds,
  managedGroup,
  managesGroup,
  membershipOf,
  orgAdminFor,
  readGroupFields,
  userMembership,
  visibleGroup,
} from "#shared/groups.ts";
import { memberLists } from "#shared/groups/membership.ts";
import { groupIdOf, membership } from "#shared/groups/refusals.ts";
import { badRequest, forbidden } from "#shared/errors.ts";
import { type Compute, type Operation, requireUser } from "#shared/http/pipeline.ts";
import { itemId as newId } from "#shared/ids.ts";
import { changing, itemView } from "#shared/items.ts";
import {
  createGroup,
  dropGroup,
  getGroup,
  getMember,
  getRequest,
  type Group,
  isGroupId,
  listGroupItemIds,
  listRequests,
  markDeleting,
  reassignGroup,
  StaleGroupError,
  updateGroup,
} from "#shared/stores/groups.ts";
import { changeItemSharing, getItem } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";

export const create: Compute = async (req) => {
  const identity = requireUser(req);
  if (!holds(identity, "portal:user:createGroup")) throw forbidden(["Your role may not create groups."]);
  const problems: string[] = [];
  const fields = readGroupFields(req.params, true, problems);
  if (problems.length > 0) throw badRequest("Unable to create group.", problems);
  const now = Date.now();
  const group = {
    ...(fields as Required<typeof fields>),
    groupId: newId(),
    portalId: identity.user.portalId,
    owner: identity.user.username,
    created: now,
    modified: now,
    deleting: false,
    applications: 0,
  } satisfies Group;
  await membership("Unable to create group.", () => createGroup(group), group.title);
  const owner = { username: group.owner, memberType: "owner" as const, joined: now };
  return { success: true, group: groupView(group, userMembership(group, group.owner, owner)) };
};

/**
 * What a group's page shows besides the group: its members, the items the caller may see, and join requests
 * (the pending ones to its managers; whether the caller's own is pending).
 */
const PAGE = Symbol("page");
interface GroupPageData {
  [PAGE]?: {
    members: Awaited<ReturnType<typeof memberLists>> | undefined;
    items: Record<string, unknown>[];
    requests: JoinRequests;
  };
}

export const read: Compute = async (req) => {
  const group = await visibleGroup(req.identity, groupIdOf(req));
  const view =
    req.identity.kind === "user"
      ? groupView(group, userMembership(group, req.identity.user.username, await membershipOf(req.identity, group)))
      : groupView(group);
  if (req.format !== "html") return view;
  const identity = req.identity;
  const requests: JoinRequests =
    identity.kind !== "user"
      ? { pending: false }
      : (await managesGroup(identity, group))
        ? { pending: false, applications: (await listRequests(group.groupId, "application")).map((a) => a.username) }
        : { pending: (await getRequest(group.groupId, "application", identity.user.username)) !== undefined };
  // A symbol key: never part of a JSON answer, only of the page.
  const extra: GroupPageData = {
    [PAGE]: {
      members: identity.kind === "anonymous" ? undefined : await memberLists(group),
      items: (await groupItems(identity, group)).map((i) => itemView(i, identity, req.httpsOrigin)),
      requests,
    },
  };
  return Object.assign(view, extra);
};

export const update: Compute = async (req) => {
  const problems: string[] = [];
  const fields = readGroupFields(req.params, false, problems);
  if (problems.length > 0) throw badRequest("Unable to update group.", problems);
  // A rename is conditioned on the title read: a concurrent rename makes it read the group again.
  for (let attempt = 0; ; attempt++) {
    const { group } = await managedGroup(req.identity, groupIdOf(req));
    try {
      await membership("Unable to update group.", () => updateGroup(group, fields), fields.title);
      return { success: true, groupId: group.groupId };
    } catch (err) {
      if (!(err instanceof StaleGroupError)) throw err;
      if (attempt >= 3) throw badRequest("Unable to update group.", ["The group changed meanwhile: try again."]);
    }
  }
};

/**
 * Deleting takes the group away from every item shared with it (each item's own transaction, with its service
 * and catalog version), then from every member's record, then the group itself. The group is marked first, so
 * nothing is shared with it nor anyone joins it meanwhile; a delete that stops half-way is finished by another.
 */
export const remove: Compute = async (req) => {
  const identity = requireUser(req);
  // A group whose delete stopped half-way is hidden from everyone, yet its owner and administrators finish it.
  const found = isGroupId(groupIdOf(req)) ? await getGroup(groupIdOf(req)) : undefined;
  const group =
    found?.deleting && identity.user.portalId === found.portalId ? found : await visibleGroup(identity, groupIdOf(req));
  if (group.owner !== identity.user.username && !orgAdminFor(identity, group, "portal:admin:deleteGroups")) {
    throw forbidden(["Only the group's owner and administrators may delete it."]);
  }
  await markDeleting(group.groupId);
  for (const id of await listGroupItemIds(group.groupId)) {
    const item = await getItem(id);
    if (!item?.groups?.includes(group.groupId)) continue;
    await changing(item, () =>
      changeItemSharing(item, (s) => ({ access: s.access, groups: s.groups.filter((g) => g !== group.groupId) })),
    );
  }
  await dropGroup(group.groupId);
  return { success: true, groupId: group.groupId };
};

export const reassign: Compute = async (req) => {
  const identity = requireUser(req);
  const group = await visibleGroup(identity, groupIdOf(req));
  if (group.owner !== identity.user.username && !orgAdminFor(identity, group, "portal:admin:reassignGroups")) {
    throw forbidden(["Only the group's owner and administrators may reassign it."]);
  }
  const target = req.params.get("targetUsername")?.trim() ?? "";
  const to = target && target.length <= 128 ? await getUser(target) : undefined;
  if (!to || to.portalId !== group.portalId) {
    throw badRequest("Unable to reassign group.", ["'targetUsername' must name a member of the organization."]);
  }
  if (to.username !== group.owner) {
    const already = (await getMember(group.groupId, to.username)) !== undefined;
    await membership("Unable to reassign group.", () => reassignGroup(group, to, already));
  }
  return { success: true, groupId: group.groupId };
};

/** The create form's fields. */
export const CREATE_FORM: Operation["form"] = [
  { name: "title", label: "Title", required: true },
  { name: "tags", label: "Tags (comma-separated)" },
  { name: "snippet", label: "Summary" },
  { name: "description", label: "Description", type: "textarea" },
  { name: "access", label: "Access", options: ["private", "org", "public"] },
  { name: "autoJoin", label: "Anyone who sees it may join", type: "checkbox" },
  { name: "isInvitationOnly", label: "By invitation only", type: "checkbox" },
  { name: "isViewOnly", label: "View only (only managers share)", type: "checkbox" },
];

/** The update form's fields. */
export const UPDATE_FORM: Operation["form"] = [
  { name: "title", label: "Title" },
  { name: "tags", label: "Tags (comma-separated)" },
  { name: "snippet", label: "Summary" },
  { name: "description", label: "Description", type: "textarea" },
  { name: "access", label: "Access", options: ["private", "org", "public"] },
];

/** The form edits the group as it is: a field left alone is sent back unchanged (an empty one would clear it). */
export const updateFormValues: NonNullable<Operation["formValues"]> = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
  return {
    title: group.title,
    tags: group.tags.join(", "),
    snippet: group.snippet,
    description: group.description,
    access: group.access,
  };
};

/** A group's page: the group, with what `read` found for the page beside it. */
export const readPage: NonNullable<Operation["html"]> = (data, req) => {
  const extra = (data as GroupPageData)[PAGE];
  return groupPage(data as Record<string, unknown>, extra?.members, extra?.items ?? [], req, extra?.requests);
};
