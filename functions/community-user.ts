// GET|POST …/sharing/rest/community/users/<username>: a user's profile. Members of the user's organization
// see the profile; the user themselves and the organization's administrators also see email, role and
// privileges. Anyone else is told the user does not exist, whether or not they do. `groups` lists the user's
// groups the caller may see, each with the user's membership (its pending applications only to the user
// themselves and administrators).
import { privilegesOf } from "#shared/auth/identity.ts";
import { groupView, groupVisibleTo, userMembership } from "#shared/groups.ts";
import { ApiError, tokenRequired } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { groupsOf, membershipsOf } from "#shared/stores/groups.ts";
import { getUser } from "#shared/stores/users.ts";
import { fullProfile, publicProfile } from "#shared/user-views.ts";

export const handler = restHandler({ name: "User" }, async (req) => {
  const identity = req.identity;
  if (identity.kind === "anonymous") throw tokenRequired();
  const username = req.pathParameters.username ?? "";
  const user = username.length <= 128 ? await getUser(username) : undefined;
  if (!user || user.portalId !== identity.portal.portalId) {
    throw new ApiError(400, "User not found.", [`User '${username.slice(0, 128)}' does not exist or is inaccessible.`]);
  }
  const self = identity.kind === "user" && identity.user.username === user.username;
  const admin = identity.kind === "user" && identity.user.role === "org_admin";
  const visible = (await groupsOf(user)).filter((g) => groupVisibleTo(identity, g));
  const members = await membershipsOf(
    user.username,
    visible.map((g) => g.groupId),
  );
  const groups = visible.map((g) => {
    const membership = userMembership(g, user.username, members.get(g.groupId));
    const { applications: _, ...withoutCount } = membership;
    return groupView(g, self || admin ? membership : withoutCount);
  });
  if (!self && !admin) return { ...publicProfile(user), groups };
  const privileges = self ? identity.privileges : await privilegesOf(user);
  return { ...fullProfile(user, privileges), groups };
});
