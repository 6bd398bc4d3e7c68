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

export function sendTaskSuccess(taskToken: string, output: unknown): Promise<void> {
  return answer(
    () => sfn.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) })),
    "SendTaskSuccess",
  );
}

export function sendTaskFailure(taskToken: string, error: string, cause: unknown): Promise<void> {
  // Step Functions takes at most 32,768 characters of cause.
  const text = JSON.stringify(cause).slice(0, 32_768);
  return answer(() => sfn.send(new SendTaskFailureCommand({ taskToken, error, cause: text })), "SendTaskFailure");
}
