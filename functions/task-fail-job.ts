// Workflow task: every failure ends here. The job is marked failed with a message its owner can act on
// (a JobError's own words; anything else a generic message, the detail being in the logs), and a publish
// job gives its service name back (a hosted publish first drops the data it kept).
import { dropFailedPublish } from "#shared/hosted/publish-job-data.ts";
import type { JobInput } from "#shared/jobs.ts";
import { reservationOf } from "#shared/publishing.ts";
import { emit } from "#shared/stores/events.ts";
import { count, METRIC } from "#shared/metrics.ts";
import { finishJob } from "#shared/stores/jobs.ts";
import { releaseServiceName } from "#shared/stores/services.ts";
import { taskHandler } from "#shared/tasks.ts";

interface Failed extends JobInput {
  readonly error?: { readonly Error?: string; readonly Cause?: string };
}

/** On AWS a task's Cause is JSON ({errorType, errorMessage, …}); the local interpreter passes the message. */
function messageOf(error: Failed["error"]): string {
  const generic = "The job failed because of an internal error. Try again; if it keeps failing, tell an administrator.";
  if (error?.Error !== "JobError") return generic;
  const cause = error.Cause ?? "";
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown };
    if (typeof parsed.errorMessage === "string") return parsed.errorMessage;
  } catch {
    // not JSON: the plain message
  }
  return cause || generic;
}

export const handler = taskHandler("fail-job", async (input: Failed) => {
  // A hosted publish's kept data first: once the name is free, another publish may take it.
  if (input.operation === "publishHosted") await dropFailedPublish(input);
  const reserved = reservationOf(input);
  if (reserved) await releaseServiceName(reserved.serverId, reserved.folder, reserved.name, input.jobId);
  const message = messageOf(input.error);
  if (await finishJob(input.jobId, "failed", null, message)) {
    const job = { jobId: input.jobId, operation: input.operation, portalId: input.portalId, owner: input.owner };
    count(METRIC.jobs, { Operation: input.operation, Outcome: "failed" });
    await emit("jobFailed", { ...job, error: message });
  }
  return { jobId: input.jobId, status: "failed" };
});
