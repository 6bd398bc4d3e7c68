// The local engine stays live under a slow request: a feature query that runs past every limit (an overlaps test
// against an 80,000-vertex polygon, on the demo GeoPackage's countries) is answered on both listeners when its
// function's time limit passes, though it outlasts the listeners' silence limit; /health answers promptly on
// both meanwhile; the function is stopped and a fresh instance answers the next query; and connections that send
// nothing, or dribble their headers, are still closed after the silence limit. The limit is set short here
// (MAPGATE_HEADERS_TIMEOUT_SECONDS=2) so the test waits on the function's limit alone.
import { connect as tcpConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_LAYERS_FOLDER } from "#infra/admin/demo.ts";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization } from "./helpers/admin.ts";
import { type RunningEngine, startEngine } from "./helpers/engine.ts";
import { type Answer, call, form } from "./helpers/http.ts";

const HEADERS_LIMIT_S = 2;
/** The function's time limit (the gateway's integration timeout) and what the test allows beyond it. */
const FUNCTION_LIMIT_MS = 29_000;
const MARGIN_MS = 4_000;

let engine: RunningEngine;

beforeAll(async () => {
  engine = await startEngine({
    // A body of an 80,000-vertex polygon, percent-encoded, is over the default 1 MB.
    env: { MAPGATE_HEADERS_TIMEOUT_SECONDS: String(HEADERS_LIMIT_S), MAX_BODY_BYTES: "4400000" },
  });
});
afterAll(async () => {
  await engine?.stop();
});

/**
 * A comb of `n` vertices over Africa, Europe and the Americas: under the 1 MB `geometry` limit (three decimals),
 * and its DE-9IM matrix with each country costs far more than a query's time.
 */
function comb(n: number): string {
  const teeth = Array.from({ length: n - 3 }, (_, i) => [
    Number((-99.99 + (199.98 * i) / (n - 4)).toFixed(3)),
    10 + (i % 2),
  ]);
  return JSON.stringify({ rings: [[...teeth, [99.99, -60], [-99.99, -60], teeth[0]]] });
}

/** Milliseconds until `socket` is closed by the engine. */
const closedAfter = (socket: Socket, started: number) =>
  new Promise<number>((resolve) => {
    socket.on("error", () => undefined);
    socket.once("close", () => resolve(Date.now() - started));
  });

describe("local engine liveness", () => {
  it("answers a query slower than every limit on both listeners, with /health prompt meanwhile", async () => {
    const { worldStore } = demoOrganization(engine.dataDir);
    const service = `countries_${stableItemId(worldStore, "/world.gpkg/countries").slice(0, 6)}`;
    const layer = (origin: string) => `${origin}/arcgis/rest/services/${DEMO_LAYERS_FOLDER}/${service}/FeatureServer/0`;
    const { https, http } = engine.ready;
    const ca = engine.ca;
    const slowQuery = form({
      f: "json",
      where: "1=1",
      returnIdsOnly: "true",
      geometryType: "esriGeometryPolygon",
      spatialRel: "esriSpatialRelOverlaps",
      geometry: comb(80_000),
    });

    const started = Date.now();
    const timed = (answer: Promise<Answer>) =>
      answer.then(
        (a) => ({ a, ms: Date.now() - started }),
        (err: unknown) => ({ a: err as Error, ms: Date.now() - started }),
      );
    // One on each listener: each takes an instance of the service function.
    const slow = [https, http].map((origin) => timed(call(`${layer(origin)}/query`, { body: slowQuery, ca })));

    // The silence limit still holds on both listeners: a TCP connection that never starts TLS, a TLS connection
    // that sends nothing, one that dribbles a header that never ends, and the same two on plain HTTP.
    const port = (url: string) => Number(new URL(url).port);
    const dribbles: NodeJS.Timeout[] = [];
    const dribble = (socket: Socket) => {
      socket.write("GET /health HTTP/1.1\r\nHost: localhost\r\n");
      dribbles.push(setInterval(() => socket.write("X"), 500));
    };
    const closings = [
      closedAfter(tcpConnect(port(https), "127.0.0.1"), started),
      closedAfter(tlsConnect({ port: port(https), host: "127.0.0.1", servername: "localhost", ca }), started),
      (() => {
        const socket = tlsConnect({ port: port(https), host: "127.0.0.1", servername: "localhost", ca }, () =>
          dribble(socket),
        );
        return closedAfter(socket, started);
      })(),
      closedAfter(tcpConnect(port(http), "127.0.0.1"), started),
      (() => {
        const socket = tcpConnect(port(http), "127.0.0.1", () => dribble(socket));
        return closedAfter(socket, started);
      })(),
    ];

    // While both queries run, /health answers at once on both listeners (it used to wait for the query).
    const health: number[] = [];
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 500));
      for (const origin of [https, http]) {
        const t = Date.now();
        const res = await call(`${origin}/health`, { ca });
        expect(res.status).toBe(200);
        health.push(Date.now() - t);
      }
    }
    expect(Math.max(...health)).toBeLessThan(1_000);

    const closed = await Promise.all(closings);
    for (const t of dribbles) clearInterval(t);
    for (const ms of closed) expect(ms).toBeLessThan(HEADERS_LIMIT_S * 1000 + 3_000);

    // Each query is answered (the HTTPS one used to be closed without a byte once the silence limit passed), by
    // its function's limit: the engine's time-out answer, or the query's own error if it stopped in time.
    for (const { a, ms } of await Promise.all(slow)) {
      if (a instanceof Error) throw a;
      expect(ms).toBeGreaterThan(HEADERS_LIMIT_S * 1000);
      expect(ms).toBeLessThan(FUNCTION_LIMIT_MS + MARGIN_MS);
      if (a.status === 503) expect(a.json()).toEqual({ message: "Service Unavailable" });
      else expect(a.json()).toMatchObject({ error: { code: 500, details: [expect.stringMatching(/took too long/)] } });
    }
    // A function stopped at its limit is said so in the log, and a fresh instance answers the next query.
    if (engine.lines.some((l) => l.includes('"message":"function timed out: its instance was stopped"'))) {
      expect(engine.lines.join("\n")).toContain('"function":"mapgate-service"');
    }
    const count = await call(`${layer(https)}/query?where=1%3D1&returnCountOnly=true&f=json`, { ca });
    expect(count.json()).toEqual({ count: 241 });
  }, 90_000);
});
