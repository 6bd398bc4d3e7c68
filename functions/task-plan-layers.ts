// Workflow task: which batches of a data store's datasets still need layers. The Map state iterates over
// batch numbers, not datasets, so the workflow's state stays small (Step Functions allows 256 KiB) however
// many datasets a data store holds.
import type { JobInput } from "#shared/jobs.ts";
import { getDataStoreContents } from "#shared/stores/datastores.ts";
import { pairedPaths } from "#shared/stores/layers.ts";
import { JobError, taskHandler } from "#shared/tasks.ts";

/** Datasets per Map item: 50 keeps 10,000 datasets at 200 small items. */
export const BATCH = 50;

export interface LayerBatch {
  readonly jobId: string;
  readonly portalId: string;
  readonly owner: string;
  readonly origin: string;
  readonly datastoreId: string;
  readonly serverId: string;
  readonly serverFolder: string;
  /** Which slice of the data store's datasets, sorted by path. */
  readonly batch: number;
}

export const handler = taskHandler("plan-layers", async (input: JobInput) => {
  const datastoreId = input.params.datastoreId ?? "";
  const contents = await getDataStoreContents(datastoreId);
  if (!contents || contents.store.portalId !== input.portalId)
    throw new JobError(`Data store '${datastoreId}' no longer exists.`);
  const done = await pairedPaths(datastoreId);
  const paths = contents.datasets.map((d) => d.path).sort();
  const items: LayerBatch[] = [];
  for (let batch = 0; batch * BATCH < paths.length; batch++) {
    if (!paths.slice(batch * BATCH, (batch + 1) * BATCH).some((p) => !done.has(p))) continue;
    items.push({
      jobId: input.jobId,
      portalId: input.portalId,
      owner: input.owner,
      origin: input.origin,
      datastoreId,
      serverId: input.params.serverId ?? "",
      serverFolder: input.params.serverFolder ?? "",
      batch,
    });
  }
  return { items, alreadyPublished: paths.filter((p) => done.has(p)).length };
});
