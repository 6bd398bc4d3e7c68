// Workflow task (one Map item): a feature layer for one dataset, and its layer–dataset pair. Idempotent:
// the layer's ids derive from the data store and dataset path, so a retry or a second publishLayers call
// finds what was made before instead of making it twice.
import type { LayerItem } from "#functions/task-plan-layers.ts";
import { restServiceUrl, stableItemId } from "#shared/publishing.ts";
import type { DatasetType } from "#shared/stores/datastores.ts";
import { recordPair } from "#shared/stores/layers.ts";
import { getServer, serverUrl } from "#shared/stores/servers.ts";
import { createService, getService, ServiceExistsError } from "#shared/stores/services.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

/** A service name from a dataset name (`demo.Parcels` → `demo_Parcels`), unique per dataset path. */
const serviceName = (item: LayerItem) =>
  `${item.dataset.name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 100)}_${stableItemId(item.datastoreId, item.dataset.path).slice(0, 6)}`;

export const handler = taskHandler("publish-layer", async (item: LayerItem) => {
  const server = await getServer(item.serverId);
  if (!server || server.portalId !== item.portalId) throw new JobError(`Server '${item.serverId}' no longer exists.`);
  const name = serviceName(item);
  const id = stableItemId("layer", item.datastoreId, item.dataset.path);
  const now = Date.now();
  const existing = await getService(server.serverId, item.serverFolder, name);
  let created = existing?.created ?? now;
  if (!existing) {
    try {
      await createService({
        serverId: server.serverId,
        portalId: item.portalId,
        folder: item.serverFolder,
        name,
        type: "FeatureServer",
        capabilities: "Query",
        description: `Layer of ${item.dataset.displayName}`,
        tags: [],
        itemId: id,
        owner: item.owner,
        access: "org",
        extensions: [],
        created: now,
      });
    } catch (err) {
      if (!(err instanceof ServiceExistsError)) throw err;
      created = (await getService(server.serverId, item.serverFolder, name))?.created ?? now;
    }
  } else if (existing.itemId !== id) {
    throw new JobError(`A service named '${name}' exists already and is not this dataset's layer.`);
  }
  const recorded = await recordPair(item.datastoreId, {
    layer: {
      id,
      title: item.dataset.displayName,
      created,
      modified: now,
      url: restServiceUrl(serverUrl(server, item.origin), item.serverFolder, name, "FeatureServer"),
      type: "Feature Service",
    },
    dataset: { ...item.dataset, type: item.dataset.type as DatasetType, datastoreId: item.datastoreId },
  });
  return { path: item.dataset.path, layerId: id, recorded };
});
