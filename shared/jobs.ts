// Starting jobs and showing them. A job is written first (processing), then its execution is started,
// named by the job id: a repeated start of the same job is the same execution, never a second run.
import { randomBytes } from "node:crypto";
import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { config } from "#shared/config.ts";
import { renderValue, resultPage } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { itemId } from "#shared/ids.ts";
import { formPageOf } from "#shared/urls.ts";
import { emit } from "#shared/stores/events.ts";
import { createJob, finishJob, type Job, type JobOperation, type JobStart, newJob } from "#shared/stores/jobs.ts";

const sfn = new SFNClient({ maxAttempts: 4 });

/** What every task of a job receives (and the job keeps, to run it again after a crash). */
export type JobInput = JobStart;

export async function startJob(
  req: RestRequest,
  owner: string,
  operation: JobOperation,
  params: Record<string, string>,
  jobId = itemId(),
): Promise<{ jobId: string; key: string }> {
  const arn = config().stateMachineArn;
  if (!arn) throw new Error("STATE_MACHINE_ARN is not set: this function was not allowed to start jobs");
  const key = randomBytes(24).toString("base64url");
  const taskToken = req.invocation?.taskToken;
  const start: JobStart = {
    jobId,
    portalId: req.portal.portalId,
    owner,
    operation,
    params,
    origin: req.httpsOrigin,
    ...(taskToken ? { callerWaits: true as const } : {}),
  };
  const job = newJob(start, key, Date.now(), taskToken);
  await createJob(job);
  try {
    await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name: jobId, input: job.input }));
  } catch (err) {
    // A retried call whose first attempt did start the execution: the job is running.
    if (!(err instanceof Error) || err.name !== "ExecutionAlreadyExists") {
      await finishJob(jobId, "failed", null, "The job could not be started. Try again.");
      throw err;
    }
  }
  await emit("jobSubmitted", {
    jobId,
    operation,
    portalId: start.portalId,
    owner,
    ...(req.invocation ? { caller: req.invocation.callerId } : {}),
  });
  return { jobId, key };
}

export function jobView(job: Job) {
  return {
    id: job.jobId,
    definition: { operation: job.operation, ...job.params },
    status: job.status,
    created: job.created,
    modified: job.modified,
    messages: [
      ...job.warnings.map((message) => ({ type: "warning", message })),
      ...(job.message ? [{ type: job.status === "failed" ? "error" : "info", message: job.message }] : []),
    ],
    ...(job.status === "failed" ? { statusMessage: job.message } : {}),
    ...(job.status === "completed" ? { result: job.result } : {}),
  };
}

/** A started job's page, which an HTML form that started it leads to (post/redirect/get). */
export function jobPageOf(data: object, req: RestRequest): string | undefined {
  const { jobId, key } = data as { jobId?: unknown; key?: unknown };
  if (typeof jobId !== "string" || typeof key !== "string") return undefined;
  const portal = req.pathParameters.portalId ?? "self";
  return `${PORTAL_ROOT}/portals/${encodeURIComponent(portal)}/jobs/${encodeURIComponent(jobId)}?${new URLSearchParams({ key, f: "html" })}`;
}

/** The HTML answer to an operation that started a job: what happened, in words, and a link that follows the job. */
export function jobStartedPage(title: string) {
  return (data: object, req: RestRequest): string => {
    const { jobId, key } = data as { jobId?: string; key?: string };
    const portal = req.pathParameters.portalId ?? "self";
    const href = `${PORTAL_ROOT}/portals/${encodeURIComponent(portal)}/jobs/${encodeURIComponent(jobId ?? "")}?key=${encodeURIComponent(key ?? "")}&f=html`;
    const said = jobId
      ? `The job started and runs in the background: follow it to see its result (reload its page as it runs).`
      : "The job was not started.";
    return resultPage(
      title,
      said,
      [
        ...(jobId ? [[href, "Follow the job"] as const] : []),
        [formPageOf(req.event) ?? `${req.path}?f=html`, "Back to the form"],
        [`${PORTAL_ROOT}?f=html`, "Directory"],
      ],
      renderValue(data),
    );
  };
}

/**
 * The pipeline options of an operation that starts a job: POST only, its HTML answer the started job's page, and a
 * form's POST sent on to the job's page.
 */
export const jobOperation = (name: string) =>
  ({ name, postOnly: true, html: jobStartedPage(name), seeOther: jobPageOf }) as const;
