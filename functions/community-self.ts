// GET|POST …/sharing/rest/community/self: the signed-in user; 499 to anonymous callers (clients rely on it).
import { builtInPrivileges } from "#shared/auth/privileges.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";

export const handler = restHandler({ name: "User" }, async (req) => {
  const { user, portal } = requireUser(req);
  return {
    username: user.username,
    fullName: user.fullName,
    email: user.email,
    orgId: portal.portalId,
    role: user.role,
    privileges: builtInPrivileges(user.role),
    level: "2",
    userLicenseTypeId: "creatorUT",
    access: "org",
    provider: "arcgis",
    disabled: false,
    created: user.created,
    modified: user.modified,
  };
});
