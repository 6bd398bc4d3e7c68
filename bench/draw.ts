// The draw path (`BENCH_ONLY=draw`): the tile queries the ArcGIS Maps SDK for JavaScript makes to draw the demo's
// `countries` (polygons) and `places` (points) in a MapView, at a world view and at a city view, replayed from the
// record bench/draw-record.ts made of them (bench/draw-queries.json: `resultType=tile`, `quantizationParameters` in
// view mode from each 512-pixel tile's upper left, f=pbf, the outFields the renderer names). Each view's tiles are
// answered by mapgate's local engine and by a floor (bench/draw-floor.ts: bare node:http, the same statement on
// node:sqlite, the same geometry work and mapgate's own PBF encoder), which must answer the same bytes for every
// tile before anything is timed. Printed per view: tiles per second under load (10 connections cycling through the
// view's tiles, runs taken in turns, medians), each process's CPU time per tile (from /proc), bytes per tile, the
// ratio with its goal, and the slowest tile when the view's tiles are sent at once, as the SDK sends them, against
// the time the SDK waits for an answer. A last view, "places sea", is the places city tiles moved over open sea: no
// rows, so mapgate's CPU beside the floor's there is its fixed cost per request. `DRAW_ONLY=places-city,sea` runs some.
//
// Figures (CPU ms per tile, mapgate / floor, and the CPU ratio floor/mapgate; 2 cores shared with other developers,
// so the floor's own figure moves by ±20% between runs: see docs/performance.md#the-draw-path):
//   before (load average 0.6 → 6.0): countries world 22.5 / 18.3 (0.81), countries city 4.58 / 2.96 (0.65),
//     places world 45.8 / 47.4 (1.04), places city 1.78 / 0.26 (0.15);
//   after (load 9.5 → 10.8): countries world 23.9 / 20.4 (0.85), countries city 4.26 / 3.16 (0.74), places world
//     95.9 / 75.3 (0.79; the old engine, run back to back with the new on it, cost the same: 73.6 and 71.5 ms),
//     places city 1.29 / 0.26 (0.21), places sea 0.93 / 0.06 (0.06): a request's fixed cost, ~0.9 ms, is what keeps
//     small tiles from the goal;
//   a later run on a quieter machine (load 2.2 → 2.3), by rate (tiles/s, mapgate / floor) and by CPU: countries world
//     1.33 (0.78), countries city 0.87 (0.54), places world 1.43 (0.85), places city 0.25 (0.18), places sea 0.15 (0.10).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { ROOT, startEngine } from "../test/helpers/engine.ts";
import { call } from "../test/helpers/http.ts";
import type { DrawFloorTile } from "./draw-floor.ts";
import { DRAW_FIXTURE, type DrawFixture, viewName } from "./draw-views.ts";
import { serve } from "./features.ts";
import { median } from "./stats.ts";

const CONNECTIONS = 10;
const ROUNDS = 3;
/** How long the SDK waits for an answer: @arcgis/core 5.1's default `esriConfig.request.timeout`, 62 s. */
const SDK_TIMEOUT_MS = 62_000;
/** The draw path's goal: mapgate's tiles per second at least this share of the floor's. */
const GOAL = 0.8;

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);

/** The fixture's tile views, each with its distinct tiles in the order first sent and how many requests were sent. */
export function drawViews(fixture: DrawFixture = readFixture()) {
  return fixture.views
    .filter((v) => v.mode === "tile")
    .map((v) => ({ ...v, sent: v.queries.length, tiles: [...new Set(v.queries)] }));
}

/** Where the sea view's tiles are moved to: the middle of the North Atlantic (Web Mercator metres), with no place. */
const OPEN_SEA = { x: -3_896_182, y: 4_865_942 } as const;

/**
 * Besides the recorded views, the places city view's tiles moved over open sea by whole tiles (the same level,
 * size, grid and parameters; envelope and quantization extent moved alike): every part of a request but its rows.
 * What mapgate spends on it beside the floor is its fixed cost per request.
 */
export function seaView(views: ReturnType<typeof drawViews>) {
  const city = views.find((v) => v.layer === "places" && v.view === "city");
  if (!city) return undefined;
  type Envelope = { xmin: number; ymin: number; xmax: number; ymax: number };
  const envelope = (q: string) => JSON.parse(new URLSearchParams(q).get("geometry") ?? "{}") as Envelope;
  // One move for every tile, by whole tiles of the first: the view keeps its shape.
  const first = envelope(city.tiles[0] ?? "");
  const w = first.xmax - first.xmin;
  const h = first.ymax - first.ymin;
  const dx = Math.round((OPEN_SEA.x - first.xmin) / w) * w;
  const dy = Math.round((OPEN_SEA.y - first.ymin) / h) * h;
  const moved = city.tiles.map((q) => {
    const p = new URLSearchParams(q);
    const g = envelope(q);
    const q2 = JSON.parse(p.get("quantizationParameters") ?? "{}") as { extent: Envelope };
    const shift = <T extends Envelope>(e: T): T => ({
      ...e,
      xmin: e.xmin + dx,
      xmax: e.xmax + dx,
      ymin: e.ymin + dy,
      ymax: e.ymax + dy,
    });
    p.set("geometry", JSON.stringify(shift(g)));
    p.set("quantizationParameters", JSON.stringify({ ...q2, extent: shift(q2.extent) }));
    return `?${p.toString()}`;
  });
  return { ...city, label: `places sea (z${city.zoom})`, tiles: [...new Set(moved)], sent: moved.length };
}

export const readFixture = (): DrawFixture => JSON.parse(readFileSync(join(ROOT, DRAW_FIXTURE), "utf8")) as DrawFixture;

let clockTicks: number | undefined;

/** CPU seconds (user + system) a process and every process under it have used so far, from /proc. */
export function treeCpuSeconds(pid: number): number {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  let ticks = 0;
  const stack = [pid];
  for (let p = stack.pop(); p !== undefined; p = stack.pop()) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${p}/stat`, "utf8");
    } catch {
      continue; // gone since it was listed
    }
    // After the command's closing parenthesis: state, ppid, … utime and stime are the 12th and 13th fields.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
    for (const task of readdirSync(`/proc/${p}/task`, { withFileTypes: true })) {
      const children = readFileSync(`/proc/${p}/task/${task.name}/children`, "utf8").trim();
      if (children) stack.push(...children.split(" ").map(Number));
    }
  }
  return ticks / clockTicks;
}

interface Run {
  tps: number;
  cpuPerTile: number;
  maxMs: number;
  errors: number;
}

/**
 * One run: connections cycling through the view's tile paths; tiles per second and CPU per tile of `pid`. A view
 * whose tiles take longer than the run to answer is run again for one pass over all its tiles instead (after the
 * first run's last answers: the next run starts on an idle server).
 */
async function run(base: string, paths: readonly string[], pid: number, seconds: number): Promise<Run> {
  const requests = paths.map((path) => ({ method: "GET" as const, path }));
  const options = { url: base, connections: CONNECTIONS, timeout: SDK_TIMEOUT_MS / 1000, requests };
  let cpu = treeCpuSeconds(pid);
  let r = await autocannon({ ...options, duration: seconds });
  if (r.requests.total < paths.length) {
    await fetch(`${base}${paths[0]}`).then((res) => res.arrayBuffer());
    cpu = treeCpuSeconds(pid);
    r = await autocannon({ ...options, amount: paths.length });
  }
  const used = treeCpuSeconds(pid) - cpu;
  const tiles = r.requests.total;
  return {
    tps: tiles / r.duration,
    cpuPerTile: used / Math.max(tiles, 1),
    maxMs: r.latency.max,
    errors: r.errors + r.non2xx + r.timeouts,
  };
}

/** The view's tiles sent at once, as the SDK sends a view's; the slowest answer in ms. */
async function allAtOnce(urls: readonly string[]): Promise<number> {
  const times = await Promise.all(
    urls.map(async (u) => {
      const t = performance.now();
      const res = await fetch(u);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${res.status} ${u}`);
      return performance.now() - t;
    }),
  );
  return Math.max(...times);
}

/** Both answers decoded, compared feature by feature: the first difference, or undefined. */
async function difference(mine: Uint8Array, floor: Uint8Array): Promise<string | undefined> {
  const { default: decode } = await import("arcgis-pbf-parser");
  const a = decode(mine).featureCollection.features;
  const b = decode(floor).featureCollection.features;
  if (a.length !== b.length) return `mapgate answered ${a.length} features, the floor ${b.length}`;
  const i = a.findIndex((f, k) => JSON.stringify(f) !== JSON.stringify(b[k]));
  return i >= 0 ? `feature ${i} differs` : undefined;
}

export async function drawBench(seconds: number): Promise<void> {
  const fixture = readFixture();
  // `DRAW_ONLY=places-city,countries` times the views whose `<layer>-<view>` holds one of its parts.
  const only = process.env.DRAW_ONLY?.split(",").filter(Boolean);
  const sea = seaView(drawViews(fixture));
  const all: (ReturnType<typeof drawViews>[number] & { label?: string })[] = [
    ...drawViews(fixture),
    ...(sea ? [sea] : []),
  ];
  const views = all.filter((v) => !only || only.some((o) => (v.label ?? `${v.layer}-${v.view}`).includes(o)));
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN" } });
  const dir = mkdtempSync(join(tmpdir(), "mapgate-draw-"));
  const load = [loadavg()];
  try {
    const http = engine.ready.http.replace("localhost", "127.0.0.1");
    const world = (await call(`${http}/arcgis/rest/services/World?f=json`)).json<{ services: { name: string }[] }>();
    const layerPath = (table: string) => {
      const s = world.services.find((x) => x.name.startsWith(`World/${table}_`));
      if (!s) throw new Error(`no ${table} service in the World folder`);
      return `/arcgis/rest/services/${s.name}/FeatureServer/0`;
    };
    const specs: DrawFloorTile[] = views.flatMap((v) => v.tiles.map((query) => ({ table: v.layer, query })));
    const specFile = join(dir, "tiles.json");
    writeFileSync(specFile, JSON.stringify(specs));
    const file = join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH);
    const floor = await serve("draw-floor.ts", [file, specFile], "floor");
    const floorPid = floor.child.pid as number;
    try {
      // Every tile's two answers compared before anything is timed: a floor that answers less is no floor.
      let at = 0;
      const prepared = [];
      for (const v of views) {
        const mine = v.tiles.map((q) => `${layerPath(v.layer)}/query${q}`);
        const theirs = v.tiles.map(() => `/${at++}`);
        let bytes = 0;
        let features = 0;
        const { default: decode } = await import("arcgis-pbf-parser");
        for (const [i, path] of mine.entries()) {
          const a = await call(`${http}${path}`);
          const b = await call(`${floor.url}${theirs[i]}`);
          if (a.headers["content-type"] !== "application/x-protobuf")
            throw new Error(`${path}: ${a.text.slice(0, 300)}`);
          if (!a.body.equals(b.body))
            throw new Error(
              `${v.label ?? viewName(v)} tile ${i}: the floor's answer is not mapgate's (${await difference(a.body, b.body)})`,
            );
          bytes += a.body.length;
          features += decode(new Uint8Array(a.body)).featureCollection.features.length;
        }
        prepared.push({ v, mine, theirs, bytes: bytes / mine.length, features: features / mine.length });
      }

      console.log(
        `\nDraw path: the ArcGIS Maps SDK ${fixture.sdk}'s tile queries (recorded in ${DRAW_FIXTURE}, a ${fixture.viewport.width}×${fixture.viewport.height} view), f=pbf quantized; mapgate's local engine vs a floor (bare node:http, the same statement on node:sqlite, mapgate's PBF encoder)`,
      );
      console.log(
        `  ${CONNECTIONS} connections cycling through each view's tiles, median of ${ROUNDS} runs of ${seconds} s taken in turns; CPU from /proc (each process and its children); every tile's two answers byte-identical`,
      );
      console.log(
        `${"view".padEnd(26)}${"tiles".padStart(6)}${"sent".padStart(6)}${"feat/tile".padStart(10)}${"KiB/tile".padStart(9)}${"tiles/s".padStart(9)}${"CPU ms".padStart(9)}${"floor t/s".padStart(10)}${"CPU ms".padStart(9)}${"ratio".padStart(9)}${"goal".padStart(7)}${"CPU ratio".padStart(10)}`,
      );
      const worst: string[] = [];
      for (const p of prepared) {
        const runs: { mine: Run; floor: Run }[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const mine = await run(http, p.mine, engine.ready.pid, seconds);
          const theirs = await run(floor.url, p.theirs, floorPid, seconds);
          runs.push({ mine, floor: theirs });
        }
        const m = (pick: (r: { mine: Run; floor: Run }) => number) => median(runs.map(pick));
        const tps = m((r) => r.mine.tps);
        const floorTps = m((r) => r.floor.tps);
        const cpu = m((r) => r.mine.cpuPerTile);
        const floorCpu = m((r) => r.floor.cpuPerTile);
        const errors = runs.reduce((n, r) => n + r.mine.errors + r.floor.errors, 0);
        const name = p.v.label ?? `${p.v.layer} ${p.v.view} (z${p.v.zoom})`;
        console.log(
          `${name.padEnd(26)}${String(p.v.tiles.length).padStart(6)}${String(p.v.sent).padStart(6)}${p.features.toFixed(0).padStart(10)}${(p.bytes / 1024).toFixed(1).padStart(9)}${fmt(tps)}${fmt(cpu * 1000, 2)}${fmt(floorTps).padStart(10)}${fmt(floorCpu * 1000, 2)}${fmt(tps / floorTps, 2)}${`≥ ${GOAL}`.padStart(7)}${fmt(floorCpu / cpu, 2).padStart(10)}${errors ? `   errors ${errors}` : ""}`,
        );
        const once = await allAtOnce(p.mine.map((path) => `${http}${path}`));
        const loaded = Math.max(...runs.map((r) => r.mine.maxMs));
        worst.push(
          `  ${name.padEnd(24)} all ${p.v.tiles.length} tiles at once: slowest ${once.toFixed(0)} ms; under load: slowest ${loaded.toFixed(0)} ms`,
        );
      }
      load.push(loadavg());
      console.log(`Slowest tile of each view against the ${SDK_TIMEOUT_MS / 1000} s the SDK waits for an answer:`);
      for (const line of worst) console.log(line);
      console.log(
        `  ratio: mapgate's tiles/s over the floor's; CPU ratio: the floor's CPU per tile over mapgate's (1 = no work beyond the floor's). Load average (1, 5, 15 min) before ${load[0]?.map((l) => l.toFixed(1)).join(" ")}, after ${load[1]?.map((l) => l.toFixed(1)).join(" ")} on ${availableParallelism()} cores`,
      );
    } finally {
      floor.child.kill();
    }
  } finally {
    await engine.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(engine.dataDir, { recursive: true, force: true });
  }
}
