// Workflow task: checks the publish request against the data store and server as they are now, then creates
// the service (consuming the name reservation). Idempotent: a retry finds the service it made and reports it.
import type { JobInput } from "#shared/jobs.ts";
import {
  CACHED_CAPABILITIES,
  cacheFor,
  PUBLISH_TYPES,
  registeredServer,
  readServiceConfiguration,
  restServiceUrl,
  stableItemId,
  tagsOf,
} from "#shared/publishing.ts";
import { getDataStore } from "#shared/stores/datastores.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import { createReservedService, type Service, ServiceExistsError } from "#shared/stores/services.ts";
import { serviceItem } from "#shared/items.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("publish-service", async (input: JobInput) => {
  const problems: string[] = [];
  const config = readServiceConfiguration(input.params.serviceConfiguration, problems);
  if (!config) throw new JobError(problems.join(" "));
  const store = await getDataStore(config.cacheStoreId);
  if (!store || store.portalId !== input.portalId) {
    throw new JobError(`Data store '${config.cacheStoreId}' no longer exists; the service was not published.`);
  }
  const server = await registeredServer(store, input.params.serverId);
  if (typeof server === "string") throw new JobError(`${server} The service was not published.`);
  const cache = await cacheFor(store, config);
  if ("problem" in cache) throw new JobError(`${cache.problem} The service was not published.`);
  const location = store.location;
  if (!location) throw new JobError("The data store has no storage. The service was not published.");
  const folder = input.params.serverFolder ?? "";
  const serviceItemId = stableItemId("service", input.jobId);
  const service: Service = {
    serverId: server.serverId,
    portalId: input.portalId,
    folder,
    name: config.serviceName,
    type: config.type,
    capabilities: CACHED_CAPABILITIES[config.type] ?? "Map",
    description: input.params.description ?? "",
    tags: tagsOf(input.params.tags),
    itemId: serviceItemId,
    owner: input.owner,
    // Private until its owner shares it, as ArcGIS makes new items.
    access: "private",
    extensions: [],
    source: { datastoreId: store.datastoreId, location, path: cache.info.path },
    created: Date.now(),
  };
  const path = restServiceUrl(serverUrl(server, ""), folder, config.serviceName, config.type);
  try {
    await createReservedService(service, serviceItem(service, path, { info: cache.info }), input.jobId, cache.info);
  } catch (err) {
    if (err instanceof ServiceExistsError) throw new JobError(`${err.message} The service was not published.`);
    throw err;
  }
  return {
    services: [
      {
        serviceItemId,
        type: PUBLISH_TYPES[config.type]?.label ?? config.type,
        serviceUrl: restServiceUrl(serverUrl(server, input.origin), folder, config.serviceName, config.type),
      },
    ],
  };
});
