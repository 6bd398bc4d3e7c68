// Workflow task: the describe job's result, read from the data store as it is now.
import type { JobInput } from "#shared/jobs.ts";
import { childrenOf, registeredServer } from "#shared/publishing.ts";
import { getDataStoreContents } from "#shared/stores/datastores.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("describe", async (input: JobInput) => {
  const { datastoreId, serverId, path = "/" } = input.params;
  const contents = datastoreId ? await getDataStoreContents(datastoreId) : undefined;
  if (!contents || contents.store.portalId !== input.portalId) {
    throw new JobError(`Data store '${datastoreId}' no longer exists.`);
  }
  const server = await registeredServer(contents, serverId);
  if (typeof server === "string") throw new JobError(server);
  const leaf = [...contents.datasets, ...contents.cachedLayers].find((e) => e.path === path);
  const children = leaf ? [] : childrenOf(contents, path);
  if (!children) throw new JobError(`Path '${path}' is no longer in data store '${datastoreId}'.`);
  const store = contents.store;
  return {
    datastore:
      path === "/"
        ? { name: store.title, type: "datastore", path: "/", datastoreId: store.datastoreId }
        : {
            name: path.split("/").pop() ?? path,
            type: leaf && "type" in leaf ? leaf.type : "folder",
            path,
            datastoreId: store.datastoreId,
          },
    children,
  };
});
