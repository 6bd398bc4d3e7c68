// The local gateway's event and result handling, with handlers that show what they were given, over loopback HTTP.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Gateway } from "#infra/local/gateway.ts";
import { call } from "./helpers/http.ts";

let server: Server;
let base: string;

/** What the handler answers, by the `answer` parameter; by default the event's query and body. */
function answer(event: APIGatewayProxyEventV2): APIGatewayProxyStructuredResultV2 {
  const kind = new URLSearchParams(event.rawQueryString).get("answer");
  // Each control character takes 6 bytes once JSON-escaped: 1.1 M of them make a 6.6 MB result.
  if (kind === "escaped") return { statusCode: 200, body: "\u0001".repeat(1_100_000) };
  if (kind === "plain") return { statusCode: 200, body: "a".repeat(5_500_000) };
  return {
    statusCode: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(
      kind === "route"
        ? { routeKey: event.routeKey, method: event.requestContext.http.method }
        : { query: event.queryStringParameters ?? null, body: event.body ?? null },
    ),
  };
}

beforeAll(async () => {
  const gateway = await Gateway.load(async () => async (event) => answer(event));
  server = createServer((req, res) => gateway.serve(req, res, "127.0.0.1", "http"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/portal/sharing/rest/info`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("gateway", () => {
  it("matches a path's GET and POST as one ANY route, as API Gateway does, with the request's own method", async () => {
    for (const method of ["GET", "POST", "PUT"]) {
      const got = (await call(`${base}?answer=route`, { method, ...(method === "GET" ? {} : { body: "" }) })).json();
      expect(got).toMatchObject({ routeKey: "ANY /portal/sharing/rest/info", method });
    }
  });

  it("gives every query parameter as its own, named __proto__ or constructor too, repeated values joined", async () => {
    const res = await call(`${base}?constructor=a&__proto__=b&x=1&x=2`);
    expect(res.text).toBe('{"query":{"constructor":"a","__proto__":"b","x":"1,2"},"body":null}');
  });

  it("passes a declared body and no body when none is declared", async () => {
    expect((await call(base, { body: "f=json" })).json()).toEqual({ query: null, body: "Zj1qc29u" });
    expect((await call(base)).json()).toEqual({ query: null, body: null });
  });

  it("fails a result over 6 MB once JSON-escaped, as Lambda does, and passes one under it", async () => {
    const escaped = await call(`${base}?answer=escaped`);
    expect([escaped.status, escaped.json()]).toEqual([500, { message: "Internal Server Error" }]);
    const plain = await call(`${base}?answer=plain`);
    expect([plain.status, plain.text.length]).toEqual([200, 5_500_000]);
  });
});

describe("which requests the local engine runs in worker threads", () => {
  it("a feature layer's query, and nothing else of the service route (tiles and JSON stay on the engine's thread)", async () => {
    const { WORKER_ROUTES } = await import("#infra/local/engine.ts");
    expect([...WORKER_ROUTES.keys()]).toEqual(["service"]);
    const pooled = WORKER_ROUTES.get("service") ?? (() => false);
    const s = "/arcgis/rest/services/World/places_1a2b/FeatureServer";
    for (const path of [`${s}/0/query`, `${s}/0/query/`, `${s}/3/query`]) expect(pooled(path), path).toBe(true);
    for (const path of [
      s,
      `${s}/0`,
      `${s}/layers`,
      `${s}/0/applyEdits`,
      "/arcgis/rest/services/Basemap/MapServer/tile/1/0/1",
      "/arcgis/rest/services/Streets/VectorTileServer/tile/0/0/0.pbf",
      "/arcgis/rest/services/Buildings/SceneServer/layers/0/nodes/0",
    ])
      expect(pooled(path), path).toBe(false);
  });
});
