// Workflow task: a job started with a caller's task token answers it once the job has ended: SendTaskSuccess
// with the job as `jobs/<id>` shows it, or SendTaskFailure (mapgate.JobFailed) with its message. A waiting task
// that is gone (timed out, stopped) is nobody to answer; throttling is retried by the workflow.
import { jobView } from "#shared/jobs.ts";
import { sendTaskFailure, sendTaskSuccess, TASK_ERRORS } from "#shared/invocation/task-tokens.ts";
import type { JobInput } from "#shared/jobs.ts";
import { getJob } from "#shared/stores/jobs.ts";
import { taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("notify-caller", async (input: JobInput) => {
  // The token is kept on the job's record, out of the execution's input (which the workflow's logs hold).
  const job = await getJob(input.jobId);
  if (!job?.taskToken) return { notified: false };
  if (job.status === "completed") await sendTaskSuccess(job.taskToken, jobView(job));
  else {
    // Still processing here means FailJob could not record the failure: the caller is told all the same.
    await sendTaskFailure(job.taskToken, TASK_ERRORS.jobFailed, {
      jobId: job.jobId,
      operation: job.operation,
      message: job.message || "The job failed.",
    });
  }
  return { notified: true };
});
