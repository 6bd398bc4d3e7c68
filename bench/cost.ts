// The AWS cost model: for each operation, its warm handler duration measured here in-process (through the real
// middleware against the in-memory store) and the DynamoDB capacity it consumes (as the store reports it),
// priced with the constants below at the stack's memory setting. Durations include the in-process store's own
// time, which stands in for DynamoDB's network round trips on AWS (a few ms each): the figures are an estimate
// of the order of magnitude and of what dominates, not a bill.
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from "aws-lambda";
import { FUNCTION_MEMORY_MB } from "#infra/aws/stack.ts";

type Json = Record<string, unknown>;
import { observeStore } from "#shared/stores/dynamo.ts";
import { apiEvent, eventCallerToken, lambdaContext } from "../test/helpers/in-process.ts";
import { tileOrganization } from "../test/helpers/tile-organization.ts";

/** Prices in us-east-1, on-demand, as published on 2026-11-01 (USD). */
export const PRICES = {
  region: "us-east-1",
  date: "2026-11-01",
  lambdaPerRequest: 0.2 / 1e6,
  /** arm64 */
  lambdaPerGbSecond: 0.0000133334,
  httpApiPerRequest: 1.0 / 1e6,
  dynamoPerReadUnit: 0.125 / 1e6,
  dynamoPerWriteUnit: 0.625 / 1e6,
  /** Data transfer out of the region to the internet (first 10 TB a month); to CloudFront it is free. */
  dataOutPerGb: 0.09,
  /** CloudFront, price class 100 (North America and Europe): HTTPS requests and data transfer out. */
  cloudFrontPerRequest: 0.01 / 10_000,
  cloudFrontPerGb: 0.085,
  cloudFrontFunctionPerInvocation: 0.1 / 1e6,
  /** CloudWatch Logs ingestion (the request and metric lines), custom metrics, alarms, dashboards. */
  logsPerGb: 0.5,
  customMetricPerMonth: 0.3,
  alarmMetricPerMonth: 0.1,
  compositeAlarmPerMonth: 0.5,
  dashboardPerMonth: 3,
  /** X-Ray traces recorded; Lambda's default sampling records the first request each second and 5% of the rest. */
  xrayPerTrace: 5 / 1e6,
  xraySampled: 0.05,
  /** Hosting (`-c hosting=true`): Aurora Serverless v2 capacity and storage, RDS Proxy (billed from 8 ACU). */
  auroraPerAcuHour: 0.12,
  auroraStoragePerGbMonth: 0.1,
  rdsProxyPerAcuHour: 0.015,
  rdsProxyMinimumAcu: 8,
  /** An interface VPC endpoint, per availability zone. */
  interfaceEndpointPerHour: 0.01,
  hoursPerMonth: 730,
} as const;

/** The share of public tile requests the CDN answers from its cache in the figures below (`BENCH_CDN_HIT_RATIO`). */
const CDN_HIT_RATIO = Number(process.env.BENCH_CDN_HIT_RATIO ?? 0.9);

interface Units {
  read: number;
  write: number;
}

let units: Units = { read: 0, write: 0 };
observeStore("countCapacityUnits", ((next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
  async (args: unknown) => {
    const input = (args as { input: Record<string, unknown> }).input;
    const command = String(context.commandName);
    // A transaction's writes cost twice a plain write's on DynamoDB (the local store carries them out one by
    // one and reports nothing): counted as 2 units per item, each under 1 KB as mapgate's records are.
    if (command === "TransactWriteItemsCommand") {
      units.write += 2 * ((input.TransactItems as unknown[] | undefined)?.length ?? 0);
      return next(args);
    }
    input.ReturnConsumedCapacity = "TOTAL";
    const out = (await next(args)) as { output: { ConsumedCapacity?: unknown } };
    const consumed = out.output.ConsumedCapacity;
    const list = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as { CapacityUnits?: number }[];
    const total = list.reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
    if (/^(Get|BatchGet|Query|Scan)/.test(command)) units.read += total;
    else units.write += total;
    return out;
  }) as never);

type Handler = (event: APIGatewayProxyEventV2, context: ReturnType<typeof lambdaContext>) => Promise<unknown>;

interface Operation {
  readonly name: string;
  readonly handler: Handler;
  readonly event: () => APIGatewayProxyEventV2;
  readonly runs?: number;
}

async function measure(op: Operation): Promise<{ ms: number; units: Units }> {
  const runs = op.runs ?? 300;
  for (let i = 0; i < 20; i++) await op.handler(op.event(), lambdaContext()); // warm
  units = { read: 0, write: 0 };
  const started = performance.now();
  for (let i = 0; i < runs; i++) {
    const res = (await op.handler(op.event(), lambdaContext())) as APIGatewayProxyResultV2 & { statusCode?: number };
    if (typeof res === "object" && res.statusCode !== undefined && res.statusCode >= 400 && res.statusCode !== 404) {
      throw new Error(`${op.name} answered ${res.statusCode}`);
    }
  }
  const ms = (performance.now() - started) / runs;
  return { ms, units: { read: units.read / runs, write: units.write / runs } };
}

/** Cost of one million requests: Lambda (requests and GB-seconds, billed per ms), the HTTP API, DynamoDB. */
function perMillion(ms: number, u: Units) {
  const gbSeconds = (FUNCTION_MEMORY_MB / 1024) * (Math.ceil(ms) / 1000);
  const lambda = 1e6 * (PRICES.lambdaPerRequest + gbSeconds * PRICES.lambdaPerGbSecond);
  const api = 1e6 * PRICES.httpApiPerRequest;
  const dynamo = 1e6 * (u.read * PRICES.dynamoPerReadUnit + u.write * PRICES.dynamoPerWriteUnit);
  return { lambda, api, dynamo, total: lambda + api + dynamo };
}

/** Prints the cost model for the main operations (needs the in-process store started). */
export async function costModel(): Promise<void> {
  const ops = await import("#infra/admin/operations.ts");
  const { portal, server, store, admin } = await tileOrganization("cost");
  for (let i = 0; i < 100; i++) {
    await ops.registerService(server.serverId, {
      name: `Service_${i}`,
      type: "MapServer",
      owner: admin,
      access: i % 2 ? "org" : "public",
      ...(i === 0 ? { cache: { store, path: "/Basemap" } } : {}),
    });
  }
  const token = await eventCallerToken(admin, portal.portalId);
  const bearer = { authorization: `Bearer ${token}` };
  const load = async (id: string) => (await import(`#functions/${id}.ts`)).handler as Handler;
  const rest = "/portal/sharing/rest";
  const soapBody = `<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><GetServiceDescriptions xmlns="http://www.esri.com/schemas/ArcGIS/10.8"/></soap:Body></soap:Envelope>`;
  const operations: Operation[] = [
    {
      name: "portals/self (anonymous)",
      handler: await load("portal-self"),
      event: () => apiEvent(`${rest}/portals/self`, { query: "f=json", pathParameters: { portalId: "self" } }),
    },
    {
      name: "community/self (token)",
      handler: await load("community-self"),
      event: () => apiEvent(`${rest}/community/self`, { query: "f=json", headers: bearer }),
    },
    {
      name: "map tile (public)",
      handler: await load("service"),
      event: () =>
        apiEvent("/cost/rest/services/Service_0/MapServer/tile/1/0/1", {
          pathParameters: { server: "cost", path: "Service_0/MapServer/tile/1/0/1" },
        }),
    },
    {
      name: "services directory (token)",
      handler: await load("services-directory"),
      event: () =>
        apiEvent("/cost/rest/services", { query: "f=json", headers: bearer, pathParameters: { server: "cost" } }),
    },
    {
      name: "SOAP GetServiceDescriptions",
      handler: await load("soap-catalog"),
      event: () =>
        apiEvent("/cost/services", {
          method: "POST",
          body: soapBody,
          headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' },
          pathParameters: { server: "cost" },
        }),
    },
    {
      name: "search (token, 100 items)",
      handler: await load("item-search"),
      event: () => apiEvent(`${rest}/search`, { query: "f=json&q=type%3Aservice&num=10", headers: bearer }),
      runs: 100,
    },
    {
      name: "generateToken (scrypt)",
      handler: await load("generate-token"),
      event: () =>
        apiEvent(`${rest}/generateToken`, {
          body: "f=json&username=cost-admin&password=cost-admin-pass-1&client=requestip",
        }),
      runs: 20,
    },
  ];
  console.log(
    `\nCost model: warm in-process duration, DynamoDB units per request, and USD per million requests at ${FUNCTION_MEMORY_MB} MB arm64`,
  );
  console.log(
    `  prices: ${PRICES.region}, on-demand, as of ${PRICES.date}: Lambda $${(PRICES.lambdaPerRequest * 1e6).toFixed(2)}/M requests + $${PRICES.lambdaPerGbSecond}/GB-s, HTTP API $${(PRICES.httpApiPerRequest * 1e6).toFixed(2)}/M, DynamoDB $${(PRICES.dynamoPerReadUnit * 1e6).toFixed(3)}/M RRU, $${(PRICES.dynamoPerWriteUnit * 1e6).toFixed(3)}/M WRU`,
  );
  const head = ["operation".padEnd(30), "ms", "RRU", "WRU", "Lambda", "HTTP API", "DynamoDB", "total $/M"];
  console.log(
    `  ${head[0]}${head
      .slice(1)
      .map((h) => h.padStart(10))
      .join("")}`,
  );
  const measured = new Map<string, { ms: number; units: Units }>();
  for (const op of operations) {
    const { ms, units: u } = await measure(op);
    measured.set(op.name, { ms, units: u });
    const c = perMillion(ms, u);
    const cells = [ms.toFixed(2), u.read.toFixed(2), u.write.toFixed(2), c.lambda, c.api, c.dynamo, c.total].map((v) =>
      (typeof v === "number" ? v.toFixed(2) : v).padStart(10),
    );
    console.log(`  ${op.name.padEnd(30)}${cells.join("")}`);
  }
  const tile = operations.find((o) => o.name === "map tile (public)");
  const tileCost = measured.get("map tile (public)");
  if (tile && tileCost) await cdnCost(tile, tileCost);
  await monitoringCost();
  await hostingCost();
}

/** The bytes a request writes to its log on AWS (its INFO request line and its metric line), and its answer's. */
async function requestBytes(op: Operation): Promise<{ log: number; body: number }> {
  const { logger } = await import("#shared/log.ts");
  const { setMetricsSink } = await import("#shared/metrics.ts");
  let log = 0;
  setMetricsSink((line) => {
    log += Buffer.byteLength(line) + 1;
  });
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    log += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
    return true;
  }) as typeof process.stdout.write;
  const level = logger.getLevelName();
  logger.setLogLevel("INFO");
  let res: { body?: string; isBase64Encoded?: boolean };
  try {
    res = (await op.handler(op.event(), lambdaContext())) as typeof res;
  } finally {
    logger.setLogLevel(level);
    process.stdout.write = write;
    setMetricsSink(() => undefined);
  }
  const body = res.isBase64Encoded ? Buffer.byteLength(res.body ?? "", "base64") : Buffer.byteLength(res.body ?? "");
  return { log, body };
}

/**
 * A million public tile requests straight to the API and through the CDN: at the origin each costs its Lambda
 * invocation, the HTTP API request, its DynamoDB read, its log lines and its share of traces, and the tile leaves
 * the region; through the CDN every request costs CloudFront's request, function and transfer, and only misses
 * reach the origin (whose transfer to CloudFront is free).
 */
async function cdnCost(op: Operation, m: { ms: number; units: Units }): Promise<void> {
  const bytes = await requestBytes(op);
  const origin = perMillion(m.ms, m.units);
  const gb = (b: number) => (1e6 * b) / 1024 ** 3;
  const logs = gb(bytes.log) * PRICES.logsPerGb;
  const traces = 1e6 * PRICES.xraySampled * PRICES.xrayPerTrace;
  const atOrigin = origin.total + logs + traces;
  const direct = { origin: atOrigin, transfer: gb(bytes.body) * PRICES.dataOutPerGb, cdn: 0 };
  const cdn = {
    origin: (1 - CDN_HIT_RATIO) * atOrigin,
    transfer: gb(bytes.body) * PRICES.cloudFrontPerGb,
    cdn: 1e6 * (PRICES.cloudFrontPerRequest + PRICES.cloudFrontFunctionPerInvocation),
  };
  console.log(
    `
Public map tiles: USD per million requests of a ${bytes.body} B tile, straight to the API and through the CDN at a ${Math.round(CDN_HIT_RATIO * 100)}% hit ratio`,
  );
  console.log(
    `  at the origin each request costs Lambda $${origin.lambda.toFixed(2)}, HTTP API $${origin.api.toFixed(2)}, DynamoDB $${origin.dynamo.toFixed(2)}, logs $${logs.toFixed(2)} (${bytes.log} B of log lines), X-Ray $${traces.toFixed(2)} (${PRICES.xraySampled * 100}% sampled) per million`,
  );
  console.log(
    `  prices: data out $${PRICES.dataOutPerGb}/GB; CloudFront (price class 100) $${(PRICES.cloudFrontPerRequest * 1e6).toFixed(2)}/M HTTPS requests, $${PRICES.cloudFrontPerGb}/GB out, function $${(PRICES.cloudFrontFunctionPerInvocation * 1e6).toFixed(2)}/M`,
  );
  console.log(
    `  ${"".padEnd(30)}${["origin", "transfer", "CloudFront", "total $/M"].map((h) => h.padStart(11)).join("")}`,
  );
  for (const [name, c] of [
    ["straight to the API", direct],
    [`through the CDN (${Math.round(CDN_HIT_RATIO * 100)}% hits)`, cdn],
  ] as const) {
    const cells = [c.origin, c.transfer, c.cdn, c.origin + c.transfer + c.cdn].map((v) => v.toFixed(2).padStart(11));
    console.log(`  ${name.padEnd(30)}${cells.join("")}`);
  }
}

/** What watching costs a month, whatever the traffic: the stack's alarms, its dashboard and mapgate's metrics. */
async function monitoringCost(): Promise<void> {
  const { App } = await import("aws-cdk-lib");
  const { Template } = await import("aws-cdk-lib/assertions");
  const { MapgateStack } = await import("#infra/aws/stack.ts");
  const { ROUTES } = await import("#shared/system.ts");
  const { EVENTS } = await import("#shared/system.ts");
  const { OUTCOMES, SERVED_RESOURCES } = await import("#shared/metrics.ts");
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new MapgateStack(app, "mapgate-cost", {});
  const resources = Object.values(Template.fromStack(stack.monitoring).toJSON().Resources as Record<string, Json>);
  const alarms = resources.filter((r) => r.Type === "AWS::CloudWatch::Alarm");
  const alarmMetrics = alarms.reduce((n, r) => {
    const metrics = (r.Properties as { Metrics?: { MetricStat?: unknown }[] }).Metrics;
    return n + (metrics ? metrics.filter((m) => m.MetricStat).length : 1);
  }, 0);
  const composites = resources.filter((r) => r.Type === "AWS::CloudWatch::CompositeAlarm").length;
  // Every series mapgate can write: requests by operation and outcome and by outcome, latency and bytes by
  // operation and by kind, content served, jobs, events (outboxed and lost, by type and in all), redelivery (4),
  // lockouts. A series is billed only for the hours it receives data: most operations never see a server error.
  const requestSeries = (outcomes: number) => ROUTES.length * outcomes + OUTCOMES.length + 2 * (ROUTES.length + 2);
  const series =
    requestSeries(OUTCOMES.length) +
    SERVED_RESOURCES.length +
    (3 * 2 + 1) +
    2 * (Object.keys(EVENTS.types).length + 1) +
    4 +
    1;
  const alarmCost = alarmMetrics * PRICES.alarmMetricPerMonth + composites * PRICES.compositeAlarmPerMonth;
  console.log(`
Monitoring: USD a month, whatever the traffic (CloudWatch, ${PRICES.region})`);
  console.log(
    `  alarms: ${alarms.length} reading ${alarmMetrics} metrics ($${PRICES.alarmMetricPerMonth} each) + ${composites} composite: $${alarmCost.toFixed(2)}`,
  );
  console.log(`  dashboard: $${PRICES.dashboardPerMonth.toFixed(2)} (the account's first three are free)`);
  console.log(
    `  custom metrics: at most ${series} series ($${PRICES.customMetricPerMonth} each a month, prorated by the hour they receive data): up to $${(series * PRICES.customMetricPerMonth).toFixed(2)}; an API whose routes each see ok and client errors, about $${((requestSeries(2) + 20) * PRICES.customMetricPerMonth).toFixed(2)}`,
  );
}

/**
 * What the hosting option costs a month while idle (`-c hosting=true`): the proxy's floor, paid whether the cluster
 * runs or is paused at 0 ACU, and the interface endpoints the functions in the VPC reach AWS's services by (none when
 * the VPC has them, or a NAT); counted from the synthesized stack.
 */
export async function hostingCost(): Promise<void> {
  const { App } = await import("aws-cdk-lib");
  const { Template } = await import("aws-cdk-lib/assertions");
  const { MapgateStack } = await import("#infra/aws/stack.ts");
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const subnetIds = ["subnet-0a1", "subnet-0b2"];
  const stack = new MapgateStack(app, "mapgate-cost-hosting", {
    databaseVpc: { vpcId: "vpc-0a1b2c3d", subnetIds, securityGroupId: "sg-0c3d4e5f", routeTableIds: ["rtb-0e4"] },
    hosting: {},
  });
  const parent = Object.values(Template.fromStack(stack).toJSON().Resources as Record<string, Json>);
  const endpoints = parent.filter(
    (r) => r.Type === "AWS::EC2::VPCEndpoint" && (r.Properties as Json).VpcEndpointType === "Interface",
  ).length;
  const hosting = stack.node.findChild("Hosting") as import("aws-cdk-lib").NestedStack;
  const nested = Object.values(Template.fromStack(hosting).toJSON().Resources as Record<string, Json>);
  const proxies = nested.filter((r) => r.Type === "AWS::RDS::DBProxy").length;
  const proxy = proxies * PRICES.rdsProxyMinimumAcu * PRICES.rdsProxyPerAcuHour * PRICES.hoursPerMonth;
  const endpointCost = endpoints * subnetIds.length * PRICES.interfaceEndpointPerHour * PRICES.hoursPerMonth;
  console.log(`
Hosting on Aurora (-c hosting=true): USD a month while idle (${PRICES.region})`);
  console.log(
    `  RDS Proxy: ${proxies} × ${PRICES.rdsProxyMinimumAcu} ACU at least ($${PRICES.rdsProxyPerAcuHour} an ACU-hour), paused cluster or not: $${proxy.toFixed(2)}`,
  );
  console.log(
    `  interface endpoints: ${endpoints} in ${subnetIds.length} zones ($${PRICES.interfaceEndpointPerHour} an hour each): $${endpointCost.toFixed(2)} (none if the VPC has them or a NAT)`,
  );
  console.log(
    `  Aurora Serverless v2 at 0 ACU: no compute; storage $${PRICES.auroraStoragePerGbMonth} a GB-month; $${PRICES.auroraPerAcuHour} an ACU-hour while it runs`,
  );
  console.log(`  idle floor: $${proxy.toFixed(2)} to $${(proxy + endpointCost).toFixed(2)}, plus storage`);
}
