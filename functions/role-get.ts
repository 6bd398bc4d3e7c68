// GET|POST …/portals/<self | id>/roles/<roleId>: one custom role.
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { loadRole, rolePage, roleView } from "#shared/roles.ts";

export const handler = restHandler({ name: "Role", html: rolePage }, async (req) => {
  const { portal } = requireMember(req);
  return roleView(await loadRole(req, portal.portalId));
});
