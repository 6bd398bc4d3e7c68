// GET|POST …/sharing/rest/community/self: the signed-in user; 499 to anonymous callers (clients rely on it).
import { BUILT_IN_PRIVILEGES, baseRole } from "#shared/auth/privileges.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";

export const handler = restHandler({ name: "User" }, async (req) => {
  const { user, portal, privileges } = requireUser(req);
  const custom = !(user.role in BUILT_IN_PRIVILEGES);
  return {
    username: user.username,
    fullName: user.fullName,
    email: user.email,
    orgId: portal.portalId,
    // As on the original: a custom role is reported as the built-in role its privileges amount to, plus roleId.
    role: custom ? baseRole(privileges) : user.role,
    ...(custom ? { roleId: user.role } : {}),
    privileges,
    level: "2",
    userLicenseTypeId: "creatorUT",
    access: "org",
    provider: "arcgis",
    disabled: false,
    created: user.created,
    modified: user.modified,
  };
});
