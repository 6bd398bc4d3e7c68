// GET|POST …/portals/<self | id>/users: the organization's members with their roles, paged with start
// (1-based) and num (≤ 100), sorted by username. Administrators only. Its page is where they manage people: each
// member's role, disabling, resetting a password, deleting, and adding a member (shared/user-admin.ts).
import { badRequest, forbidden } from "#shared/errors.ts";
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { privilegesOf } from "#shared/auth/identity.ts";
import { listPortalUsers } from "#shared/stores/users.ts";
import { LIST_PAGING, pageOf, readPaging } from "#shared/paging.ts";
import { fullProfile } from "#shared/user-views.ts";
import { usersPage } from "#shared/user-admin.ts";

export const handler = restHandler({ name: "Users", html: usersPage }, async (req) => {
  const { user, portal } = requireMember(req);
  if (user.role !== "org_admin") throw forbidden();
  const problems: string[] = [];
  const { start, num } = readPaging(req.params, LIST_PAGING, problems);
  if (problems.length > 0) throw badRequest("Unable to list users.", problems);
  const users = (await listPortalUsers(portal.portalId)).sort((a, b) => (a.username < b.username ? -1 : 1));
  const { shown, ...page } = pageOf(users, start, num);
  return {
    ...page,
    users: await Promise.all(shown.map(async (u) => fullProfile(u, await privilegesOf(u)))),
  };
});
