// GET|POST …/portals/<self | id>/roles/<roleId>: one custom role; …/roles/<roleId>/privileges: what it grants.
// One function for both (the same rules and reads), each at its own path.
import { requireMember } from "#shared/http/pipeline.ts";
import { routesHandler } from "#shared/http/router.ts";
import { loadRole, rolePage, roleView } from "#shared/roles.ts";
import { ROLE_PATHS } from "#shared/system.ts";

export const handler = routesHandler({
  [ROLE_PATHS.role]: {
    op: { name: "Role", html: rolePage },
    compute: async (req) => {
      const { portal } = requireMember(req);
      return roleView(await loadRole(req, portal.portalId));
    },
  },
  [ROLE_PATHS.privileges]: {
    op: { name: "Role Privileges" },
    compute: async (req) => {
      const { portal } = requireMember(req);
      return { privileges: (await loadRole(req, portal.portalId)).privileges };
    },
  },
});
