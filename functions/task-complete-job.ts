// Workflow task: records a finished job's result (only a processing job can finish; a repeat is a no-op).
import type { JobInput } from "#shared/jobs.ts";
import { finishJob } from "#shared/stores/jobs.ts";
import { pairedPaths } from "#shared/stores/layers.ts";
import { taskHandler } from "#shared/tasks.ts";

interface Finished extends JobInput {
  readonly result?: unknown;
  readonly plan?: { alreadyPublished: number };
}

export const handler = taskHandler("complete-job", async (input: Finished) => {
  let result = input.result ?? null;
  if (input.operation === "publishLayers") {
    // Counted from the pairs themselves, so retried batches neither double nor lose a layer.
    const datastoreId = input.params.datastoreId ?? "";
    const already = input.plan?.alreadyPublished ?? 0;
    const paired = (await pairedPaths(datastoreId)).size;
    result = { datastoreId, published: Math.max(0, paired - already), alreadyPublished: already, layers: paired };
  }
  await finishJob(input.jobId, "completed", result, "");
  return { jobId: input.jobId, status: "completed" };
});
