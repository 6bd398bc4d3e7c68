// Workflow task: records a finished job's result (only a processing job can finish; a repeat is a no-op).
import type { LayerPage } from "#functions/task-publish-layers.ts";
import type { JobInput } from "#shared/jobs.ts";
import { finishJob } from "#shared/stores/jobs.ts";
import { taskHandler } from "#shared/tasks.ts";

interface Finished extends JobInput {
  readonly result?: unknown;
  readonly page?: LayerPage;
}

export const handler = taskHandler("complete-job", async (input: Finished) => {
  let result = input.result ?? null;
  if (input.operation === "publishLayers") {
    // Counted page by page from who made each pair (its jobId), so a retried page neither doubles nor loses a
    // layer, and a job run again after a crash counts the layers it made before as its own.
    const published = input.page?.published ?? 0;
    const alreadyPublished = input.page?.alreadyPublished ?? 0;
    result = {
      datastoreId: input.params.datastoreId ?? "",
      published,
      alreadyPublished,
      layers: published + alreadyPublished,
    };
  }
  await finishJob(input.jobId, "completed", result, "");
  return { jobId: input.jobId, status: "completed" };
});
