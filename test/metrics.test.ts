// Operating mapgate: the metric lines every request, job, event and lockout writes (CloudWatch Embedded Metric
// Format, checked against the specification's schema), the local engine's log carrying the same lines and
// `npm run admin -- metrics` summing them, and what a shared cache (the CDN) may keep: `Cache-Control: public`
// only on public content answered to a request without any credential.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CDN_MAX_TTL_SECONDS } from "#infra/aws/cdn.ts";
import { ROUTES, routeKeys } from "#shared/system.ts";
import type { Service } from "#shared/stores/services.ts";
import { newDataDir, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { checkEmf, emfLines } from "./helpers/emf.ts";
import { call } from "./helpers/http.ts";
import { apiEvent, inProcessStore, lambdaContext } from "./helpers/in-process.ts";
import { tileOrganization } from "./helpers/tile-organization.ts";

const DIMENSIONS = new Set(["Stack", "Operation", "Outcome", "Kind", "Resource", "EventType"]);

/** The dimension members of an EMF line, by name. */
function dimensionsOf(doc: Record<string, unknown>): Record<string, string> {
  const directives = (doc._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics;
  const keys = new Set(directives.flatMap((d) => d.Dimensions.flat()));
  return Object.fromEntries([...keys].map((k) => [k, String(doc[k])]));
}

const parseLines = emfLines;

describe("metrics and shared caching, in-process through the real pipeline", () => {
  let dynamo: Awaited<ReturnType<typeof inProcessStore>>;
  const lines: string[] = [];
  let service: (e: APIGatewayProxyEventV2, c: ReturnType<typeof lambdaContext>) => Promise<unknown>;
  let unshare: typeof service;
  let publicService: Service;
  let orgService: Service;
  let token: string;
  const SERVER = "metrics";
  const SERVICE_ROUTE = ROUTES.find((r) => r.id === "service");

  /** A request for one path of a service at its route, as API Gateway hands it to the function. */
  const tileEvent = (name: string, o: Parameters<typeof apiEvent>[1] = {}) => {
    const path = `${name}/MapServer/tile/1/0/1`;
    const event = apiEvent(`/${SERVER}/rest/services/${path}`, { ...o, pathParameters: { server: SERVER, path } });
    return { ...event, routeKey: SERVICE_ROUTE ? (routeKeys(SERVICE_ROUTE)[0] ?? "") : "" };
  };
  const answer = async (event: APIGatewayProxyEventV2) =>
    (await service(event, lambdaContext())) as APIGatewayProxyStructuredResultV2;

  beforeAll(async () => {
    dynamo = await inProcessStore();
    const { setMetricsSink } = await import("#shared/metrics.ts");
    setMetricsSink((line) => lines.push(line));
    const ops = await import("#infra/admin/operations.ts");
    const { issueToken } = await import("#shared/auth/tokens.ts");
    const org = await tileOrganization(SERVER);
    const cache = { store: org.store, path: "/Basemap" };
    publicService = await ops.registerService(org.server.serverId, {
      name: "Open",
      type: "MapServer",
      owner: org.admin,
      access: "public",
      cache,
    });
    orgService = await ops.registerService(org.server.serverId, {
      name: "Members",
      type: "MapServer",
      owner: org.admin,
      access: "org",
      cache,
    });
    ({ token } = await issueToken({
      username: org.admin,
      portalId: org.portal.portalId,
      audience: { kind: "portal" },
      client: "requestip",
      bound: "192.0.2.10",
      expires: Date.now() + 3600_000,
    }));
    service = (await import("#functions/service.ts")).handler as typeof service;
    unshare = (await import("#functions/item-share.ts")).handler as typeof service;
  }, 60_000);
  afterAll(async () => {
    await dynamo?.close();
  });

  it("writes one EMF line per request, valid by the specification's schema, with low-cardinality dimensions", async () => {
    lines.length = 0;
    const requestIds = ["r-ok", "r-missing", "r-denied", "r-token"];
    const events = [
      tileEvent("Open"),
      { ...tileEvent("Open"), rawPath: `/${SERVER}/rest/services/Open/MapServer/tile/9/9/9` },
      tileEvent("Members"),
      tileEvent("Open", { query: `token=${token}` }),
    ].map((e, i) => ({ ...e, requestContext: { ...e.requestContext, requestId: requestIds[i] ?? "" } }));
    for (const e of events) await answer(e);
    const docs = parseLines(lines);
    expect(docs).toHaveLength(events.length);
    for (const doc of docs) {
      checkEmf(doc);
      const dims = dimensionsOf(doc);
      for (const [key, value] of Object.entries(dims)) {
        expect(DIMENSIONS.has(key), key).toBe(true);
        // Never a path, a user, a token or a request id as a dimension (each would be a metric of its own).
        expect(value).not.toMatch(/\/|admin|r-ok|r-token/);
        expect(value).not.toContain(token.slice(0, 16));
      }
      for (const d of (doc._aws as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics)
        expect(d.Namespace).toBe("mapgate");
    }
    expect(docs.map((d) => [d.Operation, d.Outcome, d.Kind, d.requestId])).toEqual([
      ["service", "ok", "read", "r-ok"],
      ["service", "client-error", "read", "r-missing"], // a tile the cache lacks: an empty 404
      ["service", "client-error", "read", "r-denied"], // 499: token required
      ["service", "ok", "read", "r-token"],
    ]);
    // Tiles served are counted by kind: the first tile and the one read with a token (the missing one is a 404).
    expect(docs.filter((d) => d.Served === 1).map((d) => d.Resource)).toEqual(["tile", "tile"]);
    expect(docs[0]?.ResponseBytes).toBeGreaterThan(0);
    expect(docs[0]?.Latency).toBeGreaterThanOrEqual(0);
  });

  it("marks content public only for anonymous requests of public services, never with a token or cookie", async () => {
    const cacheControl = async (e: APIGatewayProxyEventV2) => {
      const r = await answer(e);
      return { status: r.statusCode, cc: r.headers?.["cache-control"] as string | undefined };
    };
    expect(await cacheControl(tileEvent("Open"))).toEqual({ status: 200, cc: "public, max-age=3600" });
    const bearer = `Bearer ${token}`;
    const credentialed = [
      tileEvent("Open", { query: `token=${token}` }),
      tileEvent("Open", { headers: { authorization: bearer } }),
      tileEvent("Open", { headers: { "x-esri-authorization": bearer } }),
      tileEvent("Open", { cookies: ["vendor_authcookie=x"] }),
      // Any cookie at all: a shared cache keys on none, so it may store no answer a cookie came with.
      tileEvent("Open", { cookies: ["theme=dark"] }),
    ];
    for (const e of credentialed) expect(await cacheControl(e)).toEqual({ status: 200, cc: "private, max-age=3600" });
    // A members-only service's content is private even to its members.
    expect(await cacheControl(tileEvent("Members", { query: `token=${token}` }))).toEqual({
      status: 200,
      cc: "private, max-age=3600",
    });
    // Refusals and non-content answers are never stored by anyone.
    expect((await cacheControl(tileEvent("Members"))).cc).toBe("no-store");
    const json = apiEvent(`/${SERVER}/rest/services/Open/MapServer`, {
      query: "f=json",
      pathParameters: { server: SERVER, path: "Open/MapServer" },
    });
    expect((await cacheControl(json)).cc).toBe("no-store");
  });

  it("stops marking a service's content public the moment it is unshared (the CDN keeps it at most its max TTL)", async () => {
    expect((await answer(tileEvent("Open"))).headers?.["cache-control"]).toMatch(/^public/);
    const path = `/portal/sharing/rest/content/items/${publicService.itemId}/unshare`;
    const r = (await unshare(
      apiEvent(path, {
        body: "f=json&everyone=true&org=true",
        headers: { authorization: `Bearer ${token}` },
        pathParameters: { itemId: publicService.itemId },
      }),
      lambdaContext(),
    )) as APIGatewayProxyStructuredResultV2;
    expect(JSON.parse(r.body ?? "{}")).toMatchObject({ itemId: publicService.itemId });
    const after = await answer(tileEvent("Open"));
    expect(JSON.parse(after.body ?? "{}")).toMatchObject({ error: { code: 499 } });
    expect(after.headers?.["cache-control"]).toBe("no-store");
    // What a CDN fetched before keeps being served until its TTL ends: docs/aws.md ("The CDN") promises this
    // bound.
    expect(CDN_MAX_TTL_SECONDS).toBeLessThanOrEqual(300);
    expect(orgService.access).toBe("org");
  });

  it("counts sign-in lockouts, job outcomes by operation, and the outbox's redelivery", async () => {
    lines.length = 0;
    const generate = (await import("#functions/generate-token.ts")).handler as typeof service;
    for (let i = 0; i < 6; i++) {
      await generate(
        apiEvent("/portal/sharing/rest/generateToken", {
          body: "f=json&username=nobody-here&password=wrong-password-1&client=requestip",
        }),
        lambdaContext(),
      );
    }
    const { createJob, newJob } = await import("#shared/stores/jobs.ts");
    const start = {
      jobId: "b".repeat(32),
      portalId: "p",
      owner: "o",
      operation: "publish" as const,
      params: {},
      origin: "https://maps.example.test",
    };
    await createJob(newJob(start, "job-key"));
    const fail = (await import("#functions/task-fail-job.ts")).handler as (i: unknown) => Promise<unknown>;
    await fail({ ...start, error: { Error: "JobError", Cause: "no" } });
    await fail({ ...start, error: { Error: "JobError", Cause: "no" } }); // a repeated task counts nothing
    const { ddb } = await import("#shared/stores/dynamo.ts");
    const { tableName } = await import("#shared/config.ts");
    const created = Date.now() - 120_000;
    await ddb.send(
      new PutCommand({
        TableName: tableName("outbox"),
        Item: {
          eventId: "e1",
          detailType: "Role Changed",
          detail: JSON.stringify({ eventId: "e1" }),
          created,
          expiresAt: Math.floor(created / 1000) + 3600,
        },
      }),
    );
    const redeliver = (await import("#functions/events-redeliver.ts")).handler as () => Promise<unknown>;
    expect(await redeliver()).toEqual({ sent: 1, refused: 0, expired: 0, waiting: 0 });
    const docs = parseLines(lines);
    for (const doc of docs) checkEmf(doc);
    expect(docs.filter((d) => d.SignInLockouts === 1)).toHaveLength(1);
    expect(docs.filter((d) => d.Jobs === 1).map((d) => [d.Operation, d.Outcome])).toEqual([["publish", "failed"]]);
    const run = docs.find((d) => "OutboxOldestAgeSeconds" in d);
    expect(run).toMatchObject({ EventsRedelivered: 1, RedeliveryRefused: 0, EventsGivenUp: 0 });
    expect(run?.OutboxOldestAgeSeconds).toBeGreaterThanOrEqual(119);
  });
});

describe("the request line", () => {
  it("is the line the general writer makes of the same declarations, member for member and in order", async () => {
    const { putMetrics, requestMetrics, setMetricsSink } = await import("#shared/metrics.ts");
    const written: string[] = [];
    setMetricsSink((line) => written.push(line));
    const figures = [
      { operation: "portal-self", kind: "read", code: 200, ms: 1.3, bytes: 2048, requestId: "r-1" },
      { operation: "service", kind: "read", code: 200, ms: 0, bytes: 0, requestId: "r-2", resource: "tile" },
      // Not served: an error is not content, whatever was asked for.
      { operation: "service", kind: "read", code: 499, ms: 12.5, bytes: 97, requestId: "r-3", resource: "query" },
      { operation: 'a "quoted" \\ op\u2028', kind: "other", code: 500, ms: Number.NaN, bytes: 1, requestId: '"\n' },
      // No request id (an event made by hand): the member is left out, as JSON leaves out an undefined one.
      { operation: "portal-self", kind: "read", code: 200, ms: 1, bytes: 2, requestId: undefined },
    ] as const;
    for (const r of figures) {
      written.length = 0;
      requestMetrics(r);
      const served = r.code < 400 && "resource" in r;
      putMetrics(
        [
          { dimensions: [["Operation", "Outcome"], ["Outcome"]], metrics: { Requests: { value: 1, unit: "Count" } } },
          {
            dimensions: [["Operation"], ["Kind"]],
            metrics: {
              Latency: { value: r.ms, unit: "Milliseconds" },
              ResponseBytes: { value: r.bytes, unit: "Bytes" },
            },
          },
          ...(served
            ? [{ dimensions: [["Resource"]], metrics: { Served: { value: 1, unit: "Count" as const } } }]
            : []),
        ],
        {
          Operation: r.operation,
          Outcome: r.code >= 500 ? "server-error" : r.code >= 400 ? "client-error" : "ok",
          Kind: r.kind,
          ...(served ? { Resource: r.resource } : {}),
        },
        { requestId: r.requestId, code: r.code },
      );
      const [fast, general] = written.map((line) => {
        const doc = JSON.parse(line) as { _aws: { Timestamp: number } };
        expect(Math.abs(doc._aws.Timestamp - Date.now())).toBeLessThan(5_000);
        doc._aws.Timestamp = 0;
        return doc;
      });
      expect(written).toHaveLength(2);
      // A latency that is not a number is written as JSON writes it (null), which the schema rightly refuses.
      if (Number.isFinite(r.ms)) checkEmf(fast as Record<string, unknown>);
      expect(fast).toEqual(general);
      // Member order too: a line is text that people and log queries read.
      expect(JSON.stringify(fast)).toBe(JSON.stringify(general));
    }
  });
});

describe("the local engine's log", () => {
  let engine: RunningEngine;

  beforeAll(async () => {
    // Logging at INFO (the request lines); metric lines are written whatever the level.
    engine = await startEngine({ dataDir: newDataDir(), env: { POWERTOOLS_LOG_LEVEL: "INFO" } });
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
  });

  it("carries the same EMF lines, and `npm run admin -- metrics` sums them for a person", async () => {
    const before = engine.lines.length;
    const base = engine.ready.http;
    for (let i = 0; i < 3; i++) await call(`${base}/arcgis/rest/services/World_Basemap/MapServer/tile/1/0/1`);
    await call(`${base}/portal/sharing/rest/info?f=json`);
    await call(`${base}/portal/sharing/rest/portals/self/roles?f=json`); // 499: token required
    await call(`${base}/arcgis/services?wsdl`); // the SOAP pipeline writes the same line
    const deadline = Date.now() + 5000;
    while (parseLines(engine.lines.slice(before)).length < 6 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const docs = parseLines(engine.lines.slice(before));
    expect(docs).toHaveLength(6);
    for (const doc of docs) checkEmf(doc);
    expect(docs.map((d) => `${d.Operation} ${d.Outcome}`)).toEqual([
      "service ok",
      "service ok",
      "service ok",
      "sharing-info ok",
      "role-list client-error",
      "soap-catalog ok",
    ]);
    // Every log line written while a request ran carries its request id.
    const requestLines = engine.lines.slice(before).filter((l) => l.includes('"message":"request"'));
    expect(requestLines).toHaveLength(5);
    for (const l of requestLines) expect(JSON.parse(l).requestId).toMatch(/.+/);

    const log = join(engine.dataDir, "engine.log");
    writeFileSync(log, `${engine.lines.join("\n")}\n`);
    const out = execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), "metrics", "--file", log, "--json"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    const summary = JSON.parse(out) as { metric: string; dimensions: string; samples: number; sum: number }[];
    const row = (metric: string, dimensions: string) =>
      summary.find((s) => s.metric === metric && s.dimensions === dimensions);
    expect(row("Requests", "Operation=service, Outcome=ok")?.sum).toBeGreaterThanOrEqual(3);
    expect(row("Served", "Resource=tile")?.sum).toBeGreaterThanOrEqual(3);
    expect(row("Requests", "Outcome=client-error")?.sum).toBeGreaterThanOrEqual(1);
    expect(row("Latency", "Kind=read")?.samples).toBeGreaterThanOrEqual(4);
    const table = execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), "metrics", "--file", log], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(table).toMatch(/^metric\s+dimensions\s+samples/);
    expect(table).toMatch(/Latency\s+Kind=read\s+\d+\s+p50 [\d.]+ {2}p99 [\d.]+ {2}max [\d.]+\s+Milliseconds/);
  }, 30_000);
});
