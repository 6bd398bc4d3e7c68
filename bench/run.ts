// `npm run bench`: figures side by side with a baseline measured in the same run, never bare times.
//   0. six read routes, each vs its floor: the gateway answering after the same store requests (bench/reads.ts)
//   1. the shared pipeline on the local engine vs a bare node:http server answering the same bytes
//   2. feature layer queries vs Koop and vs a bare node:sqlite floor, PBF size, memory per query (bench/features.ts);
//      the map's draw path: the ArcGIS Maps SDK's tile queries vs their floor (bench/draw.ts); what SQLite reads
//      for the features page, plan by plan (bench/plans.ts)
//   3. each function bundle's size and import time in a fresh Node process vs an empty ES module (budget +80 ms)
//   4. the directory and SOAP catalog for a member of 512 groups vs the same answer through org sharing (bench/groups.ts)
//   5. publishing a CSV of 1,000,000 points as a hosted layer vs `ogr2ogr -f GPKG` of the same file, and the
//      publishing process's peak RSS (bench/publish.ts; BENCH_PUBLISH_ROWS for a smaller file)
import { execFileSync } from "node:child_process";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import { build, type Metafile } from "esbuild";
import { functionModules, splitEsbuildOptions } from "#infra/aws/bundling.ts";
import { ROOT, startEngine } from "../test/helpers/engine.ts";
import { call } from "../test/helpers/http.ts";
import { inProcessStore } from "../test/helpers/in-process.ts";
import { bareTwin } from "./bare.ts";
import { drawBench } from "./draw.ts";
import { featureBench } from "./features.ts";
import { plansBench } from "./plans.ts";
import { groupsBench } from "./groups.ts";
import { publishBench } from "./publish.ts";
import { importMs } from "./import-time.ts";
import { readLoad } from "./reads.ts";
import { roleLatency, roleRequests } from "./roles.ts";
import { soapBench } from "./soap.ts";
import { costModel } from "./cost.ts";
import { tileFunction, tileLoad } from "./tiles.ts";
import { tokenBench } from "./tokens.ts";
import { editBench } from "./edits.ts";
import { streamsBench } from "./streams.ts";

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5);
/**
 * `BENCH_ONLY=reads`, `cold`, `features`, `streams`, `draw`, `plans`, `groups`, `tokens`, `publish` or `edits`: only the
 * read figures (`BENCH_ROUTE=<part of a name>` for some routes), the bundles' import, the feature layer figures,
 * concurrent queries, the map's draw path, what the features page's plans read, the group figures, token
 * verification, or publishing a CSV beside ogr2ogr (quick before/after checks). `node bench/profile.ts` profiles the read routes under load.
 */
const ONLY = process.env.BENCH_ONLY;
const CONNECTIONS = 10;

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string): Promise<Load> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);

async function pipeline(): Promise<void> {
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN" } });
  try {
    const url = `${engine.ready.http}/portal/sharing/rest/info?f=json`.replace("localhost", "127.0.0.1");
    const sample = await call(url);
    const bare = await bareTwin(sample);
    const bareUrl = bare.url;
    await load(url); // warm both before measuring
    const mine = await load(url);
    const base = await load(bareUrl);
    bare.close();
    console.log(
      `\nPipeline: GET …/sharing/rest/info?f=json over loopback HTTP, autocannon ${CONNECTIONS} connections × ${DURATION_S} s`,
    );
    console.log(
      `${"".padEnd(28)}${"req/s".padStart(9)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}${"errors".padStart(9)}`,
    );
    console.log(
      `${"mapgate local engine".padEnd(28)}${fmt(mine.rps, 0)}${fmt(mine.p50)}${fmt(mine.p99)}${fmt(mine.errors, 0)}`,
    );
    console.log(
      `${"bare node:http, same bytes".padEnd(28)}${fmt(base.rps, 0)}${fmt(base.p50)}${fmt(base.p99)}${fmt(base.errors, 0)}`,
    );
    console.log(
      `ratio (mapgate / bare): throughput ${(mine.rps / base.rps).toFixed(3)} (each mapgate request makes one DynamoDB read: in the local engine that is dynalite, in the same process)`,
    );
    await roleLatency(engine);
    await soapBench(engine, DURATION_S);
    await tileLoad(engine, DURATION_S);
  } finally {
    await engine.stop();
  }
}

/** The bytes a cold start reads: the entry and every chunk it imports statically. */
function eagerBytes(metafile: Metafile, file: string): number {
  const outputs = new Map(Object.entries(metafile.outputs).map(([path, o]) => [join(process.cwd(), path), o]));
  const eager = new Set([file]);
  for (const f of eager)
    for (const i of outputs.get(f)?.imports ?? [])
      if (i.kind === "import-statement" && !i.external) eager.add(join(process.cwd(), i.path));
  return [...eager].reduce((n, f) => n + (outputs.get(f)?.bytes ?? statSync(f).size), 0);
}

/** The budget: a bundle's cold import at most this much over an empty module's. */
const COLD_BUDGET_MS = 80;

async function coldStart(): Promise<void> {
  // Bundled exactly as the CDK bundles them (infra/aws/bundling.ts): the AWS SDK inside, no source map loaded.
  const out = join(ROOT, "node_modules", ".cache", "mapgate-bench");
  mkdirSync(out, { recursive: true });
  const empty = join(out, "empty.mjs");
  writeFileSync(empty, "export {};\n");
  const baseline = importMs(empty).wall;
  console.log(
    `\nCold start: bundle size and median import time in a fresh Node process (5 runs); budget: ≤ +${COLD_BUDGET_MS} ms over an empty module`,
  );
  console.log(
    `${"".padEnd(26)}${"KiB".padStart(9)}${"import ms".padStart(11)}${"× empty".padStart(9)}${"CPU ms".padStart(9)}${"+ ms".padStart(9)}`,
  );
  console.log(`${"empty module".padEnd(26)}${fmt(0)}${fmt(baseline, 2).padStart(11)}${fmt(1, 1)}`);
  // Every function bundle: one per route handler module, one per workflow task.
  for (const id of functionModules()) {
    const entry = join(ROOT, "functions", `${id}.ts`);
    // Every function is split (infra/aws/bundling.ts): its size is the entry and the chunks it imports at start
    // (what a cold start compiles).
    const file = join(out, id, "index.mjs");
    const { metafile } = await build({ ...splitEsbuildOptions(entry, join(out, id)), metafile: true });
    const kib = eagerBytes(metafile, file) / 1024;
    const { wall: ms, cpu } = importMs(file);
    console.log(
      `${id.padEnd(26)}${fmt(kib)}${fmt(ms, 2).padStart(11)}${fmt(ms / baseline, 1)}${fmt(cpu)}${fmt(ms - baseline, 1)}`,
    );
  }
}

if (ONLY === "features") {
  await featureBench(DURATION_S);
  process.exit(0);
}
if (ONLY === "draw") {
  await drawBench(DURATION_S);
  process.exit(0);
}
if (ONLY === "plans") {
  await plansBench();
  process.exit(0);
}
if (ONLY === "groups") {
  await groupsBench(DURATION_S);
  process.exit(0);
}
if (ONLY === "tokens") {
  const store = await inProcessStore();
  await tokenBench();
  await store.close();
  process.exit(0);
}
if (ONLY === "publish") {
  await publishBench();
  process.exit(0);
}
if (ONLY === "streams") {
  await streamsBench(DURATION_S);
  process.exit(0);
}
if (ONLY === "edits") {
  await editBench();
  process.exit(0);
}
if (ONLY === "cold") {
  await coldStart();
  process.exit(0);
}
await readLoad(Number(process.env.BENCH_ROUND_SECONDS ?? 2), process.env.BENCH_ROUTE);
if (ONLY === "reads") process.exit(0);
await pipeline();
await featureBench(DURATION_S);
await streamsBench(DURATION_S);
await drawBench(DURATION_S);
await plansBench();
await groupsBench(DURATION_S);
await publishBench();
await editBench();
await coldStart();
// Jobs run with the engine inside their own process, so requests and transitions are counted exactly.
execFileSync(process.execPath, [join(ROOT, "bench/jobs.ts")], { stdio: "inherit", env: process.env });

// The in-process figures share one in-memory store (the SDK client binds its endpoint once per process).
const store = await inProcessStore();
try {
  await tokenBench();
  await roleRequests();
  await tileFunction();
  await costModel();
} finally {
  await store.close();
}
