// The summary of a V8 CPU profile the bench takes (bench/profile.ts, bench/draw-profile.ts): the top frames by self
// time, self time by area (package or source file), and the inclusive time of named steps. Percentages are of the
// busy time (idle and the profiler's own work excluded).
import { relative } from "node:path";
import { ROOT } from "../test/helpers/engine.ts";

const TOP = Number(process.env.PROFILE_TOP ?? 20);

export interface Frame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: Frame;
  readonly children?: readonly number[];
}
export interface Profile {
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
export const READ_STEPS: readonly [string, (f: Frame) => boolean][] = [
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

export function summarize(
  profile: Profile,
  STEPS: readonly [string, (f: Frame) => boolean][] = READ_STEPS,
  perRequest?: number,
): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  /** For each frame, its callers two levels up, by time: what a native frame such as writev was doing. */
  const callers = new Map<string, Map<string, number>>();
  const label = (f: Frame) => `${f.functionName || "(anonymous)"} ${area(f.url)}${f.url ? `:${f.lineNumber + 1}` : ""}`;
  const areas = new Map<string, number>();
  const steps = new Map<string, number>();
  /** Each function's time with its callees' (PROFILE_INCLUSIVE=1 prints the top ones). */
  const inclusive = new Map<string, number>();
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
    const frames = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)?.callFrame;
      if (!frame) break;
      for (const [name, test] of STEPS) if (!seen.has(name) && test(frame)) seen.add(name);
      if (frame.url) frames.add(label(frame));
    }
    for (const name of seen) steps.set(name, (steps.get(name) ?? 0) + dt);
    for (const name of frames) inclusive.set(name, (inclusive.get(name) ?? 0) + dt);
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
  const each = perRequest ? ` (${(busy / 1000 / perRequest).toFixed(3)} ms a request over ${perRequest})` : "";
  console.log(`  busy ${(busy / 1000).toFixed(0)} ms of CPU${each}; top ${TOP} frames by self time:`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(`    ${pct(v)}  ${k}`);
    // The main caller of the heaviest frames.
    const top = [...(callers.get(k) ?? [])].sort((a, b) => b[1] - a[1])[0];
    if (top && v / busy >= 0.03) console.log(`              ← ${top[0]} (${pct(top[1]).trim()})`);
  }
  console.log("  self time by area:");
  for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`    ${pct(v)}  ${k}`);
  if (process.env.PROFILE_INCLUSIVE) {
    console.log(`  top ${TOP} functions by inclusive time:`);
    for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`    ${pct(v)}  ${k}`);
  }
  console.log("  inclusive time of named steps:");
  for (const [name] of STEPS) {
    const us = steps.get(name) ?? 0;
    const ms = perRequest ? `  ${(us / 1000 / perRequest).toFixed(3)} ms a request` : "";
    console.log(`    ${pct(us)}  ${name}${ms}`);
  }
}

interface HeapNode {
  readonly callFrame: Frame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}
export interface HeapProfile {
  readonly head: HeapNode;
}

/** A sampling heap profile (collected objects included): KiB allocated per request, by the allocating frame. */
export function summarizeHeap(profile: HeapProfile, perRequest: number): void {
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let total = 0;
  const label = (f: Frame) => `${f.functionName || "(anonymous)"} ${area(f.url)}${f.url ? `:${f.lineNumber + 1}` : ""}`;
  const walk = (n: HeapNode, parent: string) => {
    const name = label(n.callFrame);
    if (n.selfSize > 0) {
      total += n.selfSize;
      const key = `${name}  ← ${parent}`;
      self.set(key, (self.get(key) ?? 0) + n.selfSize);
      areas.set(area(n.callFrame.url), (areas.get(area(n.callFrame.url)) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, name);
  };
  walk(profile.head, "");
  const kib = (b: number) => `${(b / 1024 / perRequest).toFixed(1).padStart(7)} KiB`;
  console.log(`  ${kib(total).trim()} allocated a request; top ${TOP} allocating frames (← caller):`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`    ${kib(v)}  ${k}`);
  console.log("  by area:");
  for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`    ${kib(v)}  ${k}`);
}
