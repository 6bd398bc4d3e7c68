// Workflow task: records a finished job's result (only a processing job can finish; a repeat is a no-op).
import type { JobInput } from "#shared/jobs.ts";
import { finishJob } from "#shared/stores/jobs.ts";
import { taskHandler } from "#shared/tasks.ts";

interface Finished extends JobInput {
  readonly result?: unknown;
  readonly plan?: { alreadyPublished: number };
  readonly layers?: readonly { path: string; layerId: string; recorded: boolean }[];
}

export const handler = taskHandler("complete-job", async (input: Finished) => {
  const result =
    input.operation === "publishLayers"
      ? {
          datastoreId: input.params.datastoreId,
          published: (input.layers ?? []).filter((l) => l.recorded).length,
          alreadyPublished: input.plan?.alreadyPublished ?? 0,
          layers: (input.layers ?? []).map((l) => ({ id: l.layerId, path: l.path })),
        }
      : (input.result ?? null);
  await finishJob(input.jobId, "completed", result, "");
  return { jobId: input.jobId, status: "completed" };
});
