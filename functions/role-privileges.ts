// GET|POST …/portals/<self | id>/roles/<roleId>/privileges: what a custom role grants.
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { loadRole } from "#shared/roles.ts";

export const handler = restHandler({ name: "Role Privileges" }, async (req) => {
  const { portal } = requireMember(req);
  return { privileges: (await loadRole(req, portal.portalId)).privileges };
});
