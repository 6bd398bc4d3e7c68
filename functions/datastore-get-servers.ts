// GET|POST …/portals/<self | id>/datastores/getServers: the federated servers a data store is registered with,
// described as the organization's servers list describes them.
import { restHandler } from "#shared/http/pipeline.ts";
import { managedDataStore } from "#shared/publishing.ts";
import { getServer, serverUrl } from "#shared/stores/servers.ts";
import { hostAndPath } from "#shared/urls.ts";

export const handler = restHandler({ name: "Data Store Servers" }, async (req) => {
  const store = await managedDataStore(req, "Unable to get the data store's servers.");
  const servers = [];
  for (const id of store.serverIds) {
    const s = await getServer(id);
    if (!s || s.portalId !== store.portalId) continue;
    const url = serverUrl(s, req.httpsOrigin);
    servers.push({
      id: s.serverId,
      name: s.hosted ? `${hostAndPath(req.httpsOrigin)}/${s.name}` : s.name,
      url,
      adminUrl: `${url}/admin`,
      isHosted: s.serverRole === "HOSTING_SERVER",
      serverType: "ArcGIS",
      serverRole: s.serverRole,
      serverFunction: "",
    });
  }
  return { servers };
});
