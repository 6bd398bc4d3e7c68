// Changing a member's role (…/portals/<self | id>/updateuserrole): built-in or one of the organization's custom
// roles, never the administrator's own; the change raises a roleChanged event.
import { BUILT_IN_PRIVILEGES } from "#shared/auth/privileges.ts";
import { ApiError, badRequest, notFound } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { requireRoleAdmin } from "#shared/roles.ts";
import { failedConditions } from "#shared/stores/dynamo.ts";
import { getRole, listRoles } from "#shared/stores/roles.ts";
import { BUILT_IN_ROLES, getUser, listPortalUsers, setUserRole } from "#shared/stores/users.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { type FormField, resultPage } from "#shared/http/html.ts";
import { emit } from "#shared/stores/events.ts";

export const FAILED = "Unable to update user role.";
/** The role given, for the result page (a symbol key: never part of a JSON answer). */
const NEW_ROLE = Symbol("newRole");

/** The page's form: the organization's members (but the administrator) and its roles, built-in and custom. */
export async function userRoleFormFields(req: RestRequest): Promise<readonly FormField[]> {
  const admin = requireRoleAdmin(req);
  const [users, roles] = await Promise.all([listPortalUsers(admin.portal.portalId), listRoles(admin.portal.portalId)]);
  return [
    {
      name: "user",
      label: "User",
      options: users
        .filter((u) => u.username !== admin.user.username)
        .slice(0, 500)
        .map((u) => ({ value: u.username, label: `${u.username} (now ${u.role})` })),
    },
    {
      name: "role",
      label: "Role",
      options: [
        ...BUILT_IN_ROLES,
        ...roles.slice(0, 500).map((r) => ({ value: r.roleId, label: `${r.name} (${r.roleId})` })),
      ],
    },
  ];
}

/** The page after the change: who has which role now, and the ways on. */
export function userRolePage(data: object, req: RestRequest): string {
  const { username, [NEW_ROLE]: role } = data as { username?: string; [NEW_ROLE]?: string };
  const portal = `${PORTAL_ROOT}/portals/${encodeURIComponent(req.pathParameters.portalId ?? "self")}`;
  return resultPage("User role updated", `${username ?? "The user"} now has the role ${role ?? ""}.`, [
    [`${portal}/users?f=html`, "Users"],
    [`${portal}/updateuserrole?f=html`, "Change another user's role"],
    [`${PORTAL_ROOT}?f=html`, "Directory"],
  ]);
}

/** Gives the member `username` the role `role` (a built-in role's name or a custom role's id), as `admin`. */
export async function updateUserRole(admin: ReturnType<typeof requireRoleAdmin>, username: string, role: string) {
  if (username === admin.user.username) {
    throw badRequest(FAILED, ["Administrators cannot change their own role."]);
  }
  const user = await getUser(username);
  if (!user || user.portalId !== admin.portal.portalId) {
    throw notFound([`User '${username.slice(0, 128)}' does not exist or is inaccessible.`]);
  }
  const customTo = !(role in BUILT_IN_PRIVILEGES);
  if (customTo && !(await getRole(admin.portal.portalId, role))) {
    throw notFound([`Role '${role.slice(0, 64)}' does not exist or is inaccessible.`]);
  }
  if (user.role !== role) {
    try {
      await setUserRole(user, role, !(user.role in BUILT_IN_PRIVILEGES), customTo);
    } catch (err) {
      const failed = failedConditions(err);
      if (failed?.includes(0)) throw new ApiError(409, FAILED, ["The user was changed by another request; try again."]);
      if (failed && failed.length > 0)
        throw notFound([`Role '${role.slice(0, 64)}' does not exist or is inaccessible.`]);
      throw err;
    }
    await emit("roleChanged", {
      portalId: admin.portal.portalId,
      change: "userRoleChanged",
      roleId: role,
      username: user.username,
      previousRoleId: user.role,
      by: admin.user.username,
    });
  }
  return { success: true, username: user.username, [NEW_ROLE]: role };
}
