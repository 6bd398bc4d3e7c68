// The local engine: one process running dynalite, the gateway and (later) the workflow runner over a
// data folder, serving the same handler modules the CDK deploys.
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bootstrapDemo, type DemoResult } from "#infra/admin/demo.ts";
import { backfillItems } from "#infra/admin/operations.ts";
import { REDELIVERY, TABLES, tableEnvName } from "#shared/system.ts";
import { grants } from "#shared/config.ts";
import { setMetricsSink } from "#shared/metrics.ts";
import { callerWorkflows } from "./caller-workflows.ts";
import { eventFiles, LOCAL_BUS, startEvents } from "./events.ts";
import { startLambda } from "./lambda.ts";
import {
  DATASTORE_SECRETS_FOLDER,
  HOSTED_DATA_FOLDER,
  HOSTED_DATABASE_SECRET_FILE,
  ITEM_FILES_FOLDER,
  openDataFolder,
} from "./data-folder.ts";
import { parseConnectionString } from "#shared/stores/connection-string.ts";
import { createTables, localTableName, startDynamo } from "./dynamo.ts";
import { Gateway } from "./gateway.ts";
import { LOCAL_STATE_MACHINE_ARN, startWorkflows } from "./workflows.ts";
import { processingJobs } from "#shared/stores/jobs.ts";
import { releaseDefinitionLocks } from "#shared/stores/items.ts";
import { logger } from "#shared/log.ts";
import { getDefaultPortalId } from "#shared/stores/portals.ts";
import { startS3 } from "./s3.ts";
import { VIEWER_ASSETS, VIEWER_ASSETS_FOLDER } from "#shared/viewer/assets.ts";

/** The map viewer's files, from this checkout into the folder its function reads them from (as on AWS). */
async function copyViewerAssets(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, { source }] of Object.entries(VIEWER_ASSETS)) await copyFile(join(ROOT, source), join(dir, name));
}

/** The local bucket the demo's cloud data store reads (a copy of the demo folder store's caches). */
const DEMO_BUCKET = "mapgate-demo";

/** Copies the demo store into the local S3 server, so the demo has a cloud store to publish from too. */
async function uploadDemoStore(files: AsyncIterable<{ key: string; body: Buffer }>, bucket: string): Promise<void> {
  const { S3Client, CreateBucketCommand, PutObjectCommand } = await import("@aws-sdk/client-s3");
  const client = new S3Client({ forcePathStyle: true });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket })).catch((err: Error) => {
      if (err.name !== "BucketAlreadyOwnedByYou" && err.name !== "BucketAlreadyExists") throw err;
    });
    for await (const file of files) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: `demo-store/${file.key}`, Body: file.body }));
    }
  } finally {
    client.destroy();
  }
}

export interface EngineOptions {
  readonly dataDir: string;
  readonly httpsPort: number;
  readonly httpPort: number;
  /** The public host name clients use (and the certificate names). */
  readonly host: string;
  readonly allSSL?: boolean;
  readonly passwords: { readonly admin?: string; readonly publisher?: string; readonly user?: string };
  /**
   * `MAPGATE_HOSTED_DATABASE`: a PostgreSQL + PostGIS database to keep hosted layers in (a libpq URI with its
   * password), instead of a GeoPackage per service in the data folder.
   */
  readonly hostedDatabase?: string;
  /** Where metric lines go (whole lines, several at a time): the log's destination; standard output if unset. */
  readonly metrics?: (text: string) => void;
}

export interface Engine {
  readonly httpsUrl: string;
  readonly httpUrl: string;
  readonly certFile: string;
  readonly dynamoEndpoint: string;
  /** The local AWS endpoints other services' SDK clients call: Lambda Invoke, EventBridge, Step Functions. */
  readonly endpoints: { readonly lambda: string; readonly events: string; readonly sfn: string };
  /** Set on the start that created the demo organization. */
  readonly demo: DemoResult | undefined;
  /** Workflow executions and state transitions so far. */
  workflowStats(): { executions: number; transitions: number };
  stop(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The local services handlers call besides DynamoDB (each absent where a test runs without it). */
export interface LocalEndpoints {
  readonly sfn?: string;
  readonly s3?: string;
  readonly events?: string;
  readonly lambda?: string;
}

/** The environment the CDK stack gives each function, here for the local endpoints and files. */
export function localEnvironment(
  dynamoEndpoint: string,
  tokenKeyFile: string,
  httpsOrigin: string,
  { sfn: sfnEndpoint, s3: s3Endpoint, events: eventsEndpoint, lambda: lambdaEndpoint }: LocalEndpoints = {},
): Record<string, string> {
  const env: Record<string, string> = {
    ...(eventsEndpoint ? { AWS_ENDPOINT_URL_EVENTBRIDGE: eventsEndpoint, EVENT_BUS_NAME: LOCAL_BUS } : {}),
    ...(lambdaEndpoint ? { AWS_ENDPOINT_URL_LAMBDA: lambdaEndpoint } : {}),
    ...(s3Endpoint
      ? {
          AWS_ENDPOINT_URL_S3: s3Endpoint,
          // The SDK reads no variable for path-style addressing; shared/storage/s3.ts reads this one.
          S3_FORCE_PATH_STYLE: "true",
          // The local S3 server cannot take aws-chunked uploads (streamed bodies with checksum trailers).
          AWS_REQUEST_CHECKSUM_CALCULATION: "WHEN_REQUIRED",
        }
      : {}),
    ...(sfnEndpoint ? { AWS_ENDPOINT_URL_SFN: sfnEndpoint, STATE_MACHINE_ARN: LOCAL_STATE_MACHINE_ARN } : {}),
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    TOKEN_KEY_FILE: tokenKeyFile,
    // Beside the token key, in the data folder: database stores' passwords, one file each, owner-only.
    DATASTORE_SECRETS_DIR: join(dirname(tokenKeyFile), DATASTORE_SECRETS_FOLDER),
    // Files users upload as items, kept in the data folder (the stack keeps them in its bucket).
    ITEM_FILES_DIR: join(dirname(tokenKeyFile), ITEM_FILES_FOLDER),
    HOSTED_DATA_DIR: join(dirname(tokenKeyFile), HOSTED_DATA_FOLDER),
    PUBLIC_HTTPS_ORIGIN: httpsOrigin,
    // Where the stack puts them beside the function's bundle: the map viewer's files (copied at each start).
    VIEWER_ASSETS_DIR: join(dirname(tokenKeyFile), VIEWER_ASSETS_FOLDER),
  };
  for (const t of TABLES) env[tableEnvName(t.name)] = localTableName(t.name);
  return env;
}

/**
 * The functions' settings for a hosting database the operator names: its URI without the password, and the password
 * in a file of the data folder readable by the engine's user alone (as Secrets Manager keeps it on AWS, the JSON RDS
 * writes), so neither the environment nor a log ever holds it.
 */
export async function hostedDatabaseEnvironment(
  root: string,
  uri: string | undefined,
): Promise<Record<string, string>> {
  const file = join(root, HOSTED_DATABASE_SECRET_FILE);
  if (!uri) {
    // A password given to an earlier start is not kept once the setting is gone.
    await rm(file, { force: true });
    return {};
  }
  let parsed: ReturnType<typeof parseConnectionString>;
  try {
    parsed = parseConnectionString(uri);
  } catch (err) {
    // The parser names the part that is wrong and never repeats the value (it holds a password).
    throw new Error(`MAPGATE_HOSTED_DATABASE: ${(err as Error).message}`);
  }
  await writeFile(file, JSON.stringify({ password: parsed.password }), { mode: 0o600 });
  const c = parsed.connection;
  const host = c.host.includes(":") ? `[${c.host}]` : c.host;
  return {
    HOSTED_DATABASE: `postgresql://${encodeURIComponent(c.user)}@${host}:${c.port}/${encodeURIComponent(c.database)}?sslmode=${c.sslmode}`,
    HOSTED_DATABASE_SECRET_FILE: file,
  };
}

/**
 * A production server's timeouts, so idle or byte-dribbling connections cannot pile up: headers within 10 s
 * (`MAPGATE_HEADERS_TIMEOUT_SECONDS`), the whole request within 30 s, 5 s of keep-alive between requests, checked
 * every second (Node's default checks every 30 s).
 */
export const LISTENER_LIMITS = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000,
} as const;

/** The headers timeout in milliseconds: MAPGATE_HEADERS_TIMEOUT_SECONDS, whole seconds up to the request timeout. */
export function headersTimeout(setting: string | undefined): number {
  if (setting === undefined || setting === "") return LISTENER_LIMITS.headersTimeout;
  const seconds = Number(setting);
  const most = LISTENER_LIMITS.requestTimeout / 1000;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > most)
    throw new Error(`MAPGATE_HEADERS_TIMEOUT_SECONDS must be a whole number of seconds from 1 to ${most}`);
  return seconds * 1000;
}

/**
 * Node counts the headers timeout from a request's first byte: a connection that never sends one is closed
 * after the same silence. Once a request arrives the silence limit is lifted (a handler may take up to the 29 s
 * integration timeout); between requests the keep-alive timeout applies. The limit goes on the socket requests
 * are read from: on the HTTPS listener that is the TLS socket, which exists once the handshake is done (the
 * handshake has the same limit, as `handshakeTimeout`). Set on the TCP socket under it, it was never lifted, and
 * closed every HTTPS request still waiting for its answer when the limit passed.
 */
function limited(server: Server, limitMs: number, tls: boolean): Server {
  server.on(tls ? "secureConnection" : "connection", (socket: Socket) => {
    socket.setTimeout(limitMs, () => socket.destroy());
  });
  // Lifted once per connection: re-arming it on every request of a kept-alive connection cost a timer each.
  server.on("request", (req: import("node:http").IncomingMessage) => {
    if (req.socket.timeout) req.socket.setTimeout(0);
  });
  return server;
}

/**
 * Requests whose work can hold a thread for seconds: a feature layer's `query` (the service route), whose SQLite
 * and JTS work runs synchronously. They run in worker threads (function-pool.ts), so the engine's own thread,
 * which serves every other request and /health, stays free, and their time limit holds. The same route's tiles
 * and JSON stay in this thread: a hop between threads would cost a tile more than its read.
 */
export const WORKER_ROUTES: ReadonlyMap<string, (path: string) => boolean> = new Map([
  ["service", (path: string) => /\/FeatureServer\/[^/]+\/query\/?$/.test(path)],
]);

/**
 * Instances a pooled function may have at once: enough that a slow query leaves others running beside it, few
 * enough that their memory (~45 MB each once loaded) stays small; more than the cores would only share them.
 */
export const workerCount = () => Math.min(4, Math.max(2, availableParallelism()));

async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

/**
 * Lines gathered and written together: at most every `intervalMs`, or at once past `maxChars` pending. `close()`
 * (the engine's stop) writes what is pending and every later line at once, so none is left behind whatever else
 * is still stopping. One write per turn of the event loop was still about one per request under load.
 */
export function batchedLines(
  write: (text: string) => void,
  { intervalMs = 100, maxChars = 64 * 1024 } = {},
): { write(line: string): void; close(): void } {
  let pending: string[] = [];
  let closed = false;
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = `${pending.join("\n")}\n`;
    pending = [];
    chars = 0;
    write(text);
  };
  return {
    write: (line) => {
      pending.push(line);
      chars += line.length;
      if (closed || chars >= maxChars) flush();
      else if (!timer) {
        timer = setTimeout(flush, intervalMs);
        // Pending lines never keep the process alive: the engine's stop flushes them.
        timer.unref();
      }
    },
    close: () => {
      closed = true;
      flush();
    },
  };
}

export async function startEngine(options: EngineOptions): Promise<Engine> {
  // Before the data folder is ours: any definition lock older than this is a stopped engine's (released below).
  const startedAt = Date.now();
  const folder = await openDataFolder(options.dataDir, options.host);
  const cleanups: (() => Promise<void>)[] = [() => folder.release()];
  const undo = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    // Rolls back a transaction the last run left half-applied before anything reads the store.
    const dynamo = await startDynamo(folder.dynamoPath, folder.transactionJournal);
    cleanups.push(() => dynamo.close());
    await createTables(dynamo.endpoint);

    const tls = { key: await readFile(folder.keyFile), cert: await readFile(folder.certFile) };
    // Loopback only, on both address families: Node resolves `localhost` to ::1 first.
    const servers: Server[] = [];
    const headersMs = headersTimeout(process.env.MAPGATE_HEADERS_TIMEOUT_SECONDS);
    const limits = { ...LISTENER_LIMITS, headersTimeout: headersMs };
    const bind = async (make: () => Server, port: number, tls: boolean): Promise<number> => {
      const v4 = limited(make(), headersMs, tls);
      servers.push(v4);
      const actual = await listen(v4, port, "127.0.0.1");
      const v6 = limited(make(), headersMs, tls);
      await listen(v6, actual, "::1").then(
        () => servers.push(v6),
        () => undefined, // no IPv6 loopback here: IPv4 is enough
      );
      return actual;
    };
    // Requests that arrive before the handlers are loaded get a 503, as a gateway with no backend would.
    const loading: { gateway?: Gateway } = {};
    const pending = (_req: unknown, res: import("node:http").ServerResponse) => {
      res.writeHead(503, { "content-type": "application/json", "retry-after": "1" });
      res.end('{"message":"Service Unavailable"}');
    };
    const route =
      (proto: "https" | "http", domain: () => string) =>
      (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) =>
        loading.gateway ? loading.gateway.serve(req, res, domain(), proto) : pending(req, res);
    let httpsPort = 0;
    let httpPort = 0;
    httpsPort = await bind(
      () =>
        createHttpsServer(
          { ...tls, ...limits, handshakeTimeout: headersMs },
          route("https", () => `${options.host}:${httpsPort}`),
        ),
      options.httpsPort,
      true,
    );
    httpPort = await bind(
      () =>
        createHttpServer(
          limits,
          route("http", () => `${options.host}:${httpPort}`),
        ),
      options.httpPort,
      false,
    );
    cleanups.push(async () => {
      await Promise.all(servers.map(close));
    });

    // The S3-compatible server cloud stores are read from here, as from S3 on AWS.
    const s3 = await startS3(join(options.dataDir, "s3"));
    cleanups.push(() => s3.close());

    const httpsOrigin = `https://${options.host}:${httpsPort}`;
    const workflows = await startWorkflows(ROOT);
    cleanups.push(() => workflows.close());
    // Other AWS services' way in: Invoke of the operations function, callers' own state machines with task
    // tokens (on the Step Functions endpoint), and the event bus with its rules and log.
    const lambda = await startLambda();
    cleanups.push(() => lambda.close());
    const callers = callerWorkflows(lambda.invoke);
    workflows.attach(callers);
    const events = await startEvents(eventFiles(options.dataDir), async (arn, input) => {
      if (arn.includes(":stateMachine:")) await callers.handle("StartExecution", { stateMachineArn: arn, input });
      // As EventBridge's own principal, which a caller's alias does not allow (nor does the alias on AWS).
      else if (arn.includes(":function:")) await lambda.invoke(arn, input, "events.amazonaws.com");
    });
    cleanups.push(() => events.close());
    const endpoints = { sfn: workflows.endpoint, s3: s3.endpoint, events: events.endpoint, lambda: lambda.endpoint };
    // Metric lines, one per request, reach the log together, at most a tenth of a second late: a Lambda writes its
    // own line to its own log stream, where this one process would make a system call per request (a tenth of
    // a warm read's time under load; one write per turn of the event loop was still a few percent). Same lines,
    // same order.
    const metricLines = batchedLines(options.metrics ?? ((text) => process.stdout.write(text)));
    setMetricsSink(metricLines.write);
    cleanups.push(async () => metricLines.close());
    // Set before any handler or task module loads: they read their configuration once, at cold start.
    const environment = {
      ...localEnvironment(dynamo.endpoint, folder.tokenKeyFile, httpsOrigin, endpoints),
      ...(await hostedDatabaseEnvironment(dirname(folder.tokenKeyFile), options.hostedDatabase)),
    };
    Object.assign(process.env, environment);
    await copyViewerAssets(environment.VIEWER_ASSETS_DIR as string);
    await workflows.load();
    await lambda.load(ROOT);
    // What EventBridge Scheduler does every minute on AWS: send again the events the bus did not take.
    const redeliver = (await import(`../../functions/${REDELIVERY.id}.ts`)) as { handler: () => Promise<unknown> };
    const outboxTables = new Set(Object.keys(REDELIVERY.tables));
    // The sweep of what no record names (shared/hosted/sweep.ts) runs at start, then hourly from the timer below.
    const { sweepWhenDue } = await import("#shared/hosted/sweep.ts");
    const startSweep = grants
      .run(outboxTables, () => sweepWhenDue({ force: true }))
      .catch((err: unknown) => console.error(`sweep failed: ${err instanceof Error ? err.message : String(err)}`));
    cleanups.push(async () => {
      await startSweep;
    });
    const redeliveryMs = Number(process.env.MAPGATE_REDELIVERY_SECONDS || 60) * 1000;
    const redeliveryTimer = setInterval(() => {
      void grants.run(outboxTables, () => redeliver.handler()).catch(() => undefined);
    }, redeliveryMs);
    redeliveryTimer.unref();
    cleanups.push(async () => clearInterval(redeliveryTimer));
    const storeFolder = join(options.dataDir, "demo-store");
    const demo = (await getDefaultPortalId())
      ? undefined
      : await (async () => {
          // The demo's writers (and their image and tile libraries) load only on a first start.
          const { ensureDemoCaches, filesOf } = await import("./demo/write.ts");
          await ensureDemoCaches(storeFolder);
          await uploadDemoStore(filesOf(storeFolder), DEMO_BUCKET);
          return bootstrapDemo({
            ...(options.allSSL !== undefined ? { allSSL: options.allSSL } : {}),
            passwords: options.passwords,
            storeFolder,
            origin: httpsOrigin,
            cloud: { bucket: DEMO_BUCKET, prefix: "demo-store" },
          });
        })();
    // A data folder from before portal items existed gets them now (a no-op once every item exists).
    if (!demo) await backfillItems();
    const loaded = await Gateway.load(join(ROOT, "functions"), {
      workers: { routes: WORKER_ROUTES, size: workerCount(), metrics: metricLines.write },
    });
    cleanups.push(() => loaded.close());
    loading.gateway = loaded;
    // Hosted services' definition locks die with the process that held them (this engine owns the data folder
    // alone): released before anything runs, so a change killed mid-way does not keep its service busy.
    const released = await releaseDefinitionLocks(startedAt);
    if (released > 0) logger.info("definition locks of a stopped engine released", { released });
    // Executions die with the process that ran them: run every unfinished job again (its tasks are
    // idempotent), so no job is left processing forever.
    for (const job of await processingJobs()) workflows.start(job.jobId, job.input);
    await writeFile(
      folder.stateFile,
      JSON.stringify({
        pid: process.pid,
        dynamoEndpoint: dynamo.endpoint,
        s3Endpoint: s3.endpoint,
        httpsOrigin,
        httpPort,
        httpsPort,
        ...endpoints,
      }),
      { mode: 0o600 },
    );
    let stopping: Promise<void> | undefined;
    return {
      httpsUrl: httpsOrigin,
      httpUrl: `http://${options.host}:${httpPort}`,
      certFile: folder.certFile,
      dynamoEndpoint: dynamo.endpoint,
      endpoints: { lambda: lambda.endpoint, events: events.endpoint, sfn: workflows.endpoint },
      demo,
      workflowStats: () => workflows.stats(),
      stop: () => {
        // Stop accepting, let requests in flight finish (they were acknowledged to no one yet), then
        // close dynalite so LevelDB is closed cleanly, then give up the folder.
        stopping ??= (async () => {
          const closing = Promise.all(servers.map(close));
          // Longer than the 29 s a handler may run: nothing acknowledged is cut off by closing the store.
          // Running jobs get the same grace; one still running after it is resumed at the next start.
          await Promise.race([
            Promise.all([loaded.drained(), workflows.drained(), callers.drained()]),
            new Promise((r) => setTimeout(r, 35_000)),
          ]);
          for (const s of servers) s.closeAllConnections();
          await closing;
          await undo();
        })();
        return stopping;
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}
