// POST …/portals/<self | id>/datastores/addToServer: registers a data store with a federated server of the
// organization, once it is proven readable (validate's check): describe and publishing then work for it there.
import { badRequest } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { validateDataStore } from "#shared/datastore-registration.ts";
import { managedDataStore, registering } from "#shared/publishing.ts";
import { updateDataStore } from "#shared/stores/datastores.ts";
import { getServer } from "#shared/stores/servers.ts";

const FAILED = "Unable to add the data store to the server.";

export const handler = restHandler(
  {
    name: "Add Data Store to Server",
    postOnly: true,
    form: [
      { name: "datastoreId", label: "Data store id", required: true },
      { name: "serverId", label: "Server id", required: true },
    ],
  },
  async (req) => {
    const store = await managedDataStore(req, FAILED);
    const serverId = req.params.get("serverId");
    if (!serverId) throw badRequest(FAILED, ["'serverId' must be specified."]);
    const server = await getServer(serverId);
    if (!server || server.portalId !== store.portalId)
      throw badRequest(FAILED, [`Server '${serverId.slice(0, 64)}' does not exist.`]);
    if (store.serverIds.includes(serverId)) return { success: true };
    const status = await validateDataStore(store);
    if (status !== "success") throw badRequest(FAILED, [status]);
    await registering(FAILED, () => updateDataStore(store, { serverIds: [...store.serverIds, serverId] }));
    return { success: true };
  },
);
