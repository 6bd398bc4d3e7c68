// POST …/portals/<self | id>/roles/<roleId>/setPrivileges: privileges={"privileges":[…]}.
import { restHandler } from "#shared/http/pipeline.ts";
import { changeRole, nextModified, readPrivileges, requireRoleAdmin } from "#shared/roles.ts";
import { replaceRole } from "#shared/stores/roles.ts";
import { emit } from "#shared/events.ts";

export const handler = restHandler(
  {
    name: "Set Role Privileges",
    postOnly: true,
    form: [{ name: "privileges", label: 'Privileges ({"privileges":[…]})', type: "textarea", required: true }],
  },
  async (req) => {
    const { portal, user: admin } = requireRoleAdmin(req);
    const privileges = readPrivileges(req.params.get("privileges"));
    let roleId = "";
    await changeRole(req, portal.portalId, "Unable to set privileges.", (current) => {
      roleId = current.roleId;
      return replaceRole(current, { ...current, privileges, modified: nextModified(current) });
    });
    await emit("roleChanged", {
      portalId: portal.portalId,
      change: "privilegesSet",
      roleId,
      privileges,
      by: admin.username,
    });
    return { success: true };
  },
);
