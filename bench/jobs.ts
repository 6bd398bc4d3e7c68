// Publishing and getLayers figures, with the local engine in this process so DynamoDB requests (counted at
// the SDK client every handler and task shares) and workflow transitions can be counted exactly.
// Run by bench/run.ts in its own process; prints its own lines.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BatchWriteCommand } from "@aws-sdk/lib-dynamodb";
import { startEngine } from "#infra/local/engine.ts";
import { ddb } from "#shared/stores/dynamo.ts";
import { setMetricsSink } from "#shared/metrics.ts";
import { forEachPairPage } from "#shared/stores/layers.ts";
import { call, form } from "../test/helpers/http.ts";
import { readFileSync } from "node:fs";
import { dynamoRequests } from "./requests.ts";

// The handlers' metric lines are built and dropped: this process prints its figures, not its log.
setMetricsSink(() => undefined);

const JOBS = Number(process.env.BENCH_JOBS ?? 100);
const PAGED_PAIRS = Number(process.env.BENCH_PAGED_PAIRS ?? 50_000);

/** Pairs every DynamoDB Query returned: whole ones, and those read as keys and access only. */
const pairsRead = { whole: 0, keys: 0 };
ddb.middlewareStack.add(
  (next) => async (args) => {
    const out = await next(args);
    for (const item of (out.output as { Items?: Record<string, unknown>[] }).Items ?? []) {
      if (typeof item.entry !== "string" || !item.entry.startsWith("pair#")) continue;
      if (item.layer) pairsRead.whole++;
      else pairsRead.keys++;
    }
    return out;
  },
  { step: "initialize", name: "countBenchPairsRead" },
);

process.env.POWERTOOLS_LOG_LEVEL = "WARN";
const dataDir = mkdtempSync(join(tmpdir(), "mapgate-bench-"));
const engine = await startEngine({
  dataDir,
  host: "localhost",
  httpsPort: 0,
  httpPort: 0,
  passwords: { admin: "bench-admin-1", publisher: "bench-publisher-1", user: "bench-user-1" },
});
const ca = readFileSync(engine.certFile);
const demo = engine.demo;
if (!demo) throw new Error("no demo organization");
const { portalId: demoPortal, serverId: demoServer } = demo;
const rest = `${engine.httpsUrl}/portal/sharing/rest`;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

try {
  const token = (
    await call(`${rest}/generateToken`, {
      ca,
      body: form({ f: "json", username: "publisher", password: "bench-publisher-1" }),
    })
  ).json<{ token: string }>().token;
  const latencies: number[] = [];
  const before = { requests: dynamoRequests(), ...engine.workflowStats() };
  let jobRequests = 0;
  for (let i = 0; i < JOBS; i++) {
    const t = performance.now();
    const r0 = dynamoRequests();
    const started = (
      await call(`${rest}/portals/self/datastores/publish`, {
        ca,
        body: form({
          f: "json",
          token,
          serverId: demo.serverId,
          serverFolder: "Bench",
          serviceConfiguration: JSON.stringify({
            type: "SceneServer",
            serviceName: `Bench_${i}`,
            properties: { cacheStoreId: demo.datastoreId, pathInCachedStore: "/caches/scene/Buildings3D" },
          }),
        }),
      })
    ).json<{ jobId: string; key: string }>();
    let status = "processing";
    let polls = 0;
    while (status === "processing") {
      polls++;
      const job = (
        await call(`${rest}/portals/self/jobs/${started.jobId}?f=json&token=${token}&key=${started.key}`, { ca })
      ).json<{ status: string }>();
      status = job.status;
      if (status === "processing") await new Promise((r) => setTimeout(r, 2));
    }
    if (status !== "completed") throw new Error(`job ended ${status}`);
    latencies.push(performance.now() - t);
    // Requests of the job itself: everything but the polls (each poll is one identity read and one job read).
    jobRequests += dynamoRequests() - r0 - polls * 2;
  }
  const after = engine.workflowStats();
  console.log(
    `\nPublish on the local engine: POST publish → job completed, ${JOBS} jobs one after another (HTTPS, polling every 2 ms)`,
  );
  console.log(`  latency p50 ${pct(latencies, 0.5).toFixed(1)} ms   p95 ${pct(latencies, 0.95).toFixed(1)} ms`);
  console.log(`  workflow state transitions per job ${((after.transitions - before.transitions) / JOBS).toFixed(1)}`);
  console.log(
    `  DynamoDB requests per job ${(jobRequests / JOBS).toFixed(1)} (publish request and tasks, polls excluded; all ${((dynamoRequests() - before.requests) / JOBS).toFixed(1)} with polls)`,
  );

  // getLayers: pairs written straight into the table, then timed reads.
  console.log("\ngetLayers on the local engine (HTTPS, 10 reads each)");
  for (const count of [1_000, 10_000]) {
    const store = await storeWithPairs(count);
    const times: number[] = [];
    let perCall = 0;
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const baseline = process.memoryUsage().rss;
    for (let i = 0; i < 10; i++) {
      const r0 = dynamoRequests();
      const t = performance.now();
      const res = await call(
        `${rest}/portals/self/datastores/getLayers?f=json&token=${token}&datastoreId=${store.datastoreId}`,
        { ca },
      );
      times.push(performance.now() - t);
      perCall = dynamoRequests() - r0;
      if (!res.text.startsWith('{"layerAndDatasets":[')) throw new Error(res.text.slice(0, 200));
    }
    clearInterval(sampler);
    console.log(
      `  ${count.toLocaleString("en").padStart(6)} pairs  p50 ${pct(times, 0.5).toFixed(1)} ms  p95 ${pct(times, 0.95).toFixed(1)} ms  ` +
        `DynamoDB requests per call ${perCall}  peak RSS +${((peak - baseline) / 1048576).toFixed(0)} MiB over ${(baseline / 1048576).toFixed(0)} MiB (engine and client in one process)`,
    );
  }

  // Paging: start, then each nextStart, as clients do. Every page should cost that page, so the walk reads the
  // pairs about once in all; the reference is one pass over every pair (what an unpaged read reads; the
  // unpaged answer itself would pass the 5 MB a response may hold).
  const paged = await storeWithPairs(PAGED_PAIRS, true);
  const pass = { whole: pairsRead.whole, t: performance.now() };
  await forEachPairPage(paged.datastoreId, () => true);
  const passMs = performance.now() - pass.t;
  const passItems = pairsRead.whole - pass.whole;
  const walk = async () => {
    const before = { ...pairsRead, requests: dynamoRequests(), t: performance.now() };
    const pages: number[] = [];
    for (let start = 1; start !== -1;) {
      const t = performance.now();
      const res = await call(
        `${rest}/portals/self/datastores/getLayers?f=json&token=${token}&datastoreId=${paged.datastoreId}&start=${start}&num=10000`,
        { ca },
      );
      pages.push(performance.now() - t);
      const answer = res.json<{ nextStart?: number }>();
      if (answer.nextStart === undefined) throw new Error(res.text.slice(0, 200));
      start = answer.nextStart;
    }
    return {
      ms: performance.now() - before.t,
      pages,
      whole: pairsRead.whole - before.whole,
      keys: pairsRead.keys - before.keys,
      requests: dynamoRequests() - before.requests,
    };
  };
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const baseline = process.memoryUsage().rss;
  await walk(); // warm: its memory counts, as the first call's does above
  const w = await walk();
  clearInterval(sampler);
  // A start never handed out to this client: counted to, reading keys and access only.
  const deep = { ...pairsRead, t: performance.now() };
  const other = (
    await call(`${rest}/generateToken`, {
      ca,
      body: form({ f: "json", username: "admin", password: "bench-admin-1" }),
    })
  ).json<{ token: string }>().token;
  await call(
    `${rest}/portals/self/datastores/getLayers?f=json&token=${other}&datastoreId=${paged.datastoreId}&start=${PAGED_PAIRS - 9_999}&num=10000`,
    { ca },
  );
  const deepMs = performance.now() - deep.t;
  const n = (x: number) => x.toLocaleString("en");
  console.log(
    `\ngetLayers paged on the local engine: ${n(PAGED_PAIRS)} pairs (and their datasets registered) by 10,000 (HTTPS, start then each nextStart)`,
  );
  console.log(
    `  one pass over every pair (in process, no answer built): ${n(passItems)} pairs read, ${passMs.toFixed(0)} ms`,
  );
  console.log(
    `  paged: ${w.pages.length} pages, ${n(w.whole)} pairs read (${(w.whole / passItems).toFixed(2)}× the pass), ${n(w.keys)} keys only, ` +
      `${w.requests} DynamoDB requests, ${w.ms.toFixed(0)} ms (${(w.ms / passMs).toFixed(1)}× the pass, answers and HTTPS included)`,
  );
  console.log(
    `  page times ${w.pages.map((ms) => ms.toFixed(0)).join(", ")} ms: last / first ${((w.pages.at(-1) ?? 0) / (w.pages[0] ?? 1)).toFixed(2)}; ` +
      `peak RSS over two walks +${((peak - baseline) / 1048576).toFixed(0)} MiB over ${(baseline / 1048576).toFixed(0)} MiB`,
  );
  console.log(
    `  a start never handed out (${n(PAGED_PAIRS - 9_999)}, another client): ${n(pairsRead.keys - deep.keys)} keys and ` +
      `${n(pairsRead.whole - deep.whole)} pairs read, ${deepMs.toFixed(0)} ms`,
  );
} finally {
  await engine.stop();
}

/**
 * A data store of the demo organization with `count` pairs written straight into the table, and with their
 * datasets registered when asked (as publishLayers needs them).
 */
async function storeWithPairs(count: number, registered = false) {
  const { registerDataStore } = await import("#infra/admin/operations.ts");
  const store = await registerDataStore(demoPortal, {
    title: `Bench ${count}`,
    owner: "publisher",
    kind: "database",
    serverIds: [demoServer],
    datasets: registered
      ? Array.from({ length: count }, (_, i) => ({
          name: `b.T${i}`,
          displayName: `T ${i}`,
          type: "featureClass" as const,
          path: `/b.gdb/T${String(i).padStart(6, "0")}`,
        }))
      : [],
  });
  const items = Array.from({ length: count }, (_, i) => ({
    datastoreId: store.datastoreId,
    entry: `pair#/b.gdb/T${String(i).padStart(6, "0")}`,
    layer: {
      id: `l${i}`,
      title: `Layer ${i}`,
      created: i,
      modified: i,
      url: `https://example/${i}/FeatureServer`,
      type: "Feature Service",
    },
    dataset: {
      name: `b.T${i}`,
      displayName: `T ${i}`,
      type: "featureClass",
      datastoreId: store.datastoreId,
      path: `/b.gdb/T${String(i).padStart(6, "0")}`,
    },
  }));
  for (let i = 0; i < items.length; i += 25) {
    let pending: Record<string, unknown>[] = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (pending.length)
      pending = ((await ddb.send(new BatchWriteCommand({ RequestItems: { "mapgate-layers": pending } })))
        .UnprocessedItems?.["mapgate-layers"] ?? []) as Record<string, unknown>[];
  }
  return store;
}
