// The local engine: one process running dynalite, the gateway and (later) the workflow runner over a
// data folder, serving the same handler modules the CDK deploys.
import { readFile, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bootstrapDemo, type DemoResult } from "#infra/admin/demo.ts";
import { TABLES, tableEnvName } from "#infra/system.ts";
import { openDataFolder } from "./data-folder.ts";
import { createTables, localTableName, startDynamo } from "./dynamo.ts";
import { Gateway } from "./gateway.ts";
import { LOCAL_STATE_MACHINE_ARN, startWorkflows } from "./workflows.ts";
import { processingJobs } from "#shared/stores/jobs.ts";

export interface EngineOptions {
  readonly dataDir: string;
  readonly httpsPort: number;
  readonly httpPort: number;
  /** The public host name clients use (and the certificate names). */
  readonly host: string;
  readonly allSSL?: boolean;
  readonly passwords: { readonly admin?: string; readonly publisher?: string; readonly user?: string };
}

export interface Engine {
  readonly httpsUrl: string;
  readonly httpUrl: string;
  readonly certFile: string;
  readonly dynamoEndpoint: string;
  /** Set on the start that created the demo organization. */
  readonly demo: DemoResult | undefined;
  /** Workflow executions and state transitions so far. */
  workflowStats(): { executions: number; transitions: number };
  stop(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The environment the CDK stack gives each function, here for the local endpoints and files. */
export function localEnvironment(
  dynamoEndpoint: string,
  tokenKeyFile: string,
  httpsOrigin: string,
  sfnEndpoint?: string,
): Record<string, string> {
  const env: Record<string, string> = {
    ...(sfnEndpoint ? { AWS_ENDPOINT_URL_SFN: sfnEndpoint, STATE_MACHINE_ARN: LOCAL_STATE_MACHINE_ARN } : {}),
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    TOKEN_KEY_FILE: tokenKeyFile,
    PUBLIC_HTTPS_ORIGIN: httpsOrigin,
  };
  for (const t of TABLES) env[tableEnvName(t.name)] = localTableName(t.name);
  return env;
}

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

export async function startEngine(options: EngineOptions): Promise<Engine> {
  const folder = await openDataFolder(options.dataDir, options.host);
  const cleanups: (() => Promise<void>)[] = [() => folder.release()];
  const undo = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const dynamo = await startDynamo(folder.dynamoPath);
    cleanups.push(() => dynamo.close());
    await createTables(dynamo.endpoint);

    const tls = { key: await readFile(folder.keyFile), cert: await readFile(folder.certFile) };
    // Loopback only, on both address families: Node resolves `localhost` to ::1 first.
    const servers: Server[] = [];
    const bind = async (make: () => Server, port: number): Promise<number> => {
      const v4 = make();
      servers.push(v4);
      const actual = await listen(v4, port, "127.0.0.1");
      const v6 = make();
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
          tls,
          route("https", () => `${options.host}:${httpsPort}`),
        ),
      options.httpsPort,
    );
    httpPort = await bind(() => createHttpServer(route("http", () => `${options.host}:${httpPort}`)), options.httpPort);
    cleanups.push(async () => {
      await Promise.all(servers.map(close));
    });

    const httpsOrigin = `https://${options.host}:${httpsPort}`;
    const workflows = await startWorkflows(ROOT);
    cleanups.push(() => workflows.close());
    // Set before any handler or task module loads: they read their configuration once, at cold start.
    Object.assign(process.env, localEnvironment(dynamo.endpoint, folder.tokenKeyFile, httpsOrigin, workflows.endpoint));
    await workflows.load();
    const demo = await bootstrapDemo({
      ...(options.allSSL !== undefined ? { allSSL: options.allSSL } : {}),
      passwords: options.passwords,
    });
    const loaded = await Gateway.load(join(ROOT, "functions"));
    loading.gateway = loaded;
    // Executions die with the process that ran them: run every unfinished job again (its tasks are
    // idempotent), so no job is left processing forever.
    for (const job of await processingJobs()) workflows.start(job.jobId, job.input);
    await writeFile(
      folder.stateFile,
      JSON.stringify({ pid: process.pid, dynamoEndpoint: dynamo.endpoint, httpsOrigin, httpPort, httpsPort }),
      { mode: 0o600 },
    );
    let stopping: Promise<void> | undefined;
    return {
      httpsUrl: httpsOrigin,
      httpUrl: `http://${options.host}:${httpPort}`,
      certFile: folder.certFile,
      dynamoEndpoint: dynamo.endpoint,
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
            Promise.all([loaded.drained(), workflows.drained()]),
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
