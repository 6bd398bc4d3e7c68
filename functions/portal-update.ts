// POST …/sharing/rest/portals/<self | id>/update: changes the organization's settings. mapgate takes
// `allowedOrigins` (ArcGIS: a comma-separated list of origins whose pages may read the organization's answers;
// empty allows every origin); ArcGIS's other settings are the operator's (`npm run admin -- update-portal`).
import { readAllowedOrigins } from "#shared/http/cors.ts";
import { badRequest } from "#shared/errors.ts";
import { requirePrivilege, restHandler } from "#shared/http/pipeline.ts";
import { updatePortal } from "#shared/stores/portals.ts";

const FAILED = "Unable to update the organization.";
/** Allowed origins are a security setting, as in ArcGIS's organization settings. */
const PRIVILEGE = "portal:admin:manageSecurity";

export const handler = restHandler(
  {
    name: "Update Organization",
    postOnly: true,
    form: [{ name: "allowedOrigins", label: "Allowed origins (comma-separated; empty: every origin)" }],
    formValues: async (req) => ({
      allowedOrigins: requirePrivilege(req, PRIVILEGE).portal.allowedOrigins.join(","),
    }),
  },
  async (req) => {
    const { portal } = requirePrivilege(req, PRIVILEGE);
    const raw = req.params.get("allowedOrigins");
    if (raw === undefined) throw badRequest(FAILED, ["Specify 'allowedOrigins' (empty to allow every origin)."]);
    const read = readAllowedOrigins(raw);
    if (!read.ok) throw badRequest(FAILED, read.problems);
    const updated = await updatePortal(portal.portalId, { allowedOrigins: read.origins });
    return { success: true, id: updated.portalId, allowedOrigins: updated.allowedOrigins };
  },
);
