// `node bench/draw-profile.ts [view, e.g. places-city]`: where a draw-path view's CPU goes in mapgate's local
// engine (the tile queries of bench/draw-queries.json). The engine (bench/cpu-profile.ts preloaded into it and its
// worker threads) is profiled only while 10 connections cycle through the view's tiles; printed for the main thread
// (HTTP, the gateway, the hop to a worker, the store) and for each function worker that answered (/query runs there:
// the pipeline, the catalog, the reader, the plan, the rows, the encoding), with CPU per request; or, with
// MAPGATE_BENCH_PROFILE_KIND=heap, what each thread allocates per request and where (its garbage is what the
// collector's threads cost).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { call } from "../test/helpers/http.ts";
import { drawViews, seaView } from "./draw.ts";
import { type Frame, type HeapProfile, type Profile, READ_STEPS, summarize, summarizeHeap } from "./profile-summary.ts";
import { benchEngine } from "./reads.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const only = process.argv[2];
/** MAPGATE_BENCH_PROFILE_KIND=heap: what each request allocates instead of where its CPU goes. */
const HEAP = process.env.MAPGATE_BENCH_PROFILE_KIND === "heap";

/** The parts of the query's path, matched on the frame's file anywhere on the stack: inclusive time. */
const DRAW_STEPS: readonly [string, (f: Frame) => boolean][] = [
  ...READ_STEPS,
  ["worker hop (function-pool, function-worker)", (f) => /infra\/local\/function-(pool|worker)/.test(f.url)],
  ["catalog (shared/catalog)", (f) => f.url.includes("/shared/catalog.ts")],
  ["service path (shared/serving)", (f) => f.url.includes("/shared/serving/")],
  ["feature resource (serve.ts)", (f) => f.url.includes("/shared/features/serve.ts")],
  ["open dataset (sources, storage)", (f) => /shared\/features\/sources\.ts|shared\/storage\//.test(f.url)],
  ["query (query.ts)", (f) => f.url.includes("/shared/features/query.ts")],
  ["plan (plan.ts, where)", (f) => /shared\/features\/(plan|where[-\w]*)\.ts/.test(f.url)],
  ["SQL (sql.ts, sql/)", (f) => /shared\/features\/sql(\.ts|\/)/.test(f.url)],
  ["rows (dataset, geopackage)", (f) => /shared\/features\/(dataset|geopackage)\.ts/.test(f.url)],
  ["spatial test, decode (geometry/spatial, wkb)", (f) => /geometry\/(spatial|wkb|jts)\.ts/.test(f.url)],
  ["project, generalize", (f) => /geometry\/(projection|generalize)\.ts/.test(f.url)],
  ["PBF (output.ts, geometry/pbf, quantize)", (f) => /features\/output\.ts|geometry\/(pbf|quantize)\.ts/.test(f.url)],
  ["render (shared/http/render)", (f) => f.url.includes("/shared/http/render.ts")],
];

const work = mkdtempSync(join(tmpdir(), "mapgate-draw-profile-"));
const file = join(work, "engine.cpuprofile");
const engine = await benchEngine(file, "cpu-profile");
try {
  const http = engine.ready.http.replace("localhost", "127.0.0.1");
  const world = (await call(`${http}/arcgis/rest/services/World?f=json`)).json<{ services: { name: string }[] }>();
  const sea = seaView(drawViews());
  const views = [...drawViews(), ...(sea ? [{ ...sea, view: "sea" }] : [])];
  for (const v of views.filter((x) => !only || `${x.layer}-${x.view}`.includes(only))) {
    const s = world.services.find((x) => x.name.startsWith(`World/${v.layer}_`));
    if (!s) throw new Error(`no ${v.layer} service`);
    const requests = v.tiles.map((q) => ({
      method: "GET" as const,
      path: `/arcgis/rest/services/${s.name}/FeatureServer/0/query${q}`,
    }));
    await autocannon({ url: http, connections: 10, duration: 1, requests }); // warm
    for (const f of readdirSync(work)) rmSync(join(work, f), { force: true });
    process.kill(engine.ready.pid, "SIGUSR2");
    await new Promise((r) => setTimeout(r, 200));
    const r = await autocannon({ url: http, connections: 10, duration: SECONDS, requests });
    process.kill(engine.ready.pid, "SIGUSR2");
    for (let i = 0; i < 250 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 500)); // the workers' writes may still be under way
    const total = r.requests.total;
    console.log(`\n${v.layer} ${v.view}: ${r.requests.average.toFixed(0)} tiles/s while profiled (${total} tiles)`);
    for (const f of readdirSync(work).sort()) {
      const profile = JSON.parse(readFileSync(join(work, f), "utf8")) as Profile & HeapProfile;
      console.log(`${f === "engine.cpuprofile" ? "main thread" : f.replace("engine.cpuprofile.", "")}:`);
      if (HEAP) summarizeHeap(profile, total);
      else summarize(profile, DRAW_STEPS, total);
    }
  }
} finally {
  await engine.stop();
  rmSync(work, { recursive: true, force: true });
}
