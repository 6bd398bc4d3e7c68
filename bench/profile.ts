// `node bench/profile.ts [part of a route's name]`: where a read route's time goes under load. The engine (with
// bench/cpu-profile.ts preloaded) is profiled only while autocannon drives the route; printed: the top frames by
// self time, self time by area (package or source file), and the inclusive time of the steps the issue names
// (token verification, the caller's read, rendering). Percentages are of the busy time (idle excluded).
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import autocannon from "autocannon";
import { ROOT } from "../test/helpers/engine.ts";
import { benchEngine, readRoutes } from "./reads.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const TOP = Number(process.env.PROFILE_TOP ?? 20);
const only = process.argv[2];

interface Frame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: Frame;
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Where a frame's code lives: a package, a source file of mapgate, a Node module, or V8's own. */
function area(url: string): string {
  if (!url) return "(V8/native)";
  const path = url.replace(/^file:\/\//, "");
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg?.[1]) return pkg[1];
  if (path.startsWith("node:")) return path;
  if (path.startsWith("/")) return relative(ROOT, path);
  return path;
}

/** Steps named by the issue, matched on function name (and file) anywhere on the stack: inclusive time. */
const STEPS: readonly [string, (f: Frame) => boolean][] = [
  ["token verification (verifyToken)", (f) => f.functionName === "verifyToken"],
  ["caller read (resolveIdentityWith → batchGet)", (f) => f.functionName === "batchGet"],
  ["the store (dynalite, transaction layer)", (f) => /node_modules\/dynalite\/|infra\/local\/transactions/.test(f.url)],
  ["AWS SDK (client side)", (f) => /node_modules\/@(aws-sdk|smithy)\//.test(f.url)],
  ["pipeline (shared/http)", (f) => f.url.includes("/shared/http/")],
  ["gateway (infra/local/gateway)", (f) => f.url.includes("/infra/local/gateway")],
  ["logging (shared/log, Powertools)", (f) => /shared\/log\.ts|@aws-lambda-powertools/.test(f.url)],
  ["metrics (shared/metrics)", (f) => f.url.includes("/shared/metrics")],
  ["middy", (f) => f.url.includes("/@middy/")],
];

function summarize(profile: Profile): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  /** For each frame, its callers two levels up, by time: what a native frame such as writev was doing. */
  const callers = new Map<string, Map<string, number>>();
  const label = (f: Frame) => `${f.functionName || "(anonymous)"} ${area(f.url)}${f.url ? `:${f.lineNumber + 1}` : ""}`;
  const areas = new Map<string, number>();
  const steps = new Map<string, number>();
  let busy = 0;
  // The profiler's own work (the inspector session in the engine) is not the engine's.
  const profilerOwn = new Set<number>();
  for (const n of profile.nodes) {
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      if (byId.get(id)?.callFrame.url === "node:inspector") {
        profilerOwn.add(n.id);
        break;
      }
    }
  }
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i] as number);
    const dt = profile.timeDeltas[i] ?? 0;
    if (!node || node.callFrame.functionName === "(idle)" || profilerOwn.has(node.id)) continue;
    busy += dt;
    const f = node.callFrame;
    const key = `${f.functionName || "(anonymous)"}  ${area(f.url)}${f.url ? `:${f.lineNumber + 1}` : ""}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    const up1 = byId.get(parent.get(node.id) ?? -1)?.callFrame;
    const up2 = byId.get(parent.get(parent.get(node.id) ?? -1) ?? -1)?.callFrame;
    const chain = [up1, up2].flatMap((x) => (x ? [label(x)] : [])).join(" ← ");
    const seenCallers = callers.get(key) ?? new Map<string, number>();
    seenCallers.set(chain, (seenCallers.get(chain) ?? 0) + dt);
    callers.set(key, seenCallers);
    areas.set(area(f.url), (areas.get(area(f.url)) ?? 0) + dt);
    // Inclusive: each step counted once per sample if any frame on the stack is in it.
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)?.callFrame;
      if (!frame) break;
      for (const [name, test] of STEPS) if (!seen.has(name) && test(frame)) seen.add(name);
    }
    for (const name of seen) steps.set(name, (steps.get(name) ?? 0) + dt);
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
  console.log(`  busy ${(busy / 1000).toFixed(0)} ms of CPU in the engine; top ${TOP} frames by self time:`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(`    ${pct(v)}  ${k}`);
    // The main caller of the heaviest frames.
    const top = [...(callers.get(k) ?? [])].sort((a, b) => b[1] - a[1])[0];
    if (top && v / busy >= 0.03) console.log(`              ← ${top[0]} (${pct(top[1]).trim()})`);
  }
  console.log("  self time by area:");
  for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`    ${pct(v)}  ${k}`);
  console.log("  inclusive time of named steps:");
  for (const [name] of STEPS) console.log(`    ${pct(steps.get(name) ?? 0)}  ${name}`);
}

const work = mkdtempSync(join(tmpdir(), "mapgate-profile-"));
const file = join(work, "engine.cpuprofile");
const engine = await benchEngine(file, "cpu-profile");
try {
  const http = engine.ready.http.replace("localhost", "127.0.0.1");
  for (const route of (await readRoutes(engine)).filter((r) => !only || r.name.includes(only))) {
    const request = {
      url: `${http}${route.path}`,
      ...(route.post ? { method: "POST" as const, body: route.post.body, headers: route.post.headers } : {}),
    };
    await autocannon({ ...request, connections: 10, duration: 1 }); // warm
    rmSync(file, { force: true });
    process.kill(engine.ready.pid, "SIGUSR2");
    await new Promise((r) => setTimeout(r, 100));
    const r = await autocannon({ ...request, connections: 10, duration: SECONDS });
    process.kill(engine.ready.pid, "SIGUSR2");
    for (let i = 0; i < 250 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200)); // the write may still be under way
    console.log(
      `\n${route.name}: ${r.requests.average.toFixed(0)} req/s while profiled (10 connections × ${SECONDS} s)`,
    );
    summarize(JSON.parse(readFileSync(file, "utf8")) as Profile);
    if (process.env.PROFILE_KEEP)
      copyFileSync(file, `${process.env.PROFILE_KEEP}-${route.name.replace(/\W+/g, "_")}.cpuprofile`);
  }
} finally {
  await engine.stop();
  rmSync(work, { recursive: true, force: true });
}
