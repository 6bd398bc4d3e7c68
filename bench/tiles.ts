// Tile figures: a public map tile through the local engine next to a bare node:http server answering the same
// bytes from memory (same run, same load), and, in-process, the warm tile function next to the two reads it
// cannot avoid (the bundle's index record and the tile's bytes) with the DynamoDB requests it makes per tile.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import autocannon from "autocannon";
import { readBundleTile } from "#shared/caches/bundle.ts";
import { SERVICE_PATH } from "#shared/system.ts";
import type { RunningEngine } from "../test/helpers/engine.ts";
import { apiEvent, lambdaContext } from "../test/helpers/in-process.ts";
import { tileOrganization } from "../test/helpers/tile-organization.ts";
import { dynamoRequests } from "./requests.ts";

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);

/** Public tile requests per second: the engine vs bare node:http with the same bytes and headers. */
export async function tileLoad(engine: RunningEngine, seconds: number): Promise<void> {
  const url = `${engine.ready.http}/arcgis/rest/services/World_Basemap/MapServer/tile/1/0/1`.replace(
    "localhost",
    "127.0.0.1",
  );
  const sample = await fetch(url);
  const body = Buffer.from(await sample.arrayBuffer());
  if (sample.status !== 200 || body.length === 0) throw new Error(`tile request failed: ${sample.status}`);
  const headers: Record<string, string> = {};
  sample.headers.forEach((v, k) => {
    if (!["date", "connection", "keep-alive", "transfer-encoding"].includes(k)) headers[k] = v;
  });
  const bare = createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
  await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;
  const run = async (u: string) => {
    const r = await autocannon({ url: u, connections: 10, duration: seconds });
    return { rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx };
  };
  await run(url);
  const mine = await run(url);
  const base = await run(bareUrl);
  bare.close();
  console.log(
    `\nTiles: GET …/World_Basemap/MapServer/tile/1/0/1 (public, ${body.length} B PNG), 10 connections × ${seconds} s`,
  );
  console.log(`${"".padEnd(30)}${"req/s".padStart(9)}${"p50 ms".padStart(9)}${"errors".padStart(9)}`);
  console.log(`${"mapgate local engine".padEnd(30)}${fmt(mine.rps, 0)}${fmt(mine.p50)}${fmt(mine.errors, 0)}`);
  console.log(`${"bare node:http, same bytes".padEnd(30)}${fmt(base.rps, 0)}${fmt(base.p50)}${fmt(base.errors, 0)}`);
  console.log(`ratio (mapgate / bare): throughput ${(mine.rps / base.rps).toFixed(3)}`);
}

/** The warm tile function in-process: its time per tile next to the storage reads alone, and its requests. */
export async function tileFunction(runs = 2000): Promise<void> {
  const { registerService } = await import("#infra/admin/operations.ts");
  const { FolderStorage } = await import("#shared/storage/folder.ts");
  const handler = (await import("#functions/service.ts")).handler;
  const { server, store, folder, admin } = await tileOrganization("tiles", 2);
  await registerService(server.serverId, {
    name: "Basemap",
    type: "MapServer",
    owner: admin,
    access: "public",
    cache: { store, path: "/Basemap" },
  });
  const path = "/tiles/rest/services/Basemap/MapServer/tile/2/1/2";
  const event = () =>
    apiEvent(path, { pathParameters: { server: "tiles", path: "Basemap/MapServer/tile/2/1/2" }, route: SERVICE_PATH });
  const first = await handler(event(), lambdaContext());
  if (first.statusCode !== 200 || !first.isBase64Encoded) throw new Error(`tile failed: ${first.body?.slice(0, 200)}`);
  const before = dynamoRequests();
  await handler(event(), lambdaContext());
  const requests = dynamoRequests() - before;
  const storage = new FolderStorage(folder);
  const time = async (fn: () => Promise<unknown>) => {
    const t = performance.now();
    for (let i = 0; i < runs; i++) await fn();
    return ((performance.now() - t) * 1000) / runs;
  };
  const reads = await time(() => readBundleTile(storage, "Basemap/_alllayers", 2, 1, 2));
  const warm = await time(() => handler(event(), lambdaContext()));
  console.log(`\nTile function, warm, in-process (${runs} sequential anonymous requests for a public tile)`);
  console.log(`  the two storage reads alone (index record + tile)   ${reads.toFixed(0).padStart(6)} µs`);
  console.log(`  the whole function (pipeline, catalog, tile)        ${warm.toFixed(0).padStart(6)} µs`);
  console.log(`  ratio (reads / function)                            ${(reads / warm).toFixed(3)}`);
  console.log(
    `  DynamoDB requests per tile: ${requests} (one BatchGetItem: the anonymous caller's organization with the catalog version; the hosted server, the service record and its cache description are kept by the warm function)`,
  );
}
