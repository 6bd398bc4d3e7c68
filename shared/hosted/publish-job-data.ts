// What a publish job's service is called and where its data goes when the job fails: apart from the job's task
// (shared/hosted/publish-job.ts), so the workflow's failure step drops the data without the file readers.
import { logger } from "#shared/log.ts";
import { HOSTED_FOLDER, stableItemId } from "#shared/publishing.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import type { JobInput } from "#shared/jobs.ts";
import { getService } from "#shared/stores/services.ts";

/** The service item a publish job makes: known when the job starts (the answer names it), the same on a retry. */
export const jobServiceItemId = (jobId: string) => stableItemId("hosted-service", jobId);

/** A failed publish job's data, if any was kept before it failed: dropped (the name is given back by the caller). */
export async function dropFailedPublish(input: JobInput): Promise<void> {
  const serviceItemId = jobServiceItemId(input.jobId);
  const { serverId, serviceName } = input.params;
  if (serverId && serviceName && (await getService(serverId, HOSTED_FOLDER, serviceName))?.itemId === serviceItemId)
    return;
  await (
    await hostedStore()
  )
    .drop(serviceItemId)
    .catch((e: unknown) => logger.warn("hosted data not removed", { itemId: serviceItemId, error: String(e) }));
}
