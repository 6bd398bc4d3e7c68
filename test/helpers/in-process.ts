// For tests that run handlers in this process through the real middy chain: an in-memory dynalite with
// the declared tables, and the environment the engines give functions. Call before importing handlers.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { createTables, startDynamo } from "#infra/local/dynamo.ts";
import { localEnvironment } from "#infra/local/engine.ts";
import { eventFiles, startEvents } from "#infra/local/events.ts";
import type { observeStore } from "#shared/stores/dynamo.ts";

export async function inProcessStore() {
  const dynamo = await startDynamo(undefined);
  await createTables(dynamo.endpoint);
  const dir = mkdtempSync(join(tmpdir(), "mapgate-unit-"));
  const keyFile = join(dir, "token-key.json");
  writeFileSync(keyFile, JSON.stringify({ kid: "t1", k: "a".repeat(43) }), { mode: 0o600 });
  // Handlers that raise events reach a local bus whose log is this folder's events.jsonl.
  const events = await startEvents(eventFiles(dir), async () => undefined);
  Object.assign(
    process.env,
    localEnvironment(dynamo.endpoint, keyFile, "https://maps.example.test", { events: events.endpoint }),
  );
  process.env.MAPGATE_TEST_EVENT_LOG = eventFiles(dir).log;
  process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";
  // Metric lines are built as on Lambda and dropped here (a test that checks them collects them itself).
  const { setMetricsSink } = await import("#shared/metrics.ts");
  setMetricsSink(() => undefined);
  return dynamo;
}

/** The caller's address in every event apiEvent makes. */
export const EVENT_SOURCE_IP = "192.0.2.10";

/**
 * A portal token of `username` for an hour, bound (requestip) to EVENT_SOURCE_IP, as generateToken gives one to
 * the events' caller. Imported on first use, after inProcessStore has set the environment the module reads.
 */
export async function eventCallerToken(username: string, portalId: string): Promise<string> {
  const { issueToken } = await import("#shared/auth/tokens.ts");
  const { token } = await issueToken({
    username,
    portalId,
    audience: { kind: "portal" },
    client: "requestip",
    bound: EVENT_SOURCE_IP,
    expires: Date.now() + 3600_000,
  });
  return token;
}

export interface EventOptions {
  method?: "GET" | "POST" | "PUT";
  query?: string;
  body?: string;
  base64?: boolean;
  headers?: Record<string, string>;
  cookies?: string[];
  proto?: "https" | "http";
  pathParameters?: Record<string, string>;
  /**
   * The route template API Gateway matched (its routeKey is `ANY <template>`), for a function that serves several
   * routes and picks by it (shared/http/router.ts routesHandler); absent: the path itself.
   */
  route?: string;
}

/** A payload-2.0 event shaped as API Gateway sends it. */
export function apiEvent(path: string, o: EventOptions = {}): APIGatewayProxyEventV2 {
  const method = o.method ?? (o.body === undefined ? "GET" : "POST");
  const routeKey = o.route === undefined ? `${method} ${path}` : `ANY ${o.route}`;
  return {
    version: "2.0",
    routeKey,
    rawPath: path,
    rawQueryString: o.query ?? "",
    ...(o.cookies ? { cookies: o.cookies } : {}),
    ...(o.pathParameters ? { pathParameters: o.pathParameters } : {}),
    headers: {
      "x-forwarded-proto": o.proto ?? "https",
      ...(o.body !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      ...o.headers,
    },
    requestContext: {
      accountId: "123456789012",
      apiId: "api",
      domainName: "maps.example.test",
      domainPrefix: "maps",
      http: { method, path, protocol: "HTTP/1.1", sourceIp: EVENT_SOURCE_IP, userAgent: "test" },
      requestId: "req-1",
      routeKey,
      stage: "$default",
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    ...(o.body !== undefined
      ? { body: o.base64 ? Buffer.from(o.body).toString("base64") : o.body, isBase64Encoded: Boolean(o.base64) }
      : { isBase64Encoded: false }),
  };
}

export const lambdaContext = () =>
  ({
    callbackWaitsForEmptyEventLoop: false,
    functionName: "test",
    functionVersion: "$LATEST",
    invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:test",
    memoryLimitInMB: "1024",
    awsRequestId: "req-1",
    logGroupName: "test",
    logStreamName: "test",
    getRemainingTimeInMillis: () => 29_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }) as const;

/**
 * The commands the store's clients send from now on, by name (e.g. "BatchGetItemCommand"), in order, seen through
 * `observeStore` of shared/stores/dynamo.ts (passed in: that module loads only once the store is set up).
 */
export function countRequests(observe: typeof observeStore): string[] {
  const sent: string[] = [];
  observe("countTestRequests", ((next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
    async (args: unknown) => {
      sent.push(String(context.commandName));
      return next(args);
    }) as never);
  return sent;
}
