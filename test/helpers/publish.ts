// Publishing through the REST operation and its job, as a client does: start, then poll the job to its end.
import type { RunningEngine } from "./engine.ts";
import { call, form } from "./http.ts";

export interface PublishRequest {
  readonly token: string;
  readonly serverId: string;
  readonly type: string;
  readonly serviceName: string;
  readonly store: string;
  readonly path: string;
  readonly folder?: string;
}

export interface Published {
  readonly serviceUrl: string;
  readonly serviceItemId: string;
}

const rest = (engine: RunningEngine) => `${engine.ready.https}/portal/sharing/rest`;

/** The publish operation's own answer: the job it started, or the error. */
export const startPublish = (engine: RunningEngine, p: PublishRequest) =>
  call(`${rest(engine)}/portals/self/datastores/publish`, {
    ca: engine.ca,
    body: form({
      f: "json",
      token: p.token,
      serverId: p.serverId,
      serverFolder: p.folder ?? "",
      serviceConfiguration: JSON.stringify({
        type: p.type,
        serviceName: p.serviceName,
        properties: { cacheStoreId: p.store, pathInCachedStore: p.path },
      }),
    }),
  }).then((r) => r.json<{ jobId: string; key: string; error?: { code: number; details: string[] } }>());

/**
 * Polls a job until it is completed or failed (for at most 30 s), and answers its last state: for tests that check
 * a failed job's messages as well as a completed one's result.
 */
export async function jobEnd(
  engine: RunningEngine,
  token: string,
  started: { jobId?: unknown; key?: unknown },
): Promise<Record<string, unknown>> {
  let answer: Record<string, unknown> = {};
  for (let i = 0; i < 600 && answer.status !== "completed" && answer.status !== "failed"; i++) {
    await new Promise((r) => setTimeout(r, 50));
    answer = await call(
      `${rest(engine)}/portals/self/jobs/${String(started.jobId)}?f=json&token=${token}&key=${encodeURIComponent(String(started.key))}`,
      { ca: engine.ca },
    ).then((r) => r.json());
  }
  return answer;
}

/** Polls a job until it ends; answers the finished job (or throws with its messages). */
export async function waitForJob<T>(engine: RunningEngine, token: string, jobId: string, key: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const job = await call(
      `${rest(engine)}/portals/self/jobs/${jobId}?f=json&key=${encodeURIComponent(key)}&token=${token}`,
      { ca: engine.ca },
    ).then((r) => r.json<{ status: string; messages: unknown; result: T }>());
    if (job.status === "completed") return job.result;
    if (job.status !== "processing") throw new Error(`job failed: ${JSON.stringify(job.messages)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("job still processing");
}

/** Publishes a cache as a service and answers its serviceUrl and item id. */
export async function publish(engine: RunningEngine, p: PublishRequest): Promise<Published> {
  const started = await startPublish(engine, p);
  if (started.error) throw new Error(JSON.stringify(started.error));
  const result = await waitForJob<{ services: Published[] }>(engine, p.token, started.jobId, started.key);
  const service = result.services[0];
  if (!service) throw new Error("no service in the job's result");
  return service;
}

/** Shares an item (`everyone`, `org` flags) through the REST operation, as its owner or an administrator. */
export const share = (engine: RunningEngine, token: string, itemId: string, flags: Record<string, string>) =>
  call(`${rest(engine)}/content/items/${itemId}/share`, {
    ca: engine.ca,
    body: form({ f: "json", token, ...flags }),
  }).then((r) => r.json<Record<string, unknown>>());

/** The demo's tile cache (the Basemap of its folder store) published as the map service `serviceName`. */
export const publishDemoBasemap = (
  engine: RunningEngine,
  org: { serverId: string; folderStore: string },
  token: string,
  serviceName: string,
  folder = "",
) =>
  publish(engine, {
    token,
    serverId: org.serverId,
    type: "MapServer",
    serviceName,
    store: org.folderStore,
    path: "/caches/tiles/Basemap",
    folder,
  });
