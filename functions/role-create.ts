// POST …/portals/<self | id>/createRole: a custom role (default administrators only).
import { badRequest } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { shortId } from "#shared/ids.ts";
import { ROLE_RESULT, readDescription, readName, requireRoleAdmin, roleResultPage } from "#shared/roles.ts";
import { createRole, NameTakenError } from "#shared/stores/roles.ts";
import { emit } from "#shared/stores/events.ts";

const FAILED = "Unable to create role.";

export const handler = restHandler(
  {
    name: "Create Role",
    postOnly: true,
    html: roleResultPage("Role created"),
    form: [
      { name: "name", label: "Name", required: true },
      { name: "description", label: "Description", type: "textarea" },
    ],
  },
  async (req) => {
    const { portal, user: admin } = requireRoleAdmin(req);
    const problems: string[] = [];
    const name = readName(req.params.get("name") ?? "", problems);
    const description = readDescription(req.params.get("description") ?? "", problems);
    if (problems.length > 0 || name === undefined) throw badRequest(FAILED, problems);
    const now = Date.now();
    const roleId = shortId();
    try {
      await createRole({
        roleId,
        portalId: portal.portalId,
        name,
        description: description ?? "",
        privileges: [],
        created: now,
        modified: now,
        version: 1,
        holders: 0,
      });
    } catch (err) {
      if (err instanceof NameTakenError) throw badRequest(FAILED, [err.message]);
      throw err;
    }
    await emit("roleChanged", {
      portalId: portal.portalId,
      change: "created",
      roleId,
      name,
      by: admin.username,
    });
    return {
      success: true,
      id: roleId,
      [ROLE_RESULT]: { roleId, said: `Created the role “${name}”. It grants no privileges yet: set them next.` },
    };
  },
);
