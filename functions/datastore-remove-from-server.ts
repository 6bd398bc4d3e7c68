// POST …/portals/<self | id>/datastores/removeFromServer: unregisters a data store from a server. Refused
// while layers bulk-published from it exist (the refusal names them): remove them first with
// allDatasets/deleteLayers.
import { badRequest } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { layersProblem } from "#shared/datastore-registration.ts";
import { managedDataStore, registering, registeredServer } from "#shared/publishing.ts";
import { updateDataStore } from "#shared/stores/datastores.ts";

const FAILED = "Unable to remove the data store from the server.";

export const handler = restHandler(
  {
    name: "Remove Data Store from Server",
    postOnly: true,
    form: [
      { name: "datastoreId", label: "Data store id", required: true },
      { name: "serverId", label: "Server id", required: true },
    ],
  },
  async (req) => {
    const store = await managedDataStore(req, FAILED);
    const server = await registeredServer(store, req.params.get("serverId"));
    if (typeof server === "string") throw badRequest(FAILED, [server]);
    const problem = await layersProblem(store.datastoreId);
    if (problem) throw badRequest(FAILED, [problem]);
    await registering(FAILED, () =>
      updateDataStore(store, { serverIds: store.serverIds.filter((id) => id !== server.serverId) }),
    );
    return { success: true };
  },
);
