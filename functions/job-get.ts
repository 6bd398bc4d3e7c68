// GET|POST …/portals/<self | id>/jobs/<jobId>: a job's operation, parameters, status, messages and result.
// Administrators of the job's portal need no key; anyone else passes key=<key>. A wrong or missing key and a
// job that does not exist (or has expired) get the same answer.
import { jobView } from "#shared/jobs.ts";
import { forbidden, notFound } from "#shared/http/errors.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { getJob, keyMatches } from "#shared/stores/jobs.ts";

export const handler = restHandler({ name: "Job" }, async (req) => {
  const { user, portal } = requireUser(req);
  const requested = req.pathParameters.portalId;
  if (requested !== "self" && requested !== portal.portalId) throw forbidden();
  const jobId = req.pathParameters.jobId ?? "";
  const key = req.params.get("key") ?? "";
  const job = /^[0-9a-f]{32}$/.test(jobId) ? await getJob(jobId) : undefined;
  const admin = user.role === "org_admin" && job?.portalId === portal.portalId;
  const keyOk = job !== undefined && keyMatches(job, key);
  if (!job || job.portalId !== portal.portalId || (!admin && !keyOk)) throw notFound();
  return jobView(job);
});
