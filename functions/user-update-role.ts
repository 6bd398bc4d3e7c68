// POST …/portals/<self | id>/updateuserrole: user=<username>&role=<org_admin|org_publisher|org_user|roleId>.
import { restHandler } from "#shared/http/pipeline.ts";
import { requireRoleAdmin } from "#shared/roles.ts";
import { FAILED, updateUserRole, userRoleFormFields, userRolePage } from "#shared/user-role.ts";

export const handler = restHandler(
  {
    name: "Update User Role",
    postOnly: true,
    form: [
      { name: "user", label: "Username", required: true },
      { name: "role", label: "Role (org_admin, org_publisher, org_user or a custom role id)", required: true },
    ],
    formFields: userRoleFormFields,
    html: userRolePage,
  },
  async (req) => {
    const admin = requireRoleAdmin(req);
    const username = req.params.required("user", FAILED);
    const role = req.params.required("role", FAILED);
    return updateUserRole(admin, username, role);
  },
);
