// `BENCH_ONLY=streams npm run bench`: the local engine's feature queries on every core. The features figure's query (a
// page of 1,000 points of `places` inside an envelope, with a where clause: ~15 ms of CPU each, node:sqlite and the
// geometry code running synchronously) sent by 1, 2 and 4 concurrent streams, each stream one connection waiting for
// its answer before the next request. The engine runs these queries in worker threads (infra/local/function-pool.ts),
// so streams beyond one should use the second core; the load generator runs in this process and shares the cores.
// Printed: each figure's req/s (median of interleaved rounds) and its ratio to one stream, goal ≥ 1.4× for four.
import { availableParallelism, loadavg } from "node:os";
import autocannon from "autocannon";
import { workerCount } from "#infra/local/engine.ts";
import { startEngine } from "../test/helpers/engine.ts";
import { call } from "../test/helpers/http.ts";
import { placesLayer, queryParams } from "./features.ts";
import { median } from "./stats.ts";

const STREAMS = [1, 2, 4] as const;
const ROUNDS = 3;
/** Four streams over one must reach this on two cores (the load generator takes part of one). */
const GOAL = 1.4;

export async function streamsBench(seconds: number): Promise<void> {
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN" } });
  try {
    const url = `${placesLayer(engine)}/query?${queryParams({ f: "json" })}`;
    const first = await call(url);
    const features = first.json<{ features?: unknown[] }>().features;
    if (!Array.isArray(features) || features.length === 0)
      throw new Error(`the query failed: ${first.text.slice(0, 200)}`);
    // Warm every worker the pool may start.
    await autocannon({ url, connections: 4, amount: 40 });
    const runs = new Map<number, number[]>(STREAMS.map((n) => [n, []]));
    let errors = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of STREAMS) {
        const r = await autocannon({ url, connections: n, duration: seconds });
        errors += r.errors + r.non2xx;
        runs.get(n)?.push(r.requests.total / r.duration);
      }
    }
    const rate = (n: number) => median(runs.get(n) ?? []);
    console.log(
      `\nConcurrent feature queries: ${features.length} points a page, f=json, ${ROUNDS} interleaved rounds of ${seconds} s; ${availableParallelism()} cores, ${workerCount()} workers for queries, load average ${loadavg()[0]?.toFixed(1)}`,
    );
    console.log(`${"streams".padEnd(10)}${"req/s".padStart(9)}${"× one".padStart(9)}   runs`);
    for (const n of STREAMS) {
      const r = rate(n);
      const list = (runs.get(n) ?? []).map((v) => v.toFixed(1)).join(", ");
      console.log(
        `${String(n).padEnd(10)}${r.toFixed(1).padStart(9)}${(r / rate(1)).toFixed(2).padStart(9)}   ${list}`,
      );
    }
    const four = rate(4) / rate(1);
    console.log(
      `four streams over one: ${four.toFixed(2)}× (goal ≥ ${GOAL}×: ${four >= GOAL ? "met" : "NOT met"})${errors ? `; ${errors} errors` : ""}`,
    );
  } finally {
    await engine.stop();
  }
}
