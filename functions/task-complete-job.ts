// Workflow task: records a finished job's result (only a processing job can finish; a repeat is a no-op).
import type { LayerPage } from "#shared/publish-layers.ts";
import type { JobInput } from "#shared/jobs.ts";
import { emit } from "#shared/stores/events.ts";
import { count, METRIC } from "#shared/metrics.ts";
import { finishJob } from "#shared/stores/jobs.ts";
import { taskHandler } from "#shared/tasks.ts";

interface Finished extends JobInput {
  readonly result?: unknown;
  readonly page?: LayerPage;
}

/** The service a publish job made (publishLayers' layers are told by its one Job Completed event). */
function publishedServices(input: Finished): { itemId: string; type: string; url: string }[] {
  if (input.operation !== "publish" && input.operation !== "publishHosted") return [];
  const services = (input.result as { services?: { serviceItemId?: string; type?: string; serviceUrl?: string }[] })
    ?.services;
  return (services ?? []).map((s) => ({ itemId: s.serviceItemId ?? "", type: s.type ?? "", url: s.serviceUrl ?? "" }));
}

/** Each dataset publishLayers left out, and why; past the ones it names, how many more. */
function skippedMessages(page: LayerPage | undefined): string[] {
  const skips = page?.skips ?? [];
  const unnamed = (page?.skipped ?? 0) - skips.length;
  return [
    ...skips.map((s) => `Dataset '${s.path}' was not published: ${s.reason}`),
    ...(unnamed > 0
      ? [`${unnamed} more datasets were not published (the first ${skips.length} are named above).`]
      : []),
  ];
}

export const handler = taskHandler("complete-job", async (input: Finished) => {
  let result = input.result ?? null;
  let warnings: string[] = [];
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
      skipped: input.page?.skipped ?? 0,
    };
    warnings = skippedMessages(input.page);
  }
  if (input.operation === "publishHosted") {
    // What reading the file noted (rows skipped, names changed, values cut) is the job's warnings, as a request's
    // publish answers them as `notes`.
    const notes = (input.result as { notes?: unknown } | null)?.notes;
    if (Array.isArray(notes)) warnings = notes.filter((n): n is string => typeof n === "string");
  }
  // Only the run that finished the job raises its events (a repeated task finds it finished already).
  if (await finishJob(input.jobId, "completed", result, "", warnings)) {
    const job = { jobId: input.jobId, operation: input.operation, portalId: input.portalId, owner: input.owner };
    count(METRIC.jobs, { Operation: input.operation, Outcome: "completed" });
    await emit("jobCompleted", { ...job, result });
    for (const service of publishedServices(input)) {
      await emit("servicePublished", { portalId: input.portalId, owner: input.owner, jobId: input.jobId, ...service });
    }
  }
  return { jobId: input.jobId, status: "completed" };
});
