// Everything under …/sharing/rest/community/ that no other route serves: groups and their members, as ArcGIS
// has them. One function (the stack's resource budget counts functions), one operation per path, each with the
// shared pipeline's steps:
//   POST createGroup                                   a new group, its owner its first member
//   GET  groups?q=…                                    group search (the item search's query language)
//   GET  groups/<id>                                   the group, with the caller's membership
//   GET  groups/<id>/users                             owner, managers and members
//   POST groups/<id>/update | delete | reassign        the group's owner and managers (delete, reassign: owner)
//   POST groups/<id>/join | leave                      the caller (join asks the managers unless autoJoin)
//   POST groups/<id>/createApplication                 the caller asks to join (invitation-only groups too)
//   POST groups/<id>/addUsers | removeUsers | invite   the group's owner and managers
//   GET  groups/<id>/applications[/<u>]                join requests, to the owner and managers
//   POST groups/<id>/applications/<u>/accept | decline
//   GET  users/<u>/invitations                         the user's invitations
//   POST users/<u>/invitations/<groupId>/accept | decline
// Administrators of the group's organization act with portal:admin:viewGroups, updateGroups, deleteGroups,
// reassignGroups and assignToGroups.
import type { APIGatewayProxyEventV2, Context } from "aws-lambda";
import { PORTAL_ROOT } from "#infra/system.ts";
import { badRequest, forbidden, noSuchResource, tokenRequired } from "#shared/http/errors.ts";
import { intParam } from "#shared/http/params.ts";
import { type Compute, type Operation, type RestRequest, requireUser, restHandler } from "#shared/http/pipeline.ts";
import {
  groupItems,
  groupView,
  groupVisibleTo,
  holds,
  listParam,
  managedGroup,
  managesGroup,
  membershipOf,
  orgAdminFor,
  readGroupFields,
  userMembership,
  visibleGroup,
} from "#shared/groups.ts";
import { groupPage, groupPageHref, groupsPage, type JoinRequests } from "#shared/group-pages.ts";
import { Redirect } from "#shared/http/render.ts";
import { changing, itemView } from "#shared/items.ts";
import { itemId as newId } from "#shared/ids.ts";
import { pageOf } from "#shared/paging.ts";
import { matches, parseQuery, type Query, QueryError } from "#shared/search-query.ts";
import {
  addMember,
  createGroup,
  deleteRequest,
  dropGroup,
  getGroup,
  getGroups,
  getMember,
  getRequest,
  type Group,
  isGroupId,
  GroupGoneError,
  invitationsOf,
  listGroupItemIds,
  listMembers,
  listPortalGroups,
  listRequests,
  markDeleting,
  type MemberType,
  MembershipError,
  putRequest,
  reassignGroup,
  removeMember,
  RequestError,
  setMemberType,
  StaleGroupError,
  TitleTakenError,
  TooManyGroupsError,
  updateGroup,
} from "#shared/stores/groups.ts";
import { changeItemSharing, getItem } from "#shared/stores/items.ts";
import { getUser, MAX_USER_GROUPS, type User } from "#shared/stores/users.ts";

const MAX_CANDIDATES = 10_000;
const SORT_FIELDS = ["title", "owner", "created", "modified"] as const;

/**
 * Joining and leaving are idempotent: a concurrent request of the same member that already joined (or left)
 * leaves the state this one asked for.
 */
async function settled(change: () => Promise<void>): Promise<void> {
  try {
    await change();
  } catch (err) {
    if (!(err instanceof MembershipError)) throw err;
  }
}

/**
 * Turns the store's refusals into the envelope (a concurrent delete, the 512-group limit, membership, a title
 * another group of the organization has: ArcGIS's words).
 */
async function membership<T>(what: string, change: () => Promise<T>, title = ""): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof TitleTakenError) {
      throw badRequest(what, [`You already have a group named '${title}'. Try a different name.`]);
    }
    if (err instanceof GroupGoneError) throw badRequest(what, ["The group does not exist or is being deleted."]);
    if (err instanceof TooManyGroupsError) {
      throw badRequest(what, [`A member may belong to at most ${MAX_USER_GROUPS} groups.`]);
    }
    if (err instanceof MembershipError) throw badRequest(what, ["The membership is not what this change needs."]);
    throw err;
  }
}

const groupId = (req: RestRequest) => req.pathParameters.groupId ?? "";

const create: Compute = async (req) => {
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

function compare(field: (typeof SORT_FIELDS)[number], a: Group, b: Group): number {
  const x = a[field];
  const y = b[field];
  if (typeof x === "number" && typeof y === "number") return x - y;
  return String(x).localeCompare(String(y), "en", { sensitivity: "base" });
}

const search: Compute = async (req) => {
  const problems: string[] = [];
  const q = req.params.get("q") ?? "";
  const start = intParam(req.params.get("start"), "start", 1, 1, MAX_CANDIDATES, problems);
  const num = intParam(req.params.get("num"), "num", 10, 0, 100, problems);
  const sortField = req.params.get("sortField")?.trim().toLowerCase() || undefined;
  if (sortField !== undefined && !(SORT_FIELDS as readonly string[]).includes(sortField)) {
    problems.push(`'sortField' must be one of ${SORT_FIELDS.join(", ")}.`);
  }
  const order = req.params.get("sortOrder")?.trim().toLowerCase() || undefined;
  if (order !== undefined && order !== "asc" && order !== "desc") problems.push("'sortOrder' must be asc or desc.");
  let query: Query | undefined;
  try {
    query = parseQuery(q);
  } catch (err) {
    if (!(err instanceof QueryError)) throw err;
    problems.push(err.message);
  }
  if (problems.length > 0 || !query) throw badRequest("Unable to search.", problems);
  const parsed = query;
  // Groups are read per organization (the sparse byPortal index): the caller's, or the default one for
  // anonymous callers, who see its public groups only.
  const groups = await listPortalGroups(req.portal.portalId, MAX_CANDIDATES + 1);
  if (groups.length > MAX_CANDIDATES) {
    throw badRequest("Unable to search.", [`The search would read more than ${MAX_CANDIDATES} groups.`]);
  }
  const hits = groups.filter(
    (g) =>
      groupVisibleTo(req.identity, g) &&
      matches(parsed, {
        id: g.groupId,
        owner: g.owner,
        orgId: g.portalId,
        title: g.title,
        type: "Group",
        tags: g.tags,
        typeKeywords: [],
        access: g.access,
        description: g.description,
        snippet: g.snippet,
      }),
  );
  const field = (sortField as (typeof SORT_FIELDS)[number] | undefined) ?? "title";
  const sign = (order ?? "asc") === "desc" ? -1 : 1;
  hits.sort((a, b) => sign * compare(field, a, b) || a.groupId.localeCompare(b.groupId));
  const { shown, ...page } = pageOf(hits, start, num);
  return { query: q, ...page, results: shown.map((g) => groupView(g)) };
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

async function memberLists(group: Group) {
  const members = await listMembers(group.groupId);
  return {
    owner: group.owner,
    admins: members.filter((m) => m.memberType !== "member").map((m) => m.username),
    users: members.filter((m) => m.memberType === "member").map((m) => m.username),
  };
}

const read: Compute = async (req) => {
  const group = await visibleGroup(req.identity, groupId(req));
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

const users: Compute = async (req) => {
  const group = await visibleGroup(req.identity, groupId(req));
  if (req.identity.kind === "anonymous") throw tokenRequired();
  return memberLists(group);
};

const update: Compute = async (req) => {
  const problems: string[] = [];
  const fields = readGroupFields(req.params, false, problems);
  if (problems.length > 0) throw badRequest("Unable to update group.", problems);
  // A rename is conditioned on the title read: a concurrent rename makes it read the group again.
  for (let attempt = 0; ; attempt++) {
    const { group } = await managedGroup(req.identity, groupId(req));
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
const remove: Compute = async (req) => {
  const identity = requireUser(req);
  // A group whose delete stopped half-way is hidden from everyone, yet its owner and administrators finish it.
  const found = isGroupId(groupId(req)) ? await getGroup(groupId(req)) : undefined;
  const group =
    found?.deleting && identity.user.portalId === found.portalId ? found : await visibleGroup(identity, groupId(req));
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

const reassign: Compute = async (req) => {
  const identity = requireUser(req);
  const group = await visibleGroup(identity, groupId(req));
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

const join: Compute = async (req) => {
  const identity = requireUser(req);
  const group = await visibleGroup(identity, groupId(req));
  if (!holds(identity, "portal:user:joinGroup")) throw forbidden(["Your role may not join groups."]);
  if (group.portalId !== identity.user.portalId) throw forbidden(["Only the group's organization may join it."]);
  const answer = { success: true, groupId: group.groupId };
  if (identity.user.groups.has(group.groupId)) return answer;
  const invited = await getRequest(group.groupId, "invite", identity.user.username);
  if (invited) {
    await membership("Unable to join group.", () =>
      settled(() => addMember(group, identity.user.username, invited.memberType ?? "member", "invite")),
    );
  } else if (group.isInvitationOnly) {
    throw forbidden(["This group is by invitation only."]);
  } else if (group.autoJoin) {
    await membership("Unable to join group.", () => settled(() => addMember(group, identity.user.username, "member")));
  } else {
    // As ArcGIS: a join request the group's owner and managers accept or decline.
    await apply(group, identity.user.username, "Unable to join group.");
  }
  return answer;
};

/** Records the caller's join request; one already pending stands (asking again changes nothing). */
async function apply(group: Group, username: string, what: string): Promise<void> {
  await membership(what, async () => {
    try {
      await putRequest(group, "application", username);
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
    }
  });
}

/**
 * The caller asks to join: a join request the group's owner and managers accept or decline, for an
 * invitation-only group too (its managers still decide who joins).
 */
const createApplication: Compute = async (req) => {
  const identity = requireUser(req);
  const group = await visibleGroup(identity, groupId(req));
  if (!holds(identity, "portal:user:joinGroup")) throw forbidden(["Your role may not join groups."]);
  if (group.portalId !== identity.user.portalId) throw forbidden(["Only the group's organization may join it."]);
  if (!identity.user.groups.has(group.groupId)) {
    await apply(group, identity.user.username, "Unable to create the application.");
  }
  return { success: true, groupId: group.groupId };
};

const leave: Compute = async (req) => {
  const identity = requireUser(req);
  const id = groupId(req);
  const group = await visibleGroup(identity, id);
  if (group.owner === identity.user.username) {
    throw badRequest("Unable to leave group.", ["The owner cannot leave the group: reassign it first."]);
  }
  if (identity.user.groups.has(group.groupId)) {
    await membership("Unable to leave group.", () =>
      settled(() => removeMember(group.groupId, identity.user.username)),
    );
  }
  return { success: true, groupId: group.groupId };
};

/** Users of the group's organization, by name; the rest are answered back as not done. */
async function orgUsers(group: Group, names: readonly string[]): Promise<{ found: User[]; missing: string[] }> {
  const found: User[] = [];
  const missing: string[] = [];
  for (const name of names) {
    const user = await getUser(name);
    if (user && user.portalId === group.portalId) found.push(user);
    else missing.push(name);
  }
  return { found, missing };
}

const addUsers: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupId(req));
  const problems: string[] = [];
  const plain = listParam(req.params.get("users"), "users", 100, problems);
  const admins = listParam(req.params.get("admins"), "admins", 100, problems);
  if (problems.length > 0) throw badRequest("Unable to add users.", problems);
  const notAdded: string[] = [];
  for (const [names, type] of [
    [plain, "member"],
    [admins, "admin"],
  ] as const) {
    const { found, missing } = await orgUsers(group, names);
    notAdded.push(...missing);
    for (const user of found) {
      try {
        if (user.groups.has(group.groupId)) {
          if (type === "admin") await setMemberType(group.groupId, user.username, "admin");
        } else await addMember(group, user.username, type);
      } catch (err) {
        if (err instanceof GroupGoneError) throw badRequest("Unable to add users.", ["The group does not exist."]);
        if (!(err instanceof MembershipError || err instanceof TooManyGroupsError)) throw err;
        notAdded.push(user.username);
      }
    }
  }
  return { notAdded };
};

const removeUsers: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupId(req));
  const problems: string[] = [];
  const names = listParam(req.params.get("users"), "users", 100, problems);
  if (problems.length > 0) throw badRequest("Unable to remove users.", problems);
  const notRemoved: string[] = [];
  for (const name of names) {
    try {
      await removeMember(group.groupId, name);
    } catch (err) {
      if (!(err instanceof MembershipError)) throw err;
      notRemoved.push(name);
    }
  }
  return { notRemoved };
};

const invite: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupId(req));
  const problems: string[] = [];
  const names = listParam(req.params.get("users"), "users", 100, problems);
  const role = req.params.get("role")?.trim() || "group_member";
  if (role !== "group_member" && role !== "group_admin") problems.push("'role' must be group_member or group_admin.");
  if (problems.length > 0) throw badRequest("Unable to invite users.", problems);
  const memberType: MemberType = role === "group_admin" ? "admin" : "member";
  const { found, missing } = await orgUsers(group, names);
  for (const user of found) {
    if (user.groups.has(group.groupId)) continue;
    await membership("Unable to invite users.", () => putRequest(group, "invite", user.username, memberType));
  }
  return { success: true, notInvited: missing };
};

/** A join request as ArcGIS answers it: the applicant's name and full name, and when it came. */
async function applicationView(username: string, received: number) {
  const user = await getUser(username);
  return { username, fullname: user?.fullName ?? username, received };
}

const applications: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupId(req));
  const list = await listRequests(group.groupId, "application");
  return { applications: await Promise.all(list.map((a) => applicationView(a.username, a.created))) };
};

const noApplication = (username: string) =>
  badRequest("Unable to answer the application.", [`No application from '${username.slice(0, 128)}'.`]);

const application: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupId(req));
  const username = req.pathParameters.username ?? "";
  const found = await getRequest(group.groupId, "application", username);
  if (!found) throw noApplication(username);
  return applicationView(found.username, found.created);
};

const answerApplication: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupId(req));
  const username = req.pathParameters.username ?? "";
  const found = await getRequest(group.groupId, "application", username);
  if (!found) throw noApplication(username);
  if (req.pathParameters.decision === "accept") {
    await membership("Unable to accept the application.", () => addMember(group, username, "member", "application"));
    return { success: true, username, groupId: group.groupId };
  }
  try {
    await deleteRequest(group.groupId, "application", username);
  } catch (err) {
    // Answered by another manager meanwhile, or the group went.
    if (err instanceof RequestError) throw noApplication(username);
    if (err instanceof GroupGoneError)
      throw badRequest("Unable to decline the application.", ["The group does not exist."]);
    throw err;
  }
  return { success: true, username, groupId: group.groupId };
};

/** The user named in a users/<u>/invitations path: only the user themselves. */
function invitee(req: RestRequest) {
  const identity = requireUser(req);
  if (identity.user.username !== req.pathParameters.username) throw forbidden();
  return identity;
}

const invitations: Compute = async (req) => {
  const identity = invitee(req);
  const ids = await invitationsOf(identity.user.username);
  const groups = await getGroups(ids);
  const list = [];
  for (const id of ids) {
    const group = groups.get(id);
    const request = group ? await getRequest(id, "invite", identity.user.username) : undefined;
    if (!group || group.deleting || !request) continue;
    list.push({ id, targetType: "group", targetId: id, group: groupView(group), received: request.created });
  }
  return { userInvitations: list };
};

const answerInvitation: Compute = async (req) => {
  const identity = invitee(req);
  const id = req.pathParameters.groupId ?? "";
  const group = await getGroup(id);
  const request = group ? await getRequest(id, "invite", identity.user.username) : undefined;
  if (!group || !request) throw badRequest("Unable to answer the invitation.", ["The invitation does not exist."]);
  if (req.pathParameters.decision === "accept") {
    await membership("Unable to accept the invitation.", () =>
      addMember(group, identity.user.username, request.memberType ?? "member", "invite"),
    );
  } else await deleteRequest(id, "invite", identity.user.username);
  return { success: true, username: identity.user.username, groupId: id, id };
};

const notFound: Compute = async (req) => {
  throw noSuchResource([`Nothing is served at ${req.method} ${req.event.rawPath.slice(0, 200)}.`]);
};

interface Route {
  readonly pattern: RegExp;
  readonly names: readonly string[];
  readonly op: Operation;
  readonly compute: Compute;
}

const ID = "([0-9A-Za-z]{1,64})";
const NAME = "([^/]{1,128})";
const post = (name: string): Operation => ({ name, postOnly: true });

const ROUTES: readonly Route[] = [
  {
    pattern: /^createGroup$/,
    names: [],
    op: {
      name: "Create Group",
      postOnly: true,
      form: [
        { name: "title", label: "Title", required: true },
        { name: "tags", label: "Tags (comma-separated)" },
        { name: "snippet", label: "Summary" },
        { name: "description", label: "Description", type: "textarea" },
        { name: "access", label: "Access", options: ["private", "org", "public"] },
        { name: "autoJoin", label: "Anyone who sees it may join", type: "checkbox" },
        { name: "isInvitationOnly", label: "By invitation only", type: "checkbox" },
        { name: "isViewOnly", label: "View only (only managers share)", type: "checkbox" },
      ],
    },
    compute: create,
  },
  {
    pattern: /^groups$/,
    names: [],
    op: { name: "Groups", html: (data, req) => groupsPage("Groups", data, req) },
    compute: search,
  },
  {
    pattern: new RegExp(`^groups/${ID}$`),
    names: ["groupId"],
    op: {
      name: "Group",
      html: (data, req) => {
        const extra = (data as GroupPageData)[PAGE];
        return groupPage(data as Record<string, unknown>, extra?.members, extra?.items ?? [], req, extra?.requests);
      },
    },
    compute: read,
  },
  { pattern: new RegExp(`^groups/${ID}/users$`), names: ["groupId"], op: { name: "Group Users" }, compute: users },
  {
    pattern: new RegExp(`^groups/${ID}/update$`),
    names: ["groupId"],
    op: {
      name: "Update Group",
      postOnly: true,
      form: [
        { name: "title", label: "Title" },
        { name: "tags", label: "Tags (comma-separated)" },
        { name: "snippet", label: "Summary" },
        { name: "description", label: "Description", type: "textarea" },
        { name: "access", label: "Access", options: ["private", "org", "public"] },
      ],
      // The form edits the group as it is: a field left alone is sent back unchanged (an empty one would clear it).
      formValues: async (req) => {
        const { group } = await managedGroup(req.identity, groupId(req));
        return {
          title: group.title,
          tags: group.tags.join(", "),
          snippet: group.snippet,
          description: group.description,
          access: group.access,
        };
      },
    },
    compute: update,
  },
  {
    pattern: new RegExp(`^groups/${ID}/delete$`),
    names: ["groupId"],
    op: { ...post("Delete Group"), confirm: "the group goes for good (its items stay)." },
    compute: remove,
  },
  { pattern: new RegExp(`^groups/${ID}/reassign$`), names: ["groupId"], op: post("Reassign Group"), compute: reassign },
  { pattern: new RegExp(`^groups/${ID}/join$`), names: ["groupId"], op: post("Join Group"), compute: join },
  { pattern: new RegExp(`^groups/${ID}/leave$`), names: ["groupId"], op: post("Leave Group"), compute: leave },
  {
    pattern: new RegExp(`^groups/${ID}/createApplication$`),
    names: ["groupId"],
    op: post("Create Group Application"),
    compute: createApplication,
  },
  { pattern: new RegExp(`^groups/${ID}/addUsers$`), names: ["groupId"], op: post("Add Users"), compute: addUsers },
  {
    pattern: new RegExp(`^groups/${ID}/removeUsers$`),
    names: ["groupId"],
    op: post("Remove Users"),
    compute: removeUsers,
  },
  { pattern: new RegExp(`^groups/${ID}/invite$`), names: ["groupId"], op: post("Invite Users"), compute: invite },
  {
    pattern: new RegExp(`^groups/${ID}/applications$`),
    names: ["groupId"],
    op: { name: "Group Applications" },
    compute: applications,
  },
  {
    pattern: new RegExp(`^groups/${ID}/applications/${NAME}$`),
    names: ["groupId", "username"],
    op: { name: "Group Application" },
    compute: application,
  },
  {
    pattern: new RegExp(`^groups/${ID}/applications/${NAME}/(accept|decline)$`),
    names: ["groupId", "username", "decision"],
    op: post("Answer Group Application"),
    compute: answerApplication,
  },
  {
    pattern: new RegExp(`^users/${NAME}/invitations$`),
    names: ["username"],
    op: { name: "Invitations" },
    compute: invitations,
  },
  {
    pattern: new RegExp(`^users/${NAME}/invitations/${ID}/(accept|decline)$`),
    names: ["username", "groupId", "decision"],
    op: post("Invitation"),
    compute: answerInvitation,
  },
];

/**
 * A form of a group's page (or the create form) answers a browser with the group's page, where the change shows
 * (a deleted group: the list of groups); clients asking for JSON get the operation's answer.
 */
function thenPage(compute: Compute): Compute {
  return async (req) => {
    const out = await compute(req);
    if (req.format !== "html") return out;
    const created = (out as { group?: { id?: unknown } }).group?.id;
    const id = typeof created === "string" ? created : groupId(req);
    return new Redirect(
      req.pathParameters.decision === undefined && req.path.endsWith("/delete")
        ? `${PORTAL_ROOT}/community/groups?f=html`
        : groupPageHref(id),
    );
  };
}

const handlers = ROUTES.map((r) => ({
  ...r,
  handle: restHandler(r.op, r.op.postOnly && r.names[0] !== "username" ? thenPage(r.compute) : r.compute),
}));
const fallback = restHandler({ name: "Not Found" }, notFound);

export const handler = async (event: APIGatewayProxyEventV2, context: Context) => {
  const rest = event.pathParameters?.path ?? "";
  for (const r of handlers) {
    const m = r.pattern.exec(rest);
    if (!m) continue;
    const named = Object.fromEntries(r.names.map((n, i) => [n, m[i + 1] ?? ""]));
    return r.handle({ ...event, pathParameters: { ...event.pathParameters, ...named } }, context);
  }
  return fallback(event, context);
};
