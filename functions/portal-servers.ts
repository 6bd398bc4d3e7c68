// GET|POST …/sharing/rest/portals/<self | id>/servers: the organization's federated servers, so a client
// can find the serverURL for a server-token. Members of the organization only.
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { listPortalServers, serverUrl } from "#shared/stores/servers.ts";
import { hostAndPath } from "#shared/urls.ts";

export const handler = restHandler({ name: "Servers" }, async (req) => {
  const { portal } = requireMember(req);
  const servers = await listPortalServers(portal.portalId);
  return {
    servers: servers.map((s) => {
      const url = serverUrl(s, req.httpsOrigin);
      return {
        id: s.serverId,
        name: s.hosted ? `${hostAndPath(req.httpsOrigin)}/${s.name}` : s.name,
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
