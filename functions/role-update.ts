// POST …/portals/<self | id>/roles/<roleId>/update: rename and/or redescribe a custom role.
// A given field replaces the old value, an omitted one keeps it, an empty description clears it.
import { badRequest } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import {
  changeRole,
  loadRole,
  nextModified,
  readDescription,
  readName,
  requireRoleAdmin,
  ROLE_RESULT,
  roleResultPage,
} from "#shared/roles.ts";
import { replaceRole } from "#shared/stores/roles.ts";
import { emit } from "#shared/stores/events.ts";

const FAILED = "Unable to update role.";

export const handler = restHandler(
  {
    name: "Update Role",
    html: roleResultPage("Role updated"),
    postOnly: true,
    form: [
      { name: "name", label: "Name" },
      { name: "description", label: "Description", type: "textarea" },
    ],
    // The form edits the role as it is: a field the user leaves alone is sent back unchanged.
    formValues: async (req) => {
      const role = await loadRole(req, requireRoleAdmin(req).portal.portalId);
      return { name: role.name, description: role.description };
    },
  },
  async (req) => {
    const { portal, user: admin } = requireRoleAdmin(req);
    const rawName = req.params.get("name");
    const rawDescription = req.params.get("description");
    // A browser form always sends both fields: an empty name there means "leave it".
    const nameGiven = rawName !== undefined && !(req.format === "html" && rawName === "");
    if (!nameGiven && rawDescription === undefined) {
      throw badRequest(FAILED, ["Specify 'name', 'description' or both."]);
    }
    const problems: string[] = [];
    const name = nameGiven ? readName(rawName, problems) : undefined;
    const description = readDescription(rawDescription, problems);
    if (problems.length > 0) throw badRequest(FAILED, problems);
    let roleId = "";
    let said = "";
    await changeRole(req, portal.portalId, FAILED, (current) => {
      roleId = current.roleId;
      const changed = [
        name !== undefined && name !== current.name ? `renamed from “${current.name}”` : "",
        description !== undefined && description !== current.description ? "its description changed" : "",
      ].filter(Boolean);
      said = `The role “${name ?? current.name}”: ${changed.length ? changed.join(", ") : "nothing changed"}.`;
      return replaceRole(current, {
        ...current,
        name: name ?? current.name,
        description: description ?? current.description,
        modified: nextModified(current),
      });
    });
    await emit("roleChanged", {
      portalId: portal.portalId,
      change: "updated",
      roleId,
      by: admin.username,
    });
    return { success: true, [ROLE_RESULT]: { roleId, said } };
  },
);
