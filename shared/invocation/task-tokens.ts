// Answers a caller's waiting workflow (the `.waitForTaskToken` callback pattern): success with the job as
// `jobs/<id>` answers it, failure with an error name a Catch can match and the reason as JSON.
import { SendTaskFailureCommand, SendTaskSuccessCommand, SFNClient } from "@aws-sdk/client-sfn";
import { logger } from "#shared/log.ts";

const sfn = new SFNClient({ maxAttempts: 4 });

/** The error names a caller's Catch can match. */
export const TASK_ERRORS = { refused: "mapgate.OperationRefused", jobFailed: "mapgate.JobFailed" } as const;

/** The waiting task is gone (timed out, its execution stopped, or the token was never valid): nobody to answer. */
const GONE = new Set(["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"]);

async function answer(send: () => Promise<unknown>, what: string): Promise<void> {
  try {
    await send();
  } catch (err) {
    if (err instanceof Error && GONE.has(err.name)) {
      logger.warn("task token not answered", { what, reason: err.name });
      return;
    }
    throw err;
  }
}

/** Step Functions takes at most 256 KiB of task output and 32,768 characters of cause. */
const MAX_OUTPUT_BYTES = 250_000;
const MAX_CAUSE_CHARS = 32_768;

/** The job as `jobs/<id>` shows it; a result too large for a task's output is left out (the job keeps it). */
export function sendTaskSuccess(taskToken: string, job: { readonly result?: unknown }): Promise<void> {
  let output = JSON.stringify(job);
  if (Buffer.byteLength(output) > MAX_OUTPUT_BYTES) {
    output = JSON.stringify({ ...job, result: { omitted: "Too large for a task's output: read the job for it." } });
  }
  return answer(() => sfn.send(new SendTaskSuccessCommand({ taskToken, output })), "SendTaskSuccess");
}

/** `cause` is JSON whatever its size: a long `message` (or `details`) is shortened, never the JSON cut. */
export function sendTaskFailure(
  taskToken: string,
  error: string,
  cause: { readonly message?: string; readonly details?: readonly string[] } & Record<string, unknown>,
): Promise<void> {
  let text = JSON.stringify(cause);
  if (text.length > MAX_CAUSE_CHARS) {
    text = JSON.stringify({ ...cause, message: (cause.message ?? "").slice(0, 4096), details: [] });
  }
  return answer(() => sfn.send(new SendTaskFailureCommand({ taskToken, error, cause: text })), "SendTaskFailure");
}
