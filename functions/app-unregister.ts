// POST …/portals/<self | id>/apps/<clientId>/unregister: removes an application; every token issued to it
// (app tokens and its users' tokens) stops working at once, since the pipeline checks the app is registered.
import { notFound } from "#shared/errors.ts";
import { requirePrivilege, restHandler } from "#shared/http/pipeline.ts";
import { APP_ADMIN_PRIVILEGE } from "#shared/oauth/apps.ts";
import { unregisterApp } from "#shared/stores/apps.ts";

export const handler = restHandler(
  {
    name: "Unregister Application",
    postOnly: true,
    form: [],
    confirm: "the application and every token issued to it stop working at once.",
  },
  async (req) => {
    const { portal } = requirePrivilege(req, APP_ADMIN_PRIVILEGE);
    const clientId = req.pathParameters.clientId ?? "";
    if (clientId.length > 64 || !(await unregisterApp(portal.portalId, clientId))) {
      throw notFound([`No application ${clientId.slice(0, 64)} is registered in this organization.`]);
    }
    return { success: true, client_id: clientId };
  },
);
