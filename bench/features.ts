// Feature layer figures, on the demo's `places` layer (a GeoPackage table of points), each a ratio measured in
// this run with its goal beside it:
//   1. an envelope + where query answering a page of 1,000 points as f=json: mapgate's local engine vs Koop
//      (koop-core + featureserver with a provider serving the same table), vs MapServer 8's OGC API Features where
//      it is installed (`npm run bench:setup`; bench/feature-mapserver.ts) and vs a floor (bare node:http doing
//      the same SELECT on node:sqlite and one JSON.stringify, in one process);
//   2. returnCountOnly over the whole layer: mapgate vs Koop;
//   3. f=pbf bytes vs f=json bytes for the same answer, and how far the decoded coordinates lie from the stored;
//   4. memory per query: the query step's heap and RSS after N queries in a process of its own, set against one
//      page's answer and the layer's size;
//   5. the service function's cold import vs an empty module and a service function without feature layers, and
//      whether node:sqlite or pg load before a query needs them.
// Every server runs in a process of its own and autocannon in this one, so each gets a core of its own on two.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { build, type Metafile } from "esbuild";
import { DEMO_GEOPACKAGE_PATH, DEMO_LAYERS_FOLDER } from "#infra/admin/demo.ts";
import { esbuildOptions } from "#infra/aws/bundling.ts";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization } from "../test/helpers/admin.ts";
import { ROOT, type RunningEngine, startEngine } from "../test/helpers/engine.ts";
import { call } from "../test/helpers/http.ts";
import { mapServerMissing, startMapServer } from "./feature-mapserver.ts";
import { importRuns } from "./import-time.ts";
import { median } from "./stats.ts";

const CONNECTIONS = 10;
const TABLE = "places";
const PAGE = 1000;
/** Western Europe; with the where clause below, far more points than one page. */
const ENVELOPE = [-5, 42, 8, 51] as const;
const WHERE_FIELD = "country";
const WHERE_VALUE = "FR";
/** Queries the memory figure runs in its own process. */
const MEMORY_QUERIES = 300;

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

interface Load {
  rps: number;
  p50: number;
  requests: number;
  errors: number;
  /** Each run's rate, in the order taken, when the figure is a median of several. */
  runs?: number[];
  /** The server process's CPU seconds (user + system, every thread) per 1,000 answers, when its process is known. */
  cpu?: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times (Linux's USER_HZ). */
const TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** A process's parent and its CPU seconds so far (its threads' and its ended children's), from /proc. */
function processStat(pid: number | string): { ppid: number; seconds: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command's parenthesis: ppid is the 2nd; utime, stime, cutime and cstime the 12th to 15th.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(f[1]), seconds: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICKS };
  } catch {
    return undefined;
  }
}

/**
 * A server's CPU seconds so far: its process (every thread) and the processes it runs (MapServer's FastCGI
 * processes under lighttpd), from /proc; undefined where there is none.
 */
function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  const own = processStat(pid);
  if (!own) return undefined;
  let seconds = own.seconds;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const child = processStat(entry);
    if (child?.ppid === pid) seconds += child.seconds;
  }
  return seconds;
}

/** Answers a run must count before its rate is read: a server taking seconds per answer gets a longer run. */
const MIN_ANSWERS = CONNECTIONS;
const MAX_SECONDS = 30;
/**
 * Runs per server, taken in turns (a, b, c, a, b, c…) and read by their median: a neighbour's burst of work on a
 * shared machine then slows one run of each server rather than all the runs of one.
 */
const ROUNDS = 5;
/** The run length a slow server was found to need, kept for its later runs. */
const longer = new Map<string, number>();

/**
 * Requests per second over `seconds` (longer for a slow server, see MIN_ANSWERS). Each run ends with one more
 * request awaited: it queues behind what the run left unanswered, so the next run starts on an idle server.
 */
async function load(url: string, seconds: number, pid?: number): Promise<Load> {
  let duration = Math.max(seconds, longer.get(url) ?? 0);
  for (;;) {
    const before = cpuSeconds(pid);
    const r = await autocannon({ url, connections: CONNECTIONS, duration, timeout: MAX_SECONDS * 2 });
    await call(url);
    const after = cpuSeconds(pid);
    const answers = r.requests.total;
    if (answers < MIN_ANSWERS && duration < MAX_SECONDS) {
      duration = Math.min(MAX_SECONDS, Math.ceil((duration * MIN_ANSWERS) / Math.max(answers, 1)));
      longer.set(url, duration);
      continue;
    }
    // The run's answers and the one awaited after it.
    const cpu = before !== undefined && after !== undefined ? ((after - before) * 1000) / (answers + 1) : undefined;
    return {
      rps: answers / r.duration,
      p50: r.latency.p50,
      requests: answers,
      errors: r.errors + r.non2xx,
      ...(cpu !== undefined ? { cpu } : {}),
    };
  }
}

/**
 * The median of the rounds' own ratios of `a` to `b` (runs taken in the same round): a burst of a neighbour's work
 * slows the runs of one round, and this ratio moves less with it than the ratio of medians.
 */
function roundRatio(a: Load, b: Load): number {
  const ratios = (a.runs ?? []).map((r, i) => r / (b.runs?.[i] ?? Number.NaN)).filter(Number.isFinite);
  return ratios.length > 0 ? median(ratios) : a.rps / b.rps;
}

/** Each URL's median run over `rounds` rounds taken in turns (`pids`: the server process of each, for its CPU). */
async function inTurns(
  urls: readonly string[],
  seconds: number,
  rounds = ROUNDS,
  pids: readonly (number | undefined)[] = [],
): Promise<Load[]> {
  const runs: Load[][] = urls.map(() => []);
  // One short unmeasured run each first: a function worker's first seconds compile the query's path, which the
  // first measured round of mapgate (and not of the one-file floor) paid.
  if (rounds > 1) for (const url of urls) await load(url, 1);
  for (let round = 0; round < rounds; round++)
    for (const [i, url] of urls.entries()) runs[i]?.push(await load(url, seconds, pids[i]));
  return runs.map((list) => {
    const sorted = [...list].sort((a, b) => a.rps - b.rps);
    const median = sorted[Math.floor(sorted.length / 2)] as Load;
    const cpus = list.flatMap((l) => (l.cpu === undefined ? [] : [l.cpu])).sort((a, b) => a - b);
    return {
      ...median,
      ...(cpus.length > 0 ? { cpu: cpus[Math.floor(cpus.length / 2)] } : {}),
      requests: list.reduce((n, l) => n + l.requests, 0),
      errors: list.reduce((n, l) => n + l.errors, 0),
      runs: list.map((l) => l.rps),
    };
  });
}

/** A bench child process serving HTTP: started, its port read from the line it prints, stopped by the caller. */
export async function serve(
  script: string,
  args: string[],
  label: string,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(ROOT, "bench", script), ...args], {
    cwd: ROOT,
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: "WARN" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${script} exited (${code})`)));
    let seen = "";
    child.stdout.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const m = new RegExp(`${label} (\\d+)`).exec(seen);
      if (m?.[1]) resolve(m[1]);
    });
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** The figures' query: a page of points inside the envelope matching the where clause. */
export const queryParams = (extra: Record<string, string>) =>
  new URLSearchParams({
    where: `${WHERE_FIELD} = '${WHERE_VALUE}'`,
    geometry: ENVELOPE.join(","),
    geometryType: "esriGeometryEnvelope",
    inSR: "4326",
    spatialRel: "esriSpatialRelIntersects",
    outFields: "*",
    resultRecordCount: String(PAGE),
    ...extra,
  });
const countParams = () => new URLSearchParams({ where: "1=1", returnCountOnly: "true", f: "json" });

interface EsriFeatureSet {
  features: { attributes: Record<string, unknown>; geometry: { x: number; y: number } }[];
  exceededTransferLimit?: boolean;
  [member: string]: unknown;
}

/** The demo's `places` layer on a running engine, over loopback HTTP. */
export function placesLayer(engine: RunningEngine): string {
  const { worldStore } = demoOrganization(engine.dataDir);
  const service = `${TABLE}_${stableItemId(worldStore, `/world.gpkg/${TABLE}`).slice(0, 6)}`;
  return `${engine.ready.http.replace("localhost", "127.0.0.1")}/arcgis/rest/services/${DEMO_LAYERS_FOLDER}/${service}/FeatureServer/0`;
}

export async function featureBench(seconds: number): Promise<void> {
  // The engine's metric lines (one per request) are written as on Lambda but not read back by this process, which
  // is also the load generator (as in bench/reads.ts): reading them slowed the load on mapgate and not on its peers.
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN", MAPGATE_LOG: "/dev/null" } });
  const children: ChildProcess[] = [];
  const stops: (() => void)[] = [];
  try {
    const file = await measure(engine, seconds, children, stops);
    for (const c of children.splice(0)) c.kill();
    for (const stop of stops.splice(0)) stop();
    memory(file);
  } finally {
    for (const c of children) c.kill();
    for (const stop of stops) stop();
    await engine.stop();
    rmSync(engine.dataDir, { recursive: true, force: true });
  }
  await coldStart();
}

async function measure(
  engine: RunningEngine,
  seconds: number,
  children: ChildProcess[],
  stops: (() => void)[],
): Promise<string> {
  const file = join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH);
  const layer = placesLayer(engine);

  const koop = await serve("feature-koop.ts", [file, TABLE], "koop");
  children.push(koop.child);
  const koopLayer = `${koop.url}/gpkg/rest/services/${TABLE}/FeatureServer/0`;

  // The answers compared before any is timed: the same page of the same points, the same count.
  const jsonUrl = `${layer}/query?${queryParams({ f: "json" })}`;
  const mine = await call(jsonUrl);
  const answer = mine.json<EsriFeatureSet>();
  if (!Array.isArray(answer.features)) throw new Error(`mapgate's query failed: ${mine.text.slice(0, 300)}`);
  const total = (await call(`${layer}/query?${countParams()}`)).json<{ count: number }>().count;
  if (!(total >= 100_000)) throw new Error(`the ${TABLE} layer holds ${total} points, fewer than the bench needs`);
  if (answer.features.length !== PAGE || answer.exceededTransferLimit !== true)
    throw new Error(`the query answered ${answer.features.length} points, not a full page of ${PAGE}`);
  const koopJsonUrl = `${koopLayer}/query?${queryParams({ f: "json" })}`;
  const theirs = (await call(koopJsonUrl)).json<EsriFeatureSet>();
  const ids = (a: EsriFeatureSet) => a.features.map((f) => f.attributes[String(answer.objectIdFieldName)]).join();
  if (ids(theirs) !== ids(answer)) throw new Error("Koop and mapgate answered different points");
  const koopCount = (await call(`${koopLayer}/query?${countParams()}`)).json<{ count: number }>().count;
  if (koopCount !== total) throw new Error(`Koop counted ${koopCount}, mapgate ${total}`);

  // MapServer, where installed: the same page of the same points in the same order (its own GeoJSON).
  const missing = mapServerMissing();
  let mapServerUrl: string | undefined;
  let mapServerPid: number | undefined;
  if (!missing) {
    const peer = await startMapServer(file, TABLE, String(answer.objectIdFieldName), {
      field: WHERE_FIELD,
      value: WHERE_VALUE,
    });
    stops.push(peer.stop);
    mapServerPid = peer.child.pid;
    const page = new URLSearchParams({ f: "json", bbox: ENVELOPE.join(","), limit: String(PAGE) });
    mapServerUrl = `${peer.items}?${page}`;
    const got = (await call(mapServerUrl)).json<{ features?: { id: unknown }[] }>();
    if ((got.features ?? []).map((f) => String(f.id)).join() !== ids(answer))
      throw new Error("MapServer and mapgate answered different points");
  }

  const { features: _features, exceededTransferLimit: _more, ...head } = answer;
  const floor = await serve("feature-floor.ts", [file, JSON.stringify(floorSpec(head))], "floor");
  children.push(floor.child);
  const floorAnswer = await call(floor.url);
  if (floorAnswer.text !== mine.text) throw new Error("the floor's answer is not mapgate's, byte for byte");

  console.log(
    `\nFeatures: the demo layer '${TABLE}' (${total.toLocaleString("en")} points), mapgate's local engine vs Koop and a floor, ${CONNECTIONS} connections, median of ${ROUNDS} runs of ${seconds} s taken in turns, errors summed over them`,
  );
  console.log(
    "  Koop: koop-core + featureserver, a provider answering the table as GeoJSON with a ttl (Koop's memory cache keeps it: Koop filters, never rereads)",
  );
  console.log(
    "  floor: bare node:http, the same SELECT on node:sqlite by the same path (the where's index in id order, the R*Tree probed, the exact test on the envelope's edge, page) and one JSON.stringify",
  );
  console.log(
    "  CPU-s/1k: the server process's CPU seconds (every thread) per 1,000 answers, the median of its runs; ratio: of req/s, the median of the rounds' own (after one unmeasured run each)",
  );
  console.log(
    `${"".padEnd(44)}${"req/s".padStart(9)}${"p50 ms".padStart(9)}${"CPU-s/1k".padStart(9)}${"errors".padStart(9)}${"ratio".padStart(9)}${"goal".padStart(9)}`,
  );
  const row = (name: string, l: Load, ratio?: number, goal?: string) =>
    console.log(
      `${name.padEnd(44)}${fmt(l.rps, 1)}${fmt(l.p50, 1)}${l.cpu === undefined ? "".padStart(9) : fmt(l.cpu, 2)}${fmt(l.errors, 0)}${ratio === undefined ? "".padStart(9) : fmt(ratio, 2)}${(goal ?? "").padStart(9)}   runs ${(l.runs ?? []).map((r) => r.toFixed(1)).join(" ")}`,
    );

  const urls = [jsonUrl, floor.url, koopJsonUrl, ...(mapServerUrl ? [mapServerUrl] : [])];
  const pids = [engine.child.pid, floor.child.pid, koop.child.pid, mapServerPid];
  const [mapgateJson, floorJson, koopJson, mapServerJson] = (await inTurns(urls, seconds, ROUNDS, pids)) as [
    Load,
    Load,
    Load,
    Load | undefined,
  ];
  console.log(`envelope + where, ${PAGE.toLocaleString("en")} points (${kib(mine.body.length)}), f=json`);
  row("  mapgate", mapgateJson);
  row("  floor (bare node:http + node:sqlite)", floorJson, roundRatio(mapgateJson, floorJson), "≥ 0.9");
  row("  Koop", koopJson, roundRatio(mapgateJson, koopJson), "≥ 5");
  if (mapServerJson)
    row("  MapServer 8 (OGC API Features, FastCGI)", mapServerJson, roundRatio(mapgateJson, mapServerJson), "≥ 5");
  else console.log(`  MapServer: ${missing}`);

  const countUrl = `${layer}/query?${countParams()}`;
  const koopCountUrl = `${koopLayer}/query?${countParams()}`;
  // One run each: Koop takes seconds per count (a run, and the wait for its last answers, last half a minute),
  // and the ratio stands an order of magnitude above its goal, where a neighbour's noise cannot move it across.
  const [mapgateCount, koopCountLoad] = (await inTurns([countUrl, koopCountUrl], seconds, 1, [
    engine.child.pid,
    koop.child.pid,
  ])) as [Load, Load];
  console.log("returnCountOnly, the whole layer (one run each)");
  row("  mapgate", mapgateCount);
  row("  Koop", koopCountLoad, mapgateCount.rps / koopCountLoad.rps, "≥ 10");

  await pbfBytes(layer, answer, mine.body.length);

  return file;
}

/**
 * The floor's statement: mapgate's, without its deadline and with the exact test in a function of the floor, on
 * the demo table's layout (its key `fid`, its geometry `geom` and that column's R*Tree) and by the path mapgate
 * chooses for it (shared/features/access.ts): the index on the where's column walked in id order, each entry probed
 * in the R*Tree by id, the exact test only for an entry across the envelope's edge, stopping at the page's end.
 */
function floorSpec(head: Record<string, unknown>) {
  const [xmin, ymin, xmax, ymax] = ENVELOPE;
  const fields = (head.fields as { name: string }[]).map((f) => `"${f.name}"`).join(", ");
  return {
    sql:
      `SELECT ${fields}, geom FROM ${TABLE} AS t WHERE ${WHERE_FIELD} = ?1 AND EXISTS (SELECT 1 FROM rtree_${TABLE}_geom ` +
      "AS x WHERE x.id = t.fid AND x.minx <= ?4 AND x.maxx >= ?2 AND x.miny <= ?5 AND x.maxy >= ?3 AND (CASE WHEN " +
      "x.minx >= ?2 AND x.maxx <= ?4 AND x.miny >= ?3 AND x.maxy <= ?5 THEN 1 ELSE inside(t.geom) = 1 END)) " +
      "ORDER BY fid LIMIT ?6",
    params: [WHERE_VALUE, xmin, ymin, xmax, ymax, PAGE + 1],
    envelope: ENVELOPE,
    pageSize: PAGE,
    head,
  };
}

/** XY tolerance ArcGIS clients compare WGS 84 coordinates with (its default, 1 mm on the ground). */
const WGS84_TOLERANCE = 8.983152841195215e-9;

/**
 * The same answers as PBF: each one's size against the JSON's, and its coordinates against the JSON's. Two pages:
 * every field (this section's page), and the object id alone, the page a map asks for to draw.
 */
async function pbfBytes(layer: string, all: EsriFeatureSet, allBytes: number): Promise<void> {
  const { default: decode } = await import("arcgis-pbf-parser");
  console.log(
    `f=pbf vs f=json bytes, the same ${PAGE.toLocaleString("en")} points${"ratio".padStart(31)}${"goal".padStart(9)}`,
  );
  const oid = String(all.objectIdFieldName);
  for (const [label, outFields] of [
    ["every field (outFields=*)", "*"],
    ["object id only (a map drawing)", oid],
  ] as const) {
    const json = outFields === "*" ? undefined : await call(`${layer}/query?${queryParams({ f: "json", outFields })}`);
    const answer = json ? json.json<EsriFeatureSet>() : all;
    const jsonBytes = json ? json.body.length : allBytes;
    const res = await call(`${layer}/query?${queryParams({ f: "pbf", outFields })}`);
    if (res.headers["content-type"] !== "application/x-protobuf")
      throw new Error(`f=pbf failed: ${res.text.slice(0, 300)}`);
    const decoded = decode(new Uint8Array(res.body)).featureCollection.features;
    if (decoded.length !== answer.features.length) throw new Error("the PBF answer holds another number of features");
    let worst = 0;
    decoded.forEach((f, i) => {
      const exact = answer.features[i]?.geometry;
      if (f.geometry?.type !== "Point" || !exact) throw new Error("a point of the PBF answer did not decode");
      const [x, y] = f.geometry.coordinates as [number, number];
      worst = Math.max(worst, Math.abs(x - exact.x), Math.abs(y - exact.y));
    });
    if (worst > WGS84_TOLERANCE / 2) throw new Error(`PBF coordinates ${worst}° off, beyond ArcGIS's tolerance`);
    const ratio = res.body.length / jsonBytes;
    console.log(
      `  ${label.padEnd(32)}${kib(res.body.length).padStart(9)} / ${kib(jsonBytes).padStart(8)}${fmt(ratio, 3)}${"≤ 0.333".padStart(9)}   coordinates within ${worst.toExponential(0)}°`,
    );
    if (outFields !== "*") continue;
    // What the page's attributes weigh before any framing: their text and their doubles, which PBF writes as they
    // are (a Value per field, in order), as JSON does minus the names and punctuation.
    const doubles = new Set(
      (answer.fields as { name: string; type: string }[])
        .filter((f) => f.type === "esriFieldTypeDouble")
        .map((f) => f.name),
    );
    let text = 0;
    let numbers = 0;
    for (const f of answer.features)
      for (const [k, v] of Object.entries(f.attributes)) {
        if (typeof v === "string") text += Buffer.byteLength(v);
        else if (typeof v === "number" && doubles.has(k)) numbers += 8;
      }
    const n = answer.features.length;
    console.log(
      `    per feature: PBF ${(res.body.length / n).toFixed(0)} B, JSON ${(jsonBytes / n).toFixed(0)} B; the PBF's hold ${(text / n).toFixed(0)} B of attribute text and ${(numbers / n).toFixed(0)} B of doubles, both exact`,
    );
  }
}

/** The query step's memory over many queries, in a process of its own that can collect garbage on demand. */
function memory(file: string): void {
  const out = execFileSync(
    process.execPath,
    ["--expose-gc", join(ROOT, "bench/feature-memory.ts"), file, TABLE, String(MEMORY_QUERIES), `${queryParams({})}`],
    { cwd: ROOT, encoding: "utf8", env: { ...process.env, POWERTOOLS_LOG_LEVEL: "WARN" } },
  );
  type Window = { heapPerQuery: number; rssPerQuery: number; peakRssGrowth: number };
  const m = JSON.parse(out.trim().split("\n").pop() ?? "{}") as {
    queries: number;
    first: Window;
    second: Window;
    pageBytes: number;
    layerBytes: number;
  };
  console.log(
    `Memory: the page above through the query step (plan, SQL, rows, Esri JSON) in one process, two runs of ${m.queries} queries, collected before and after each`,
  );
  for (const [name, w] of [
    ["first", m.first],
    ["second", m.second],
  ] as const)
    console.log(
      `  ${name} ${m.queries}: retained per query heap ${w.heapPerQuery.toFixed(0)} B, RSS ${w.rssPerQuery.toFixed(0)} B; highest RSS after a query ${mib(w.peakRssGrowth)} above the run's start`,
    );
  console.log(
    `  beside one page's answer (${kib(m.pageBytes)}) and the layer's file (${mib(m.layerBytes)}): goal, growth per query ≤ one page, never the layer`,
  );
}

/** Bytes each package or folder of the project puts into a bundle. */
function bundleShares(meta: Metafile, output: string): Map<string, number> {
  const shares = new Map<string, number>();
  for (const [path, input] of Object.entries(meta.outputs[output]?.inputs ?? {})) {
    const at = path.lastIndexOf("node_modules/");
    const parts = at >= 0 ? path.slice(at + "node_modules/".length).split("/") : path.split("/");
    const key = at >= 0 ? parts.slice(0, parts[0]?.startsWith("@") ? 2 : 1).join("/") : parts.slice(0, 2).join("/");
    shares.set(key, (shares.get(key) ?? 0) + input.bytesInOutput);
  }
  return shares;
}

/** Fresh imports per module, taken in turns like the load runs. */
const IMPORTS = 9;

async function coldStart(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "mapgate-bench-"));
  try {
    const empty = join(dir, "empty.mjs");
    writeFileSync(empty, "export {};\n");
    // The service directory's function: the same pipeline and catalog, no feature layer code.
    const modules = [{ id: "empty module", file: empty, meta: undefined as Metafile | undefined }];
    for (const id of ["services-directory", "service"]) {
      const file = join(dir, `${id}.mjs`);
      const result = await build({ ...esbuildOptions(join(ROOT, "functions", `${id}.ts`), file), metafile: true });
      modules.push({ id, file, meta: result.metafile });
    }
    const times = modules.map(() => [] as number[]);
    let builtins: string[] = [];
    for (let i = 0; i < IMPORTS; i++)
      modules.forEach((m, k) => {
        const got = importRuns(m.file, 1);
        times[k]?.push(got.ms);
        if (m.id === "service") builtins = got.builtins;
      });
    const baseline = median(times[0] ?? []);
    console.log(
      `Cold start: the service function's bundle (feature layers, tiles, scenes) in a fresh Node process, median of ${IMPORTS} imports taken in turns`,
    );
    console.log(`${"".padEnd(30)}${"KiB".padStart(9)}${"import ms".padStart(11)}${"× empty".padStart(9)}`);
    modules.forEach((m, k) => {
      const ms = median(times[k] ?? []);
      console.log(
        `${`  ${m.id}`.padEnd(30)}${fmt(statSync(m.file).size / 1024)}${fmt(ms, 2).padStart(11)}${fmt(ms / baseline, 1)}`,
      );
    });
    const service = modules.find((m) => m.id === "service")?.meta;
    if (!service) return;
    const shares = bundleShares(service, Object.keys(service.outputs).find((o) => o.endsWith(".mjs")) ?? "");
    const features = ["shared/features", "jsts", "proj4", "wkt-parser", "mgrs", "pbf", "ieee754"]
      .map((k) => shares.get(k) ?? 0)
      .reduce((a, b) => a + b, 0);
    console.log(
      `  feature-layer code in it: ${kib(features)} (shared/features, jsts, proj4, pbf), most of it behind the query's dynamic import, run by the first query; at import node:sqlite ${builtins.includes("sqlite") ? "IS loaded" : "not loaded"}, pg ${shares.has("pg") ? "IS in the bundle" : "not in the bundle"}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
