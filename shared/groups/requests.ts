// Join requests (a member asks, the group's managers accept or decline) and invitations (a manager asks, the
// invited user accepts or declines).
import { groupView, holds, managedGroup, visibleGroup } from "#shared/groups.ts";
import { groupIdOf, membership } from "#shared/groups/refusals.ts";
import { badRequest, forbidden } from "#shared/errors.ts";
import { type Compute, type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import {
  addMember,
  deleteRequest,
  getGroup,
  getGroups,
  getRequest,
  type Group,
  GroupGoneError,
  invitationsOf,
  listRequests,
  putRequest,
  RequestError,
} from "#shared/stores/groups.ts";
import { getUser } from "#shared/stores/users.ts";

/** Records the caller's join request; one already pending stands (asking again changes nothing). */
export async function apply(group: Group, username: string, what: string): Promise<void> {
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
export const createApplication: Compute = async (req) => {
  const identity = requireUser(req);
  const group = await visibleGroup(identity, groupIdOf(req));
  if (!holds(identity, "portal:user:joinGroup")) throw forbidden(["Your role may not join groups."]);
  if (group.portalId !== identity.user.portalId) throw forbidden(["Only the group's organization may join it."]);
  if (!identity.user.groups.has(group.groupId)) {
    await apply(group, identity.user.username, "Unable to create the application.");
  }
  return { success: true, groupId: group.groupId };
};

/** A join request as ArcGIS answers it: the applicant's name and full name, and when it came. */
async function applicationView(username: string, received: number) {
  const user = await getUser(username);
  return { username, fullname: user?.fullName ?? username, received };
}

export const applications: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
  const list = await listRequests(group.groupId, "application");
  return { applications: await Promise.all(list.map((a) => applicationView(a.username, a.created))) };
};

const noApplication = (username: string) =>
  badRequest("Unable to answer the application.", [`No application from '${username.slice(0, 128)}'.`]);

export const application: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
  const username = req.pathParameters.username ?? "";
  const found = await getRequest(group.groupId, "application", username);
  if (!found) throw noApplication(username);
  return applicationView(found.username, found.created);
};

export const answerApplication: Compute = async (req) => {
  const { group } = await managedGroup(req.identity, groupIdOf(req));
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

export const invitations: Compute = async (req) => {
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

export const answerInvitation: Compute = async (req) => {
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
