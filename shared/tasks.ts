// Workflow task handlers: one small wrapper, so each task reads config at cold start, logs one line and
// reports failures the way the workflow's Retry/Catch expect (by error name).
import { config } from "#shared/config.ts";
import { inRequest, logger } from "#shared/log.ts";

/** A failure retrying cannot fix; its message is what the job's owner reads. */
export class JobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobError";
  }
}

export function taskHandler<I, O>(name: string, fn: (input: I) => Promise<O>) {
  config();
  // Lambda passes its context (the request id every log line of the run carries); the local interpreter none.
  return (input: I, context?: { readonly awsRequestId?: string }): Promise<O> =>
    inRequest(context?.awsRequestId, () => run(input));
  async function run(input: I): Promise<O> {
    const started = performance.now();
    const jobId = (input as { jobId?: unknown } | null)?.jobId;
    try {
      const out = await fn(input);
      logger.info("task", { task: name, jobId, ms: Math.round(performance.now() - started) });
      return out;
    } catch (err) {
      if (err instanceof JobError) logger.info("task failed", { task: name, jobId, reason: err.message });
      else
        logger.error("task error", { task: name, jobId, error: err instanceof Error ? err : new Error(String(err)) });
      throw err;
    }
  }
}
