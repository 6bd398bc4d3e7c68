// What the owner of a data store registered through the portal does with it (…/portals/<self | id>/datastores/
// <operation>), each operation with its own rules and form:
//   validate            whether the store can be read, by reading it, within seconds → {status}
//   addToServer         registers it with a federated server, once validated → {success}
//   getServers          the servers it is registered with → {servers}
//   refreshServer       pushes its (changed) connection to what was published from it → {success}
//   removeFromServer    unregisters it from a server; refused while services published from it there exist → {success}
//   allDatasets/deleteLayers  deletes those layers → {success, deleted, more}
import {
  publishedProblem,
  readDataStoreJson,
  refreshDataStore,
  validateDataStore,
} from "#shared/datastore-registration.ts";
import { emit } from "#shared/stores/events.ts";
import { serverField, storeAndServerFields, storeChoices, storeField } from "#shared/form-choices.ts";
import { badRequest } from "#shared/errors.ts";
import { requirePrivilege } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { DESCRIBE_PRIVILEGE, managedDataStore, registering, registeredServer } from "#shared/publishing.ts";
import { updateDataStore } from "#shared/stores/datastores.ts";
import { deleteItem, getItems, ItemGoneError } from "#shared/stores/items.ts";
import { deletePair, forEachPairPage, type LayerPair } from "#shared/stores/layers.ts";
import { getServer, type Server, serverView } from "#shared/stores/servers.ts";

const STORE_AND_SERVER = [
  { name: "datastoreId", label: "Data store id", required: true },
  { name: "serverId", label: "Server id", required: true },
] as const;

/** A server of the organization, or a 400 saying it does not exist. */
async function serverOf(portalId: string, serverId: string | undefined, what: string) {
  if (!serverId) throw badRequest(what, ["'serverId' must be specified."]);
  const server = await getServer(serverId);
  if (!server || server.portalId !== portalId)
    throw badRequest(what, [`Server '${serverId.slice(0, 64)}' does not exist.`]);
  return server;
}

const VALIDATE_FAILED = "Unable to validate the data store.";

/**
 * `{"status":"success"}` or `{"status":"<reason>"}`, as ArcGIS answers: a registered store (`datastoreId`), or
 * one not registered yet (`datastore`, its JSON, held to the rules of registration first).
 */
export const validate: FamilyOperation = {
  op: {
    name: "Validate Data Store",
    postOnly: true,
    bodyOnly: ["datastore"],
    form: [
      { name: "datastoreId", label: "Data store id (a registered one)" },
      { name: "datastore", label: "Or the data store's JSON (not registered yet)", type: "textarea" },
      { name: "serverId", label: "Server id", required: true },
    ],
    formFields: async (req) => {
      const choices = await storeChoices(req);
      return [
        storeField("datastoreId", choices, "(none: validate the JSON below)"),
        { name: "datastore", label: "Or the data store's JSON (not registered yet)", type: "textarea" },
        serverField(choices, true),
      ];
    },
  },
  compute: async (req) => {
    const { portal } = requirePrivilege(req, DESCRIBE_PRIVILEGE);
    if (req.params.get("datastoreId")) {
      const store = await managedDataStore(req, VALIDATE_FAILED);
      await serverOf(portal.portalId, req.params.get("serverId"), VALIDATE_FAILED);
      return { status: await validateDataStore(store) };
    }
    const json = req.params.get("datastore");
    if (!json) throw badRequest(VALIDATE_FAILED, ["'datastoreId' or 'datastore' must be specified."]);
    await serverOf(portal.portalId, req.params.get("serverId"), VALIDATE_FAILED);
    const spec = await registering(VALIDATE_FAILED, () => readDataStoreJson(json));
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
};

const ADD_FAILED = "Unable to add the data store to the server.";

export const addToServer: FamilyOperation = {
  op: {
    name: "Add Data Store to Server",
    postOnly: true,
    form: STORE_AND_SERVER,
    formFields: (req) => storeAndServerFields(req, true),
  },
  compute: async (req) => {
    const store = await managedDataStore(req, ADD_FAILED);
    const server = await serverOf(store.portalId, req.params.get("serverId"), ADD_FAILED);
    if (store.serverIds.includes(server.serverId)) return { success: true };
    const status = await validateDataStore(store);
    if (status !== "success") throw badRequest(ADD_FAILED, [status]);
    await registering(ADD_FAILED, () => updateDataStore(store, { serverIds: [...store.serverIds, server.serverId] }));
    return { success: true };
  },
};

/** Described as the organization's `servers` list describes them. */
export const getServers: FamilyOperation = {
  op: { name: "Data Store Servers" },
  compute: async (req) => {
    const store = await managedDataStore(req, "Unable to get the data store's servers.");
    // Read together, not one after another.
    const found = await Promise.all(store.serverIds.map((id) => getServer(id)));
    const servers = found.filter((s) => s !== undefined && s.portalId === store.portalId);
    return { servers: servers.map((s) => serverView(s as Server, req.httpsOrigin)) };
  },
};

const REFRESH_FAILED = "Unable to refresh the data store on the server.";

/**
 * After the store's item was updated with a new connection (or its password changed): proves it, then pushes it
 * to every layer published from it. Each warm function serving them sees a new catalog version and a new
 * revision of the connection on its next request, and opens a new pool reading the secret again.
 */
export const refreshServer: FamilyOperation = {
  op: {
    name: "Refresh Data Store on Server",
    postOnly: true,
    form: STORE_AND_SERVER,
    formFields: (req) => storeAndServerFields(req),
  },
  compute: async (req) => {
    const store = await managedDataStore(req, REFRESH_FAILED);
    const server = await registeredServer(store, req.params.get("serverId"));
    if (typeof server === "string") throw badRequest(REFRESH_FAILED, [server]);
    const status = await validateDataStore(store);
    if (status !== "success") throw badRequest(REFRESH_FAILED, [status]);
    await registering(REFRESH_FAILED, () => refreshDataStore(store));
    return { success: true };
  },
};

const REMOVE_FAILED = "Unable to remove the data store from the server.";

export const removeFromServer: FamilyOperation = {
  op: {
    name: "Remove Data Store from Server",
    postOnly: true,
    form: STORE_AND_SERVER,
    formFields: (req) => storeAndServerFields(req),
  },
  compute: async (req) => {
    const store = await managedDataStore(req, REMOVE_FAILED);
    const server = await registeredServer(store, req.params.get("serverId"));
    if (typeof server === "string") throw badRequest(REMOVE_FAILED, [server]);
    const problem = await publishedProblem(store, [server.serverId]);
    if (problem) throw badRequest(REMOVE_FAILED, [problem]);
    await registering(REMOVE_FAILED, () =>
      updateDataStore(store, { serverIds: store.serverIds.filter((id) => id !== server.serverId) }),
    );
    return { success: true };
  },
};

/** Well inside the 29 s an API Gateway request may take. */
const DELETE_BUDGET_MS = 20_000;

/**
 * Every layer bulk-published from the store goes as deleting its item does (the item, its service and its
 * layer–dataset pair). A store with more layers than one request removes answers `more: true`: call again.
 */
export const deleteLayers: FamilyOperation = {
  op: {
    name: "Delete Layers",
    postOnly: true,
    confirm: "every layer bulk-published from the store goes, with its item and service.",
    form: [{ name: "datastoreId", label: "Data store id", required: true }],
    formFields: async (req) => [storeField("datastoreId", await storeChoices(req))],
  },
  compute: async (req) => {
    const store = await managedDataStore(req, "Unable to delete the data store's layers.");
    const by = req.identity.kind === "user" ? req.identity.user.username : "";
    const until = Date.now() + DELETE_BUDGET_MS;
    const pages: LayerPair[][] = [];
    await forEachPairPage(store.datastoreId, (pairs) => {
      pages.push(pairs);
      return true;
    });
    let deleted = 0;
    for (const pairs of pages) {
      const items = await getItems(pairs.map((p) => p.layer.id));
      for (const pair of pairs) {
        if (Date.now() > until) return { success: true, deleted, more: true };
        const item = items.get(pair.layer.id);
        try {
          if (item) await deleteItem(item);
          else await deletePair(store.datastoreId, pair.dataset.path);
        } catch (err) {
          if (!(err instanceof ItemGoneError)) throw err;
        }
        deleted++;
        if (item?.service) {
          const { portalId, itemId, owner, url } = item;
          await emit("serviceUnpublished", { portalId, itemId, owner, ...item.service, url, by });
        }
      }
    }
    return { success: true, deleted, more: false };
  },
};
