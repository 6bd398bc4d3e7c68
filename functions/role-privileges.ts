// GET|POST …/portals/<self | id>/roles/<roleId>/privileges: what a custom role grants.
import { restHandler } from "#shared/http/pipeline.ts";
import { loadRole, requireMember } from "#shared/roles.ts";

export const handler = restHandler({ name: "Role Privileges" }, async (req) => {
  const { portal } = requireMember(req);
  return { privileges: (await loadRole(req, portal.portalId)).privileges };
});
