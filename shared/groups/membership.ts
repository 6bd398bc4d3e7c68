// Who belongs to a group: its member lists, joining and leaving, and its managers adding, removing and inviting.
import { holds, listParam, managedGroup, visibleGroup } from "#shared/groups.ts";
import { apply } from "#shared/groups/requests.ts";
import { groupIdOf, membership, settled } from "#shared/groups/refusals.ts";
import { badRequest, forbidden, tokenRequired } from "#shared/errors.ts";
import { type Compute, requireUser } from "#shared/http/pipeline.ts";
import {
  addMember,
  getRequest,
  type Group,
  GroupGoneError,
  listMembers,
  type MemberType,
  MembershipError,
  putRequest,
  removeMember,
  setMemberType,
  TooManyGroupsError,
} from "#shared/stores/groups.ts";
import { getUser, type User } from "#shared/stores/users.ts";

export async function memberLists(group: Group) {
  const members = await listMembers(group.groupId);
  return {
    owner: group.owner,
    admins: members.filter((m) => m.memberType !== "member").map((m) => m.username),
    users: members.filter((m) => m.memberType === "member").map((m) => m.username),
  };
}

export const users: Compute = async (req) => {
  const group = await visibleGroup(req.identity, groupIdOf(req));
  if (req.identity.kind === "anonymous") throw tokenRequired();
  return memberLists(group);
};

export const join: Compute = async (req) => {
  const identity = requireUser(req);
  const group = await visibleGroup(identity, groupIdOf(req));
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

export const leave: Compute = async (req) => {
  const identity = requireUser(req);
  const id = groupIdOf(req);
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

export const addUsers: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
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

export const removeUsers: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
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

export const invite: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
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
