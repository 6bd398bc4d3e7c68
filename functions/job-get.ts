// GET|POST …/portals/<self | id>/jobs/<jobId>: a job's operation, parameters, status, messages and result.
// Administrators of the job's portal need no key; anyone else passes key=<key>. A wrong or missing key and a
// job that does not exist (or has expired) get the same answer. A job past its deadline is ended here.
import { jobView } from "#shared/jobs.ts";
import { notFound } from "#shared/errors.ts";
import { jobPage } from "#shared/job-pages.ts";
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { JOB_DEADLINE_MS, reservationOf } from "#shared/publishing.ts";
import { finishJob, getJob, keyMatches } from "#shared/stores/jobs.ts";
import { releaseServiceName } from "#shared/stores/services.ts";

export const handler = restHandler({ name: "Job", html: jobPage }, async (req) => {
  const { user, portal } = requireMember(req);
  const jobId = req.pathParameters.jobId ?? "";
  const key = req.params.get("key") ?? "";
  const job = /^[0-9a-f]{32}$/.test(jobId) ? await getJob(jobId) : undefined;
  const admin = user.role === "org_admin" && job?.portalId === portal.portalId;
  const keyOk = job !== undefined && keyMatches(job, key);
  if (!job || job.portalId !== portal.portalId || (!admin && !keyOk)) throw notFound();
  if (job.status === "processing" && Date.now() - job.created > JOB_DEADLINE_MS) {
    // Its execution ended without reaching the workflow's own failure step (a timeout, an abort): end the
    // job here so no job stays processing, and give a publish job's name back.
    const message = "The job did not finish in time and was stopped. Try again.";
    await finishJob(job.jobId, "failed", null, message);
    const reserved = reservationOf(job);
    if (reserved) await releaseServiceName(reserved.serverId, reserved.folder, reserved.name, job.jobId);
    const ended = await getJob(job.jobId);
    if (ended) return jobView(ended);
  }
  return jobView(job);
});
