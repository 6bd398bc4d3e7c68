// Workflow task: publishes a hosted feature layer from an uploaded file (shared/hosted/publish-job.ts): reads the
// file, keeps its data and makes the service its job reserved the name of. Idempotent: a retry, or a run resumed
// after a crash, finds the service made, or makes it again from the file.
import { runHostedPublish } from "#shared/hosted/publish-job.ts";
import type { JobInput } from "#shared/jobs.ts";
import { taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("publish-hosted", (input: JobInput) => runHostedPublish(input));
