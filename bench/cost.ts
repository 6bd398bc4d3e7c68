// The AWS cost model: for each operation, its warm handler duration measured here in-process (through the real
// middleware against the in-memory store) and the DynamoDB capacity it consumes (as the store reports it),
// priced with the constants below at the stack's memory setting. Durations include the in-process store's own
// time, which stands in for DynamoDB's network round trips on AWS (a few ms each): the figures are an estimate
// of the order of magnitude and of what dominates, not a bill.
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from "aws-lambda";
import { FUNCTION_MEMORY_MB } from "#infra/aws/stack.ts";
import { observeStore } from "#shared/stores/dynamo.ts";
import { apiEvent, lambdaContext } from "../test/helpers/in-process.ts";
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
} as const;

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
  const { issueToken } = await import("#shared/auth/tokens.ts");
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
  const { token } = await issueToken({
    username: admin,
    portalId: portal.portalId,
    audience: { kind: "portal" },
    client: "requestip",
    bound: "192.0.2.10",
    expires: Date.now() + 3600_000,
  });
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
  for (const op of operations) {
    const { ms, units: u } = await measure(op);
    const c = perMillion(ms, u);
    const cells = [ms.toFixed(2), u.read.toFixed(2), u.write.toFixed(2), c.lambda, c.api, c.dynamo, c.total].map((v) =>
      (typeof v === "number" ? v.toFixed(2) : v).padStart(10),
    );
    console.log(`  ${op.name.padEnd(30)}${cells.join("")}`);
  }
}
