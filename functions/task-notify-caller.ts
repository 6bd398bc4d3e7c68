// Workflow task: a job started with a caller's task token answers it once the job has ended: SendTaskSuccess
// with the job as `jobs/<id>` shows it, or SendTaskFailure (mapgate.JobFailed) with its message. A waiting task
// that is gone (timed out, stopped) is nobody to answer; throttling is retried by the workflow.
import { jobView } from "#shared/jobs.ts";
import { sendTaskFailure, sendTaskSuccess, TASK_ERRORS } from "#shared/invocation/task-tokens.ts";
import type { JobInput } from "#shared/jobs.ts";
import { getJob } from "#shared/stores/jobs.ts";
import { taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("notify-caller", async (input: JobInput) => {
  if (!input.taskToken) return { notified: false };
  const job = await getJob(input.jobId);
  if (!job || job.status === "processing") throw new Error(`job ${input.jobId} has not ended`);
  if (job.status === "completed") await sendTaskSuccess(input.taskToken, jobView(job));
  else {
    await sendTaskFailure(input.taskToken, TASK_ERRORS.jobFailed, {
      jobId: job.jobId,
      operation: job.operation,
      message: job.message,
    });
  }
  return { notified: true };
});
