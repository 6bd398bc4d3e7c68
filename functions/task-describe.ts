// Workflow task: the describe job's result, read from the data store as it is now (its registered datasets
// and what its storage really holds, one level at a time).
import type { JobInput } from "#shared/jobs.ts";
import { describePath, registeredServer } from "#shared/publishing.ts";
import { StorageError } from "#shared/storage/storage.ts";
import { getDataStoreContents } from "#shared/stores/datastores.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("describe", async (input: JobInput) => {
  const { datastoreId, serverId, path = "/" } = input.params;
  const contents = datastoreId ? await getDataStoreContents(datastoreId) : undefined;
  if (!contents || contents.store.portalId !== input.portalId) {
    throw new JobError(`Data store '${datastoreId}' no longer exists.`);
  }
  const server = await registeredServer(contents.store, serverId);
  if (typeof server === "string") throw new JobError(server);
  let described: Awaited<ReturnType<typeof describePath>>;
  try {
    described = await describePath(contents, path);
  } catch (err) {
    if (err instanceof StorageError) throw new JobError(`Path '${path.slice(0, 256)}' cannot be read: ${err.message}`);
    throw err;
  }
  if (!described) throw new JobError(`Path '${path.slice(0, 256)}' is no longer in data store '${datastoreId}'.`);
  const store = contents.store;
  return {
    datastore:
      path === "/"
        ? { name: store.title, type: "datastore", path: "/", datastoreId: store.datastoreId }
        : {
            name: path.split("/").filter(Boolean).pop() ?? path,
            type: described.type,
            path,
            datastoreId: store.datastoreId,
          },
    children: described.children,
  };
});
