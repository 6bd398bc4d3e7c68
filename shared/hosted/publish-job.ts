// Publishing a large file as a job, as ArcGIS does every publish: the request checks what it can without reading
// the file (who asks, the item, the name, which it reserves), starts a `publishHosted` job and answers at once with
// the service item id and the job id; the workflow's task (functions/task-publish-hosted.ts) reads the file, keeps
// the data and makes the service, in up to 15 minutes of a Lambda function's time rather than API Gateway's 29 s.
// Clients poll `…/items/<serviceItemId>/status?jobId=…` as ArcGIS clients do. A small file is published within its
// request (shared/hosted/publish.ts publishHosted): the same reading and keeping, answered `completed` at once.
import { ApiError } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import { type JobInput, startJob } from "#shared/jobs.ts";
import { HOSTED_FOLDER, reserveName, restServiceUrl } from "#shared/publishing.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import { jobServiceItemId } from "#shared/hosted/publish-job-data.ts";
import {
  fileTypeOf,
  makeHostedService,
  parametersOf,
  publishAnswer,
  publishTarget,
  type PublishRequest,
} from "#shared/hosted/publish.ts";
import { type Job, getJob } from "#shared/stores/jobs.ts";
import { getItem } from "#shared/stores/items.ts";
import { getService, releaseServiceName, ServiceExistsError } from "#shared/stores/services.ts";
import { listPortalServers, serverUrl } from "#shared/stores/servers.ts";
import { JobError } from "#shared/tasks.ts";

/** Starts the job that publishes `p`'s file; answers as ArcGIS's publish does while its job runs. */
export async function startHostedPublish(
  req: RestRequest,
  p: PublishRequest,
  what: string,
): Promise<Record<string, unknown>> {
  const { name, server } = await publishTarget(p, what);
  const jobId = newItemId();
  try {
    // Held from now until the job makes the service or fails: a second publish of the name is refused meanwhile.
    await reserveName(server.serverId, HOSTED_FOLDER, name, jobId);
  } catch (err) {
    if (err instanceof ServiceExistsError) throw new ApiError(400, what, [`Service name '${name}' already exists.`]);
    throw err;
  }
  try {
    await startJob(
      req,
      p.owner,
      "publishHosted",
      {
        itemId: p.source.itemId,
        filetype: p.filetype,
        publishParameters: JSON.stringify(p.parameters),
        serverId: server.serverId,
        serverFolder: HOSTED_FOLDER,
        serviceName: name,
      },
      jobId,
    );
  } catch (err) {
    await releaseServiceName(server.serverId, HOSTED_FOLDER, name, jobId);
    throw err;
  }
  return publishAnswer(
    server,
    p.origin,
    name,
    { serviceItemId: jobServiceItemId(jobId), size: p.source.file.size },
    jobId,
  );
}

/** The job's task: reads the file, keeps the data and makes the service (idempotent: a retry finds it made). */
export async function runHostedPublish(input: JobInput): Promise<Record<string, unknown>> {
  const what = "The layer was not published.";
  const { itemId, filetype, publishParameters, serverId, serviceName } = input.params;
  if (!itemId || !filetype || !serverId || !serviceName)
    throw new JobError("The publish job's parameters are incomplete.");
  const serviceItemId = jobServiceItemId(input.jobId);
  const server = (await listPortalServers(input.portalId)).find((s) => s.serverId === serverId);
  if (!server) throw new JobError("The hosting server was removed: the layer was not published.");
  const result = {
    services: [
      {
        serviceItemId,
        type: "Feature Service",
        serviceUrl: restServiceUrl(serverUrl(server, input.origin), HOSTED_FOLDER, serviceName, "FeatureServer"),
      },
    ],
  };
  // A run after a crash (or a retry) whose service was made: done, and its data is not touched again.
  if ((await getService(serverId, HOSTED_FOLDER, serviceName))?.itemId === serviceItemId) return result;
  const source = await getItem(itemId);
  if (!source?.file || source.portalId !== input.portalId)
    throw new JobError("The file item was deleted before it was published: the layer was not published.");
  // Data an interrupted run kept for this job, which no service names (checked above): made again from the file.
  await (await hostedStore()).drop(serviceItemId);
  try {
    const made = await makeHostedService(
      {
        source: { ...source, file: source.file },
        filetype: fileTypeOf(filetype, what, source),
        parameters: parametersOf(publishParameters, "publishParameters", what),
        owner: input.owner,
        origin: input.origin,
      },
      { name: serviceName, server, serviceItemId, reservedBy: input.jobId },
      what,
    );
    return { ...result, ...(made.notes.length > 0 ? { notes: made.notes } : {}) };
  } catch (err) {
    // What a request would have answered 400 is what the job's owner reads.
    if (err instanceof ApiError && err.code < 500) throw new JobError([err.message, ...err.details].join(" "));
    throw err;
  }
}

/**
 * The status of a service item a publish job makes, asked with the job's id (`…/items/<id>/status?jobId=…`), as
 * ArcGIS answers it: `processing` while the job runs (the item does not exist yet), `failed` with the job's
 * message, `completed`. Undefined when the id names no such job of the caller's (the item's own status answers).
 */
export async function publishJobStatus(
  itemId: string,
  jobId: string | undefined,
  caller: { readonly username: string; readonly portalId: string; readonly admin: boolean },
): Promise<Record<string, unknown> | undefined> {
  if (!jobId || !/^[0-9a-f]{32}$/.test(jobId) || jobServiceItemId(jobId) !== itemId) return undefined;
  const job: Job | undefined = await getJob(jobId);
  if (!job || job.operation !== "publishHosted" || job.portalId !== caller.portalId) return undefined;
  if (job.owner !== caller.username && !caller.admin) return undefined;
  const status = job.status;
  return {
    status,
    statusMessage: status === "failed" ? job.message : status,
    itemId,
    jobId,
  };
}
