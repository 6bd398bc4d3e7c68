// `node bench/profile.ts [part of a route's name]`: where a read route's time goes under load. The engine (with
// bench/cpu-profile.ts preloaded) is profiled only while autocannon drives the route; printed: the top frames by
// self time, self time by area (package or source file), and the inclusive time of the steps the issue names
// (token verification, the caller's read, rendering). Percentages are of the busy time (idle excluded).
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { type Profile, summarize } from "./profile-summary.ts";
import { benchEngine, readRoutes } from "./reads.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const only = process.argv[2];

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
