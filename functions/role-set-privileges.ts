// POST …/portals/<self | id>/roles/<roleId>/setPrivileges: privileges={"privileges":[…]}.
import { restHandler } from "#shared/http/pipeline.ts";
import { ROLE_PRIVILEGES } from "#shared/auth/privileges.ts";
import { checkedBoxes } from "#shared/http/html.ts";
import {
  changeRole,
  loadRole,
  nextModified,
  privilegesInWords,
  readPrivileges,
  requireRoleAdmin,
  ROLE_RESULT,
  roleResultPage,
} from "#shared/roles.ts";
import { replaceRole } from "#shared/stores/roles.ts";
import { emit } from "#shared/stores/events.ts";

/** The form's checkbox group (`privilege:<privilege>`) and the mark of a POST from it. */
const PRIVILEGE_BOX = "privilege";
const CHECKBOX_FORM = "checkboxForm";

export const handler = restHandler(
  {
    name: "Set Role Privileges",
    postOnly: true,
    form: [{ name: "privileges", label: 'Privileges ({"privileges":[…]})', type: "textarea", required: true }],
    // The page's form: one checkbox per privilege a role may hold, the role's own checked.
    formFields: async (req) => {
      requireRoleAdmin(req);
      return [
        { name: PRIVILEGE_BOX, label: "Privileges", checkboxes: ROLE_PRIVILEGES },
        { name: CHECKBOX_FORM, type: "hidden" },
      ];
    },
    formValues: async (req) => {
      const role = await loadRole(req, requireRoleAdmin(req).portal.portalId);
      return { [PRIVILEGE_BOX]: role.privileges.join(","), [CHECKBOX_FORM]: "true" };
    },
    html: roleResultPage("Privileges set"),
  },
  async (req) => {
    const { portal, user: admin } = requireRoleAdmin(req);
    const raw = req.params.get("privileges");
    // The page's checkboxes (an unchecked box is sent as nothing), or the JSON ArcGIS clients send.
    const privileges =
      raw === undefined && req.params.get(CHECKBOX_FORM) === "true"
        ? checkedBoxes(PRIVILEGE_BOX, ROLE_PRIVILEGES, (name) => req.params.get(name))
        : readPrivileges(raw);
    let roleId = "";
    let name = "";
    await changeRole(req, portal.portalId, "Unable to set privileges.", (current) => {
      roleId = current.roleId;
      name = current.name;
      return replaceRole(current, { ...current, privileges, modified: nextModified(current) });
    });
    await emit("roleChanged", {
      portalId: portal.portalId,
      change: "privilegesSet",
      roleId,
      privileges,
      by: admin.username,
    });
    return {
      success: true,
      [ROLE_RESULT]: { roleId, said: `The role “${name}” now grants ${privilegesInWords(privileges)}.` },
    };
  },
);
