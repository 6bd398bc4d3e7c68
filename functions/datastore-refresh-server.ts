// POST …/portals/<self | id>/datastores/refreshServer: after a data store's item was updated with a new
// connection (or its password changed), proves it and pushes it to everything published from it. Every warm
// function serving those layers sees a new catalog version and a new revision of the connection on its next
// request, and opens a new pool reading the secret again: no redeploy, no waiting for pools to age out.
import { badRequest } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { refreshDataStore, validateDataStore } from "#shared/datastore-registration.ts";
import { managedDataStore, registering, registeredServer } from "#shared/publishing.ts";

const FAILED = "Unable to refresh the data store on the server.";

export const handler = restHandler(
  {
    name: "Refresh Data Store on Server",
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
    const status = await validateDataStore(store);
    if (status !== "success") throw badRequest(FAILED, [status]);
    await registering(FAILED, () => refreshDataStore(store));
    return { success: true };
  },
);
