// The store reads a warm tile function makes, counted at the SDK client through the real middleware chain
// against a real (in-memory) dynalite: one read per tile (the caller or their organization, with the catalog
// version, in one BatchGetItem), and a change to the catalog seen on the very next request.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiEvent, countRequests, eventCallerToken, inProcessStore, lambdaContext } from "./helpers/in-process.ts";
import { tileOrganization } from "./helpers/tile-organization.ts";
import { SERVICE_PATH } from "#shared/system.ts";

const store = await inProcessStore();
const { observeStore } = await import("#shared/stores/dynamo.ts");
const ops = await import("#infra/admin/operations.ts");
const service = (await import("#functions/service.ts")).handler;
const directory = (await import("#functions/services-directory.ts")).handler;
const soap = (await import("#functions/soap-catalog.ts")).handler;

const sent = countRequests(observeStore);

let token: string;
let serverId: string;

const tileEvent = (name: string, headers: Record<string, string> = {}) =>
  apiEvent(`/tiles/rest/services/${name}/MapServer/tile/1/0/1`, {
    pathParameters: { server: "tiles", path: `${name}/MapServer/tile/1/0/1` },
    route: SERVICE_PATH,
    headers,
  });

async function counted(fn: () => Promise<APIGatewayProxyStructuredResultV2>) {
  const before = sent.length;
  const res = await fn();
  return { res, requests: sent.slice(before) };
}

beforeAll(async () => {
  const { portal, server, store: datastore } = await tileOrganization("tiles");
  serverId = server.serverId;
  for (const [name, access] of [
    ["Open", "public"],
    ["Members", "org"],
  ] as const) {
    await ops.registerService(server.serverId, {
      name,
      type: "MapServer",
      owner: "tiles-admin",
      access,
      cache: { store: datastore, path: "/Basemap" },
    });
  }
  token = await eventCallerToken("tiles-admin", portal.portalId);
});

afterAll(async () => {
  await store.close();
});

describe("store reads per tile (warm function)", () => {
  it("reads once for an anonymous tile: the organization and the catalog version together", async () => {
    await service(tileEvent("Open"), lambdaContext()); // warm: server, catalog and cache description kept
    const { res, requests } = await counted(() => service(tileEvent("Open"), lambdaContext()));
    expect([res.statusCode, res.headers?.["content-type"]]).toEqual([200, "image/png"]);
    expect(requests).toEqual(["BatchGetItemCommand"]);
  });

  it("reads once for a member's tile: the caller, the organization and the catalog version together", async () => {
    const headers = { authorization: `Bearer ${token}` };
    await service(tileEvent("Members", headers), lambdaContext());
    const { res, requests } = await counted(() => service(tileEvent("Members", headers), lambdaContext()));
    expect([res.statusCode, res.headers?.["content-type"]]).toEqual([200, "image/png"]);
    expect(requests).toEqual(["BatchGetItemCommand"]);
    // Without the token, the same tile asks for one (the organization's service is not anonymous content).
    const anonymous = await service(tileEvent("Members"), lambdaContext());
    expect(JSON.parse(anonymous.body ?? "{}")).toMatchObject({ error: { code: 499 } });
  });

  it("sees a change to the catalog on the very next request", async () => {
    const list = () =>
      directory(
        apiEvent("/tiles/rest/services", { query: "f=json", pathParameters: { server: "tiles" } }),
        lambdaContext(),
      );
    expect(JSON.parse((await list()).body ?? "{}").services).toEqual([{ name: "Open", type: "MapServer" }]);
    const { requests: warm } = await counted(list);
    expect(warm).toEqual(["BatchGetItemCommand"]);
    await ops.registerService(serverId, { name: "Later", type: "MapServer", owner: "tiles-admin", access: "public" });
    const { res, requests } = await counted(list);
    expect(JSON.parse(res.body ?? "{}").services).toEqual([
      { name: "Later", type: "MapServer" },
      { name: "Open", type: "MapServer" },
    ]);
    expect(requests).toEqual(["BatchGetItemCommand", "QueryCommand"]);
  });
});

describe("store reads per SOAP call (warm function)", () => {
  const call = (query = "") =>
    soap(
      apiEvent("/tiles/services", {
        method: "POST",
        query,
        body: `<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><GetServiceDescriptions xmlns="http://www.esri.com/schemas/ArcGIS/10.8"/></soap:Body></soap:Envelope>`,
        headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' },
        pathParameters: { server: "tiles" },
      }),
      lambdaContext(),
    );

  it("reads once: the caller or the organization, with the catalog version, and sees a change at once", async () => {
    for (const query of ["", `token=${encodeURIComponent(token)}`]) {
      await call(query); // warm: the server and the catalog kept
      const { res, requests } = await counted(() => call(query));
      expect(res.body).toContain("<Name>Open</Name>");
      expect(requests, query || "anonymous").toEqual(["BatchGetItemCommand"]);
    }
    await ops.registerService(serverId, { name: "Newer", type: "MapServer", owner: "tiles-admin", access: "public" });
    const { res, requests } = await counted(() => call());
    expect(res.body).toContain("<Name>Newer</Name>");
    expect(requests).toEqual(["BatchGetItemCommand", "QueryCommand"]);
  });
});
