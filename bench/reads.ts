// Read figures: six read routes through the local engine, each next to its floor (bench/floor-server.ts): a plain
// node:http server in its own process that sends the same DynamoDB requests the route's warm handler sent (recorded
// in the engine by bench/store-trace.ts) through the same SDK clients to the same kind of in-process store, then
// answers the route's own bytes. Same run, same load generator, short rounds taken in turns; each figure the median
// over the rounds, each ratio the median of the rounds' own ratios (this machine's speed drifts by a fifth from one
// five-second stretch to the next). The goal is a throughput ≥ 0.8 of the floor.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "../test/helpers/engine.ts";
import { call, form } from "../test/helpers/http.ts";
import type { FloorSpec } from "./floor-server.ts";
import { median } from "./stats.ts";
import { BODY as SOAP_BODY, seed } from "./soap.ts";
import type { TracedCall } from "./store-trace.ts";

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);
export const READ_GOAL = 0.8;
const SERVICES = 1_000;
/** Rounds per route (`BENCH_ROUNDS`), each the route, its floor and the bare server for `seconds` in turns. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_ROUNDS must be a positive integer`);

export interface ReadRoute {
  readonly name: string;
  readonly path: string;
  readonly post?: { readonly body: string; readonly headers: Record<string, string> };
  readonly tile?: FloorSpec["tile"];
}

interface Request {
  readonly url: string;
  readonly method?: "POST";
  readonly body?: string;
  readonly headers?: Record<string, string>;
}

/** A process's CPU time so far (user + system) in ms, from /proc (Linux); NaN elsewhere. */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").pop()?.split(" ") ?? [];
    // utime and stime are fields 14 and 15 of the line (11 and 12 after the command), in clock ticks (1/100 s).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * Throughput, and the server's CPU per request (µs): steadier than throughput on a machine shared with other work,
 * since time spent waiting for a core does not count.
 */
async function rps(
  request: Request,
  seconds: number,
  pid?: number,
): Promise<{ rps: number; errors: number; cpuUs: number }> {
  const before = pid ? cpuMs(pid) : Number.NaN;
  const r = await autocannon({ ...request, connections: 10, duration: seconds });
  const cpuUs = ((cpuMs(pid ?? 0) - before) * 1000) / Math.max(1, r.requests.total);
  return { rps: r.requests.average, errors: r.errors + r.non2xx, cpuUs };
}

/** An engine whose store requests can be recorded, its demo organization on plain HTTP (no TLS on either side). */
export async function benchEngine(
  trace: string,
  preload: "store-trace" | "cpu-profile" = "store-trace",
): Promise<RunningEngine> {
  return startEngine({
    env: {
      POWERTOOLS_LOG_LEVEL: "WARN",
      // Its metric lines (one per request) are written as on Lambda, but not read back by this process, which
      // is also the load generator: collecting them here slowed the load on the route and not on its floor.
      MAPGATE_LOG: "/dev/null",
      MAPGATE_ALL_SSL: "false",
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${join(ROOT, `bench/${preload}.ts`)}`.trim(),
      [preload === "store-trace" ? "MAPGATE_BENCH_TRACE" : "MAPGATE_BENCH_PROFILE"]: trace,
    },
  });
}

/** The six read routes, on an engine with a hosted server of 1,000 services. */
export async function readRoutes(engine: RunningEngine): Promise<ReadRoute[]> {
  // Signing in takes HTTPS whatever the organization says; the token is bound to loopback, where autocannon is.
  const signIn = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
    ca: engine.ca,
    body: form({ f: "json", username: "user", password: PASSWORDS.user, client: "ip", ip: "127.0.0.1" }),
  });
  const token = signIn.json<{ token?: string }>().token;
  if (!token) throw new Error(`generateToken failed: ${signIn.text.slice(0, 200)}`);
  const server = `bench${SERVICES}`;
  await seed(engine, server, SERVICES);
  return [
    { name: "anonymous read (portals/self)", path: "/portal/sharing/rest/portals/self?f=json" },
    { name: "authenticated read (community/self)", path: `/portal/sharing/rest/community/self?f=json&token=${token}` },
    { name: "/arcgis/rest/info", path: "/arcgis/rest/info?f=json" },
    { name: `REST directory (${SERVICES.toLocaleString("en")} services)`, path: `/${server}/rest/services?f=json` },
    {
      name: "public tile",
      path: "/arcgis/rest/services/World_Basemap/MapServer/tile/1/0/1",
      // The demo's basemap is served from its folder data store (infra/admin/demo.ts).
      tile: {
        folder: join(engine.dataDir, "demo-store"),
        root: "/caches/tiles/Basemap/_alllayers",
        level: 1,
        row: 0,
        col: 1,
      },
    },
    {
      name: `SOAP catalog (${SERVICES.toLocaleString("en")} services)`,
      path: `/${server}/services`,
      post: { body: SOAP_BODY, headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' } },
    },
  ];
}

/** The store requests one warm request of the route makes in the engine (recording toggled by SIGUSR2). */
async function record(engine: RunningEngine, trace: string, request: () => Promise<unknown>): Promise<TracedCall[]> {
  rmSync(trace, { force: true });
  rmSync(`${trace}.on`, { force: true });
  const pid = engine.ready.pid;
  process.kill(pid, "SIGUSR2");
  // The signal is handled when the engine's event loop gets to it: it says so.
  for (let i = 0; i < 250 && !existsSync(`${trace}.on`); i++) await new Promise((r) => setTimeout(r, 20));
  await request();
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 100 && !existsSync(trace); i++) await new Promise((r) => setTimeout(r, 20));
  return JSON.parse(readFileSync(trace, "utf8")) as TracedCall[];
}

async function startFloor(
  specFile: string,
  mode: "gateway" | "bare",
): Promise<{ port: string; pid: number; stop(): void }> {
  const child = spawn(process.execPath, [join(ROOT, "bench/floor-server.ts"), specFile, mode], {
    cwd: ROOT,
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: "WARN" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`floor server exited (${code})`)));
    child.stdout.on("data", (chunk: Buffer) => {
      const m = /floor (\d+)/.exec(chunk.toString("utf8"));
      if (m?.[1]) resolve(m[1]);
    });
  });
  return { port, pid: child.pid ?? 0, stop: () => child.kill() };
}

export interface ReadFigure {
  readonly name: string;
  readonly route: number;
  readonly floor: number;
  /** The median over the rounds of route / floor, each pair measured back to back. */
  readonly ratio: number;
  /** The floor without the gateway. */
  readonly bare: number;
  readonly calls: number;
  readonly errors: number;
  /** CPU per request (µs) of the engine and of the floor's process. */
  readonly routeCpuUs: number;
  readonly floorCpuUs: number;
}

/** Each route against its floor; `only` picks routes by a part of their name. */
export async function readLoad(seconds: number, only?: string): Promise<ReadFigure[]> {
  const work = mkdtempSync(join(tmpdir(), "mapgate-reads-"));
  const trace = join(work, "trace.json");
  const engine = await benchEngine(trace);
  const figures: ReadFigure[] = [];
  try {
    const http = engine.ready.http.replace("localhost", "127.0.0.1");
    const routes = (await readRoutes(engine)).filter((r) => !only || r.name.includes(only));
    console.log(
      `\nReads: each route vs its floor (the same store requests through the same SDK client, then the same bytes, in a process of its own), 10 connections, ${ROUNDS} rounds of ${seconds} s each, medians`,
    );
    console.log(
      `${"".padEnd(40)}${"route".padStart(9)}${"floor".padStart(9)}${"ratio".padStart(9)}${"goal".padStart(7)}${"bare".padStart(9)}${"ratio".padStart(9)}${"store".padStart(6)}${"errors".padStart(7)}${"µs/req".padStart(9)}${"floor".padStart(9)}${"bare".padStart(9)}${"ratio".padStart(9)}`,
    );
    for (const route of routes) {
      const request = (url: string): Request =>
        route.post ? { url, method: "POST", body: route.post.body, headers: route.post.headers } : { url };
      const mine = request(`${http}${route.path}`);
      const fetchOnce = () =>
        fetch(mine.url, { method: mine.method ?? "GET", body: mine.body ?? null, headers: mine.headers ?? {} });
      const sample = await fetchOnce();
      const bytes = Buffer.from(await sample.arrayBuffer());
      if (sample.status !== 200 || bytes.includes('"error"'))
        throw new Error(`${route.name} failed: ${sample.status} ${bytes.toString("utf8", 0, 200)}`);
      await rps(mine, 1); // warm: the route's caches hold what a warm function holds
      const calls = await record(engine, trace, async () => (await fetchOnce()).arrayBuffer());
      if (process.env.BENCH_SHOW_CALLS)
        for (const c of calls) console.log(`  ${c.group} ${c.target} ${c.body.slice(0, 300)} → ${c.answer.length} B`);
      const headers: Record<string, string> = {};
      sample.headers.forEach((v, k) => {
        if (!["date", "connection", "keep-alive", "transfer-encoding"].includes(k)) headers[k] = v;
      });
      const spec: FloorSpec = {
        status: sample.status,
        headers,
        body: bytes.toString("base64"),
        calls,
        ...(route.tile ? { tile: route.tile } : {}),
      };
      const specFile = join(work, "floor.json");
      writeFileSync(specFile, JSON.stringify(spec));
      const floor = await startFloor(specFile, "gateway");
      const bare = await startFloor(specFile, "bare");
      try {
        const base = request(`http://127.0.0.1:${floor.port}${route.path}`);
        const bareRequest = request(`http://127.0.0.1:${bare.port}${route.path}`);
        await rps(base, 1);
        await rps(bareRequest, 1);
        // Short rounds taken in turns (the order rotating), each ratio within one round: the machine's speed drifts
        // by a fifth from one five-second stretch to the next (other tenants of the host), which a paired ratio
        // mostly cancels. Each figure is the median over the rounds.
        const rounds: Record<"a" | "b" | "c", Awaited<ReturnType<typeof rps>>>[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          const round: Partial<Record<"a" | "b" | "c", Awaited<ReturnType<typeof rps>>>> = {};
          const order = (["a", "b", "c"] as const).map((_, j, all) => all[(i + j) % 3] as "a" | "b" | "c");
          for (const k of order) {
            const [target, pid] =
              k === "a" ? [mine, engine.ready.pid] : k === "b" ? [base, floor.pid] : [bareRequest, bare.pid];
            round[k] = await rps(target, seconds, pid);
          }
          rounds.push(round as Record<"a" | "b" | "c", Awaited<ReturnType<typeof rps>>>);
        }
        const mid = (k: "a" | "b" | "c", f: (x: Awaited<ReturnType<typeof rps>>) => number) =>
          median(rounds.map((r) => f(r[k])));
        const [a, b, c] = [mid("a", (x) => x.rps), mid("b", (x) => x.rps), mid("c", (x) => x.rps)];
        const [cpuA, cpuB, cpuC] = [mid("a", (x) => x.cpuUs), mid("b", (x) => x.cpuUs), mid("c", (x) => x.cpuUs)];
        const ratio = median(rounds.map((r) => r.a.rps / r.b.rps));
        const bareRatio = median(rounds.map((r) => r.a.rps / r.c.rps));
        const cpuRatio = median(rounds.map((r) => r.b.cpuUs / r.a.cpuUs));
        const errors = rounds.reduce((n, r) => n + r.a.errors + r.b.errors + r.c.errors, 0);
        figures.push({
          name: route.name,
          route: a,
          floor: b,
          ratio,
          bare: c,
          calls: calls.length,
          errors,
          routeCpuUs: cpuA,
          floorCpuUs: cpuB,
        });
        console.log(
          `${route.name.padEnd(40)}${fmt(a, 0)}${fmt(b, 0)}${fmt(ratio, 3)}${`≥ ${READ_GOAL}`.padStart(7)}${fmt(c, 0)}${fmt(bareRatio, 3)}${String(calls.length).padStart(6)}${String(errors).padStart(7)}${fmt(cpuA, 0)}${fmt(cpuB, 0)}${fmt(cpuC, 0)}${fmt(cpuRatio, 3)}`,
        );
      } finally {
        floor.stop();
        bare.stop();
      }
    }
    console.log(
      [
        "  floor: the engine's gateway in front of the route's store requests (recorded in the engine, sent again in the same order",
        "  and concurrency) and its bytes; bare: the same without the gateway (plain node:http); store: requests per warm request;",
        "  µs/req: CPU per request of the engine's process, the floor's and the bare one's (medians), ratio floor/route",
      ].join("\n"),
    );
  } finally {
    await engine.stop();
    rmSync(work, { recursive: true, force: true });
  }
  return figures;
}
