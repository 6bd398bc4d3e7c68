// GET|POST …/sharing/rest/portals/<self | id>/servers: the organization's federated servers, so a client
// can find the serverURL for a server-token. Members of the organization only.
import { forbidden } from "#shared/http/errors.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { listPortalServers, serverUrl } from "#shared/stores/servers.ts";

export const handler = restHandler({ name: "Servers" }, async (req) => {
  const { portal } = requireUser(req);
  const requested = req.pathParameters.portalId;
  if (requested !== "self" && requested !== portal.portalId) throw forbidden();
  const servers = await listPortalServers(portal.portalId);
  return {
    servers: servers.map((s) => {
      const url = serverUrl(s, req.httpsOrigin);
      return {
        id: s.serverId,
        name: s.hosted ? `${new URL(req.httpsOrigin).host}/${s.name}` : s.name,
        url,
        adminUrl: `${url}/admin`,
        isHosted: s.serverRole === "HOSTING_SERVER",
        serverType: "ArcGIS",
        serverRole: s.serverRole,
        serverFunction: "",
      };
    }),
  };
});
