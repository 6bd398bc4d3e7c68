// Workflow task: the datasets of a data store that have no layer yet, one Map item each.
import type { JobInput } from "#shared/jobs.ts";
import { getDataStoreContents } from "#shared/stores/datastores.ts";
import { pairedPaths } from "#shared/stores/layers.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

export interface LayerItem {
  readonly jobId: string;
  readonly portalId: string;
  readonly owner: string;
  readonly origin: string;
  readonly datastoreId: string;
  readonly serverId: string;
  readonly serverFolder: string;
  readonly dataset: { name: string; displayName: string; type: string; path: string };
}

export const handler = taskHandler("plan-layers", async (input: JobInput) => {
  const datastoreId = input.params.datastoreId ?? "";
  const contents = await getDataStoreContents(datastoreId);
  if (!contents || contents.store.portalId !== input.portalId)
    throw new JobError(`Data store '${datastoreId}' no longer exists.`);
  const done = await pairedPaths(datastoreId);
  const items: LayerItem[] = contents.datasets
    .filter((d) => !done.has(d.path))
    .map((d) => ({
      jobId: input.jobId,
      portalId: input.portalId,
      owner: input.owner,
      origin: input.origin,
      datastoreId,
      serverId: input.params.serverId ?? "",
      serverFolder: input.params.serverFolder ?? "",
      dataset: { name: d.name, displayName: d.displayName, type: d.type, path: d.path },
    }));
  return { items, alreadyPublished: done.size };
});
