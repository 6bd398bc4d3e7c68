// publishLayers at scale, in this process: the workflow definition file run by the local engine's own
// interpreter with every task module, against an in-memory dynalite behind the engine's transaction proxy.
// DynamoDB requests are counted at the SDK client every task shares, and the interpreter's event log gives
// the largest state the workflow carried: both must stay bounded however many datasets a store holds.
import { DeleteCommand, GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ROOT } from "./helpers/engine.ts";
import { countRequests, inProcessStore } from "./helpers/in-process.ts";

const store = await inProcessStore();
const { ddb, observeStore } = await import("#shared/stores/dynamo.ts");
const ops = await import("#infra/admin/operations.ts");
const { startWorkflows } = await import("#infra/local/workflows.ts");
const { createJob, getJob, newJob } = await import("#shared/stores/jobs.ts");
const { LAYERS_PER_TRANSACTION, PAGE } = await import("#shared/publish-layers.ts");
const { DATASET_TYPES } = await import("#shared/stores/datastores.ts");

const sent = countRequests(observeStore);
const READS = new Set(["GetItemCommand", "BatchGetItemCommand", "QueryCommand", "ScanCommand"]);
const count = (requests: string[], names: Set<string> | string) =>
  requests.filter((r) => (typeof names === "string" ? r === names : names.has(r))).length;

const workflows = await startWorkflows(ROOT);
let portalId: string;
let serverId: string;
let jobs = 0;

/** As real datasets are named, with a few paths whose UTF-8 and UTF-16 orders differ. */
const datasets = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => {
    const odd = i % 997 === 5 ? (i % 2 ? "Été_" : "\u{1F30A}_") : "";
    const name = `${prefix}.${odd}Parcels_${String(i).padStart(6, "0")}`;
    return {
      name,
      displayName: `Parcel boundaries and ownership records ${i}`,
      type: DATASET_TYPES[i % 3] ?? "table",
      path: `/${prefix}.gdb/${name}`,
    };
  });

async function dataStore(prefix: string, n: number): Promise<string> {
  const s = await ops.registerDataStore(portalId, {
    title: prefix,
    owner: "scale-admin",
    kind: "database",
    serverIds: [serverId],
    datasets: datasets(prefix, n),
  });
  return s.datastoreId;
}

/** Writes a publishLayers job as the route does, runs its execution, and answers the finished job. */
async function publishLayers(datastoreId: string) {
  const jobId = (++jobs).toString(16).padStart(32, "0");
  const params = { datastoreId, serverId, serverFolder: "Scale", portalFolderId: "", templateSvcConfig: "" };
  const job = newJob(
    { jobId, portalId, owner: "scale-admin", operation: "publishLayers", params, origin: "https://maps.example.test" },
    "k",
  );
  const input = job.input;
  await createJob(job);
  const before = { requests: sent.length, ...workflows.stats() };
  await workflows.start(jobId, input).done;
  // The event log is read asynchronously: let it catch up with the end of the execution.
  await new Promise((r) => setTimeout(r, 50));
  const after = workflows.stats();
  return {
    jobId,
    job: await getJob(jobId),
    requests: sent.slice(before.requests),
    transitions: after.transitions - before.transitions,
  };
}

beforeAll(async () => {
  await workflows.load();
  const { portal } = await ops.bootstrapOrganization({
    name: "Scale",
    admin: { username: "scale-admin", password: "scale-admin-pass-1" },
  });
  portalId = portal.portalId;
  serverId = (await ops.registerServer(portalId, { name: "scale", role: "HOSTING_SERVER" })).serverId;
});

afterAll(async () => {
  await workflows.close();
  await store.close();
});

describe("publishLayers over 5,000 datasets", () => {
  const N = 5_000;
  const pages = Math.ceil(N / PAGE) + 1; // the last full page cannot know it was the last
  let datastoreId: string;

  it("publishes every dataset with bounded state, reads linear in the datasets, and few writes", async () => {
    datastoreId = await dataStore("big", N);
    const run = await publishLayers(datastoreId);
    expect(run.job).toMatchObject({
      status: "completed",
      result: { datastoreId, published: N, alreadyPublished: 0, layers: N },
    });
    // A few KB whatever the store holds: the job's input and the page record, never a list of datasets.
    expect(workflows.stats().largestState).toBeLessThan(2_048);
    // Route, then a page task and the loop's Choice per page, then CompleteJob.
    // Route, the pages, CompleteJob, then Finished, Ended and Succeeded.
    expect(run.transitions).toBe(1 + 2 * pages + 1 + 3);
    // Per page: the store, the server, the page's datasets and the pairs of exactly those (each ≥ 1 Query).
    const reads = count(run.requests, READS);
    expect(reads).toBeLessThanOrEqual(6 * pages);
    expect(reads / N).toBeLessThan(0.01);
    // One transaction per 33 layers of a page and the folder once a page; the catalog version is bumped once
    // per 4 transactions run together (never inside them: they would conflict on it), and the job finished.
    const transactions = Math.ceil(PAGE / LAYERS_PER_TRANSACTION);
    expect(count(run.requests, "TransactWriteItemsCommand")).toBeLessThanOrEqual(pages * (transactions + 1));
    expect(count(run.requests, "UpdateItemCommand")).toBeLessThanOrEqual(pages * Math.ceil(transactions / 4) + 1);
    const pair = await ddb.send(
      new GetCommand({
        TableName: "mapgate-layers",
        Key: { datastoreId, entry: `pair#${datasets("big", N)[4_321]?.path}` },
      }),
    );
    expect(pair.Item).toMatchObject({ jobId: run.jobId, layer: { type: "Feature Service" } });
  });

  it("publishes nothing again, reading as little, and counts a layer whose pair was lost as published", async () => {
    const again = await publishLayers(datastoreId);
    expect(again.job?.result).toEqual({ datastoreId, published: 0, alreadyPublished: N, layers: N, skipped: 0 });
    expect(count(again.requests, READS)).toBeLessThanOrEqual(6 * pages);
    expect(count(again.requests, "TransactWriteItemsCommand")).toBe(0);
    expect(count(again.requests, "PutItemCommand")).toBe(0);
    // A service and item without their pair (an older run's state): the pair is recorded, by this job.
    const lost = datasets("big", N)[2_500]?.path ?? "";
    await ddb.send(new DeleteCommand({ TableName: "mapgate-layers", Key: { datastoreId, entry: `pair#${lost}` } }));
    const third = await publishLayers(datastoreId);
    expect(third.job?.result).toEqual({ datastoreId, published: 1, alreadyPublished: N - 1, layers: N, skipped: 0 });
  });
});

describe("a page that runs out of time", () => {
  it("stops after its finished transactions, and the next page goes on from there: nothing lost or doubled", async () => {
    const N = 1_200;
    const datastoreId = await dataStore("slow", N);
    // Every layer transaction takes "three minutes": each page stops after its first transactions in flight.
    const real = Date.now.bind(Date);
    let skew = 0;
    const clock = vi.spyOn(Date, "now").mockImplementation(() => real() + skew);
    const slow =
      (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => async (args: unknown) => {
        const out = await next(args);
        if (context.commandName === "TransactWriteItemsCommand") skew += 180_000;
        return out;
      };
    ddb.middlewareStack.add(slow as never, { step: "initialize", name: "slowTransactions" });
    try {
      const run = await publishLayers(datastoreId);
      expect(run.job?.result).toEqual({ datastoreId, published: N, alreadyPublished: 0, layers: N, skipped: 0 });
      // Pages of 4 transactions (132 datasets) instead of one page of 1,200.
      expect(run.transitions).toBeGreaterThan(2 * Math.ceil(N / (4 * LAYERS_PER_TRANSACTION)));
    } finally {
      ddb.middlewareStack.remove("slowTransactions");
      clock.mockRestore();
    }
  });
});
