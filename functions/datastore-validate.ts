// POST …/portals/<self | id>/datastores/validate: whether a data store can be read, by really reading it (a
// database logs in and has PostGIS, a bucket's prefix is listed, a folder is read), within seconds. Answers
// `{"status":"success"}` or `{"status":"<reason>"}`, as ArcGIS does: a registered store (`datastoreId`), or
// one not yet registered (`datastore`, its JSON, checked by the rules of registration first).
import { badRequest } from "#shared/http/errors.ts";
import { requirePrivilege, restHandler } from "#shared/http/pipeline.ts";
import { readDataStoreJson, validateDataStore } from "#shared/datastore-registration.ts";
import { DESCRIBE_PRIVILEGE, managedDataStore, registering, registeredServer } from "#shared/publishing.ts";
import { getServer } from "#shared/stores/servers.ts";

const FAILED = "Unable to validate the data store.";

export const handler = restHandler(
  {
    name: "Validate Data Store",
    postOnly: true,
    bodyOnly: ["datastore"],
    form: [
      { name: "datastoreId", label: "Data store id (a registered one)" },
      { name: "datastore", label: "Or the data store's JSON (not registered yet)", type: "textarea" },
      { name: "serverId", label: "Server id", required: true },
    ],
  },
  async (req) => {
    const { portal } = requirePrivilege(req, DESCRIBE_PRIVILEGE);
    const serverId = req.params.get("serverId");
    const json = req.params.get("datastore");
    if (req.params.get("datastoreId")) {
      const store = await managedDataStore(req, FAILED);
      // A store not registered with the server yet is validated for it (as addToServer does first).
      if (serverId && store.serverIds.includes(serverId)) {
        const server = await registeredServer(store, serverId);
        if (typeof server === "string") throw badRequest(FAILED, [server]);
      } else await checkServer(portal.portalId, serverId);
      return { status: await validateDataStore(store) };
    }
    if (!json) throw badRequest(FAILED, ["'datastoreId' or 'datastore' must be specified."]);
    await checkServer(portal.portalId, serverId);
    const spec = await registering(FAILED, () => readDataStoreJson(json));
    return {
      status: await validateDataStore({
        datastoreId: "",
        kind: spec.kind,
        location: spec.location,
        connection: spec.database?.connection,
        password: spec.database?.password ?? "",
      }),
    };
  },
);

async function checkServer(portalId: string, serverId: string | undefined): Promise<void> {
  if (!serverId) throw badRequest(FAILED, ["'serverId' must be specified."]);
  const server = await getServer(serverId);
  if (!server || server.portalId !== portalId)
    throw badRequest(FAILED, [`Server '${serverId.slice(0, 64)}' does not exist.`]);
}
