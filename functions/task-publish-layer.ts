// Workflow task (one Map item): a feature layer, and its layer–dataset pair, for each dataset of one batch
// that has none yet. Idempotent: a layer's ids derive from the data store and dataset path, so a retry or a
// second publishLayers call finds what was made before instead of making it twice.
import { BATCH, type LayerBatch } from "#functions/task-plan-layers.ts";
import { restServiceUrl, stableItemId } from "#shared/publishing.ts";
import { type Dataset, getDataStoreContents } from "#shared/stores/datastores.ts";
import { serviceItem } from "#shared/items.ts";
import { type LayerPair, pairedPaths, pairPut, recordPair } from "#shared/stores/layers.ts";
import { getServer, type Server, serverUrl } from "#shared/stores/servers.ts";
import { createService, getService, type Service, ServiceExistsError } from "#shared/stores/services.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

type DatasetLayer = Omit<LayerBatch, "batch"> & { readonly dataset: Dataset };

/** A service name from a dataset name (`demo.Parcels` → `demo_Parcels_…`), unique per dataset path. */
const serviceName = (item: DatasetLayer) =>
  `${item.dataset.name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 100)}_${stableItemId(item.datastoreId, item.dataset.path).slice(0, 6)}`;

export const handler = taskHandler("publish-layer", async (batch: LayerBatch) => {
  const server = await getServer(batch.serverId);
  if (!server || server.portalId !== batch.portalId) throw new JobError(`Server '${batch.serverId}' no longer exists.`);
  const contents = await getDataStoreContents(batch.datastoreId);
  if (!contents || contents.store.portalId !== batch.portalId)
    throw new JobError(`Data store '${batch.datastoreId}' no longer exists.`);
  const done = await pairedPaths(batch.datastoreId);
  const slice = [...contents.datasets]
    .sort((a, b) => (a.path < b.path ? -1 : 1))
    .slice(batch.batch * BATCH, (batch.batch + 1) * BATCH);
  let published = 0;
  for (const dataset of slice) {
    if (done.has(dataset.path)) continue;
    await publishOne(server, { ...batch, dataset });
    published++;
  }
  return { batch: batch.batch, published };
});

/** Who may see a layer, copied onto its pair from its service (and item). */
const pairAccess = (s: Service) => ({ access: s.access, owner: s.owner, portalId: s.portalId });

async function publishOne(server: Server, item: DatasetLayer): Promise<void> {
  const name = serviceName(item);
  const id = stableItemId("layer", item.datastoreId, item.dataset.path);
  const now = Date.now();
  const service: Service = {
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
    access: "private",
    extensions: [],
    created: now,
  };
  const pair = (created: number): LayerPair => ({
    layer: {
      id,
      title: item.dataset.displayName,
      created,
      modified: now,
      url: restServiceUrl(serverUrl(server, item.origin), item.serverFolder, name, "FeatureServer"),
      type: "Feature Service",
    },
    dataset: { ...item.dataset, datastoreId: item.datastoreId },
  });
  const existing = await getService(server.serverId, item.serverFolder, name);
  const notThisLayer = () => new JobError(`A service named '${name}' exists already and is not this dataset's layer.`);
  if (existing && existing.itemId !== id) throw notThisLayer();
  if (!existing) {
    // The service, its item and its layer–dataset pair are one transaction: none exists without the others.
    const path = { datastoreId: item.datastoreId, path: item.dataset.path };
    const url = restServiceUrl(serverUrl(server, ""), item.serverFolder, name, "FeatureServer");
    try {
      await createService(
        service,
        serviceItem(service, url, { title: item.dataset.displayName, pair: path }),
        undefined,
        [
          {
            Put: pairPut(item.datastoreId, pair(now), pairAccess(service)),
          },
        ],
      );
      return;
    } catch (err) {
      if (!(err instanceof ServiceExistsError)) throw err;
    }
  }
  // A retry (or a concurrent run) made the service: its pair is recorded unless it is already.
  const made = existing ?? (await getService(server.serverId, item.serverFolder, name));
  if (!made || made.itemId !== id) throw notThisLayer();
  await recordPair(item.datastoreId, pair(made.created), pairAccess(made));
}
