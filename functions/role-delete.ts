// POST …/portals/<self | id>/roles/<roleId>/delete: refused while any user holds the role.
import { ApiError } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { changeRole, requireRoleAdmin } from "#shared/roles.ts";
import { deleteRole } from "#shared/stores/roles.ts";
import { emit } from "#shared/stores/events.ts";

const FAILED = "Unable to delete role.";

export const handler = restHandler(
  { name: "Delete Role", postOnly: true, confirm: "the role goes for good." },
  async (req) => {
    const { portal, user: admin } = requireRoleAdmin(req);
    let roleId = "";
    await changeRole(req, portal.portalId, FAILED, async (current) => {
      if (current.holders > 0) {
        throw new ApiError(400, FAILED, [
          `${current.holders} user(s) hold this role. Give them another role first (updateuserrole).`,
        ]);
      }
      roleId = current.roleId;
      await deleteRole(current);
    });
    await emit("roleChanged", {
      portalId: portal.portalId,
      change: "deleted",
      roleId,
      by: admin.username,
    });
    return { success: true, roleId };
  },
);
