// getLayers paged over 50,000 pairs, in this process through the real middy chain against an in-memory dynalite:
// the items every DynamoDB Query returns are counted at the SDK client, so paging through a data store must read
// it about once (not once per page, from the first pair), and a `start` never handed out reads keys only.
// Pairs added and deleted between pages never make a client see a pair twice or miss one that stayed.
import { BatchWriteCommand, DeleteCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiEvent, countRequests, inProcessStore, lambdaContext } from "./helpers/in-process.ts";

const store = await inProcessStore();
const { ddb, observeStore } = await import("#shared/stores/dynamo.ts");
const { grants } = await import("#shared/config.ts");
const { ROUTES } = await import("#shared/system.ts");
const ops = await import("#infra/admin/operations.ts");
const { issueToken } = await import("#shared/auth/tokens.ts");
const { forEachPairPage, recordPair } = await import("#shared/stores/layers.ts");
const getLayers = (await import("#functions/datastore-get-layers.ts")).handler;

const sent = countRequests(observeStore);
/** Pairs every Query returned: whole (with their layer) or only their keys and access. */
const read = { whole: 0, keys: 0 };
ddb.middlewareStack.add(
  ((next: (args: unknown) => Promise<{ output: { Items?: Record<string, unknown>[] } }>) => async (args: unknown) => {
    const out = await next(args);
    for (const item of out.output.Items ?? []) {
      if (typeof item.entry !== "string" || !item.entry.startsWith("pair#")) continue;
      if (item.layer) read.whole++;
      else read.keys++;
    }
    return out;
  }) as never,
  { step: "initialize", name: "countPairsRead" },
);

const N = 50_000;
const PAGE = 10_000;
/** The tables the route is granted, as on AWS: a table it does not declare is out of reach. */
const granted = new Set(Object.keys(ROUTES.find((r) => r.id === "datastore-get-layers")?.tables ?? {}));

let portalId: string;
let serverId: string;
let datastoreId: string;
const tokens: Record<string, string> = {};

const path = (i: number) => `/parcels.gdb/Parcels_${String(i).padStart(6, "0")}`;
const hex = (i: number) => i.toString(16).padStart(32, "0");
/** A pair as bulk publishing records it (sized like real ones), its layer private to its owner. */
function pairItem(i: number, owner = "pager-publisher", suffix = "", store = datastoreId) {
  const p = path(i) + suffix;
  return {
    datastoreId: store,
    entry: `pair#${p}`,
    layer: {
      id: hex(i),
      title: `Parcel boundaries and ownership records ${i}${suffix}`,
      created: 1_795_000_000_000 + i,
      modified: 1_795_000_000_000 + i,
      url: `https://gis.example.com/arcgis/rest/services/Layers/Parcels_${i}${suffix}/FeatureServer`,
      type: "Feature Service",
    },
    dataset: {
      name: `parcels.Parcels_${i}${suffix}`,
      displayName: `Parcel boundaries and ownership records ${i}${suffix}`,
      type: "featureClass" as const,
      datastoreId: store,
      path: p,
    },
    access: "private",
    owner,
    portalId,
    jobId: "0".repeat(32),
  };
}

async function writePairs(items: Record<string, unknown>[]): Promise<void> {
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  const worker = async () => {
    for (let batch = batches.pop(); batch; batch = batches.pop()) {
      let pending: Record<string, unknown>[] = batch.map((Item) => ({ PutRequest: { Item } }));
      while (pending.length)
        pending = ((await ddb.send(new BatchWriteCommand({ RequestItems: { "mapgate-layers": pending } })))
          .UnprocessedItems?.["mapgate-layers"] ?? []) as Record<string, unknown>[];
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

interface Answer {
  layerAndDatasets: { layer: { id: string }; dataset: { path: string } }[];
  nextStart?: number;
  error?: { code: number; details: string[] };
}

/** One getLayers request, with what it read. */
async function call(who: string, query = "", store = datastoreId) {
  const before = { requests: sent.length, whole: read.whole, keys: read.keys };
  const res = await grants.run(granted, () =>
    getLayers(
      apiEvent("/portal/sharing/rest/portals/self/datastores/getLayers", {
        query: `f=json&token=${tokens[who]}&datastoreId=${store}${query}`,
        pathParameters: { portalId: "self" },
      }),
      lambdaContext() as never,
    ),
  );
  return {
    answer: JSON.parse(String(res.body)) as Answer,
    requests: sent.slice(before.requests),
    whole: read.whole - before.whole,
    keys: read.keys - before.keys,
  };
}

/** Pages through the whole list as clients do (start, then each nextStart), with the totals read. */
async function pageThrough(
  who: string,
  num: number,
  between?: (lastPath: string) => Promise<void>,
  store = datastoreId,
) {
  const paths: string[] = [];
  const pages: Answer[] = [];
  const requests: string[][] = [];
  let whole = 0;
  let keys = 0;
  for (let start = 1; start !== -1;) {
    const r = await call(who, `&start=${start}&num=${num}`, store);
    expect(r.answer.error).toBeUndefined();
    pages.push(r.answer);
    requests.push(r.requests);
    paths.push(...r.answer.layerAndDatasets.map((p) => p.dataset.path));
    whole += r.whole;
    keys += r.keys;
    start = r.answer.nextStart ?? -1;
    if (start !== -1) await between?.(paths[paths.length - 1] ?? "");
  }
  return { paths, pages, requests, whole, keys };
}

/** The whole list as one pass over every pair reads it: what an unpaged getLayers reads. */
async function onePass() {
  const before = read.whole;
  const all: { layer: unknown; dataset: { path: string } }[] = [];
  await forEachPairPage(datastoreId, (pairs) => {
    for (const { layer, dataset } of pairs) all.push({ layer, dataset });
    return true;
  });
  return { all, whole: read.whole - before };
}

async function dataStore(title: string): Promise<string> {
  const registered = await ops.registerDataStore(portalId, {
    title,
    owner: "pager-publisher",
    kind: "database",
    serverIds: [serverId],
    datasets: [],
  });
  return registered.datastoreId;
}

async function token(username: string) {
  return (
    await issueToken({
      username,
      portalId,
      audience: { kind: "portal" },
      client: "requestip",
      bound: "192.0.2.10",
      expires: Date.now() + 3600_000,
    })
  ).token;
}

beforeAll(async () => {
  const { portal } = await ops.bootstrapOrganization({
    name: "Paging",
    admin: { username: "pager-admin", password: "pager-admin-pass-1" },
  });
  portalId = portal.portalId;
  await ops.addUser(portalId, { username: "pager-publisher", role: "org_publisher", password: "pager-pub-pass-1" });
  serverId = (await ops.registerServer(portalId, { name: "pager", role: "HOSTING_SERVER" })).serverId;
  datastoreId = await dataStore("Parcels");
  await writePairs(Array.from({ length: N }, (_, i) => pairItem(i)));
  tokens.publisher = await token("pager-publisher");
  tokens.admin = await token("pager-admin");
}, 180_000);

afterAll(async () => {
  await store.close();
});

describe("getLayers paged over 50,000 pairs", () => {
  it("reads the data store about once in all, and the pages are exactly the whole list split", async () => {
    const { all, whole: unpaged } = await onePass();
    expect(all).toHaveLength(N);
    expect(unpaged).toBe(N);
    const paged = await pageThrough("publisher", PAGE);
    expect(paged.pages.map((p) => p.nextStart)).toEqual([10_001, 20_001, 30_001, 40_001, -1]);
    expect(paged.pages.flatMap((p) => p.layerAndDatasets)).toEqual(all);
    // Each page reads its own pairs and one more (is there a next page?). Before: each page read every pair
    // before it again, 150,000 for these five pages.
    expect(paged.whole).toBeLessThanOrEqual(unpaged + paged.pages.length);
    expect(paged.whole).toBeLessThanOrEqual(1.2 * unpaged);
    expect(paged.keys).toBe(0);
    // Per page: its own Queries (≤ 1 MB each: ~5 MB of pairs), and the write of where it ended but for the last.
    for (const [k, requests] of paged.requests.entries()) {
      expect(requests.filter((r) => r === "QueryCommand").length).toBeLessThanOrEqual(7);
      expect(requests.filter((r) => r === "PutItemCommand")).toHaveLength(k < paged.pages.length - 1 ? 1 : 0);
      expect(requests).not.toContain("ScanCommand");
    }
  });

  it("answers a `start` it never handed out by counting keys only, and a later page of it from its cursor", async () => {
    const { all } = await onePass();
    const r = await call("publisher", "&start=23457&num=100");
    expect(r.answer.layerAndDatasets).toEqual(all.slice(23_456, 23_556));
    expect(r.answer.nextStart).toBe(23_557);
    expect(r.keys).toBe(23_456);
    expect(r.whole).toBeLessThanOrEqual(101);
    const next = await call("publisher", "&start=23557&num=100");
    expect(next.answer.layerAndDatasets).toEqual(all.slice(23_556, 23_656));
    expect(next.keys).toBe(0);
    expect(next.whole).toBeLessThanOrEqual(101);
    // Another client's cursor is not this one's: the administrator's token counts its way there.
    const other = await call("admin", "&start=23557&num=100");
    expect(other.answer).toEqual(next.answer);
    expect(other.keys).toBe(23_556);
  });

  it("answers the last page with nextStart -1, reading no pair past it, and a start past the end with nothing", async () => {
    const last = await call("publisher", `&start=${N - 99}&num=100`);
    expect(last.answer.layerAndDatasets.map((p) => p.dataset.path)).toEqual(
      Array.from({ length: 100 }, (_, i) => path(N - 100 + i)),
    );
    expect(last.answer.nextStart).toBe(-1);
    expect(last.keys).toBe(N - 100);
    expect(last.whole).toBe(100);
    expect(await call("publisher", `&start=${N + 1}&num=100`).then((r) => r.answer)).toEqual({
      layerAndDatasets: [],
      nextStart: -1,
    });
    expect(await call("publisher", `&start=${N + 1}`).then((r) => r.answer)).toEqual({ layerAndDatasets: [] });
  });

  it("never shows a pair twice nor misses one that stayed when pairs are added and deleted between pages", async () => {
    const { all } = await onePass();
    const expected = new Set(all.map((p) => p.dataset.path));
    const stayed = new Set(expected);
    const paged = await pageThrough("publisher", PAGE, async (lastPath) => {
      // Around the page just handed out: the pair it ended with and pairs before it (each would shift every
      // position after it: counting again would skip pairs), pairs after it, and new pairs on both sides.
      const end = Number(lastPath.slice(-6));
      for (const i of [end, end - 1, end - 500, end - 5_000, end + 1, end + 700]) {
        await ddb.send(
          new DeleteCommand({ TableName: "mapgate-layers", Key: { datastoreId, entry: `pair#${path(i)}` } }),
        );
        stayed.delete(path(i));
        if (i > end) expected.delete(path(i));
      }
      for (const i of [end - 3, end - 4_000, end + 2, end + 3_000]) {
        const { layer, dataset } = pairItem(i, "pager-publisher", "_new");
        const access = { access: "private", owner: "pager-publisher", portalId } as const;
        expect(await recordPair(datastoreId, { layer, dataset }, access, "1".repeat(32))).toBe(true);
        if (i > end) expected.add(dataset.path);
      }
    });
    expect(paged.pages).toHaveLength(5);
    // Everything shown once, in order: what was there before each page, without what went after its page was
    // handed out, with what came after it. Nothing that stayed throughout is missing.
    expect(paged.paths).toEqual([...expected].sort());
    const shown = new Set(paged.paths);
    expect([...stayed].filter((p) => !shown.has(p))).toEqual([]);
    expect(paged.whole).toBeLessThanOrEqual(1.2 * N);
  });
});

describe("positions among the pairs the caller may see", () => {
  const M = 3_000;
  let mixed: string;
  /** Every third pair is the administrator's own private layer; some are shared, some older pairs carry no access. */
  const ownerOf = (i: number) => (i % 3 === 1 ? "pager-admin" : "pager-publisher");

  beforeAll(async () => {
    mixed = await dataStore("Mixed");
    await writePairs(
      Array.from({ length: M }, (_, i) => {
        const item = pairItem(i, ownerOf(i), "", mixed);
        if (i % 7 === 0) return { ...item, access: "org" };
        if (i % 11 === 0) {
          const { access: _a, owner: _o, portalId: _p, ...older } = item;
          return older;
        }
        return item;
      }),
    );
  });

  it("pages what the caller sees, counting only that, and splits exactly the unpaged answer", async () => {
    const whole = await call("publisher", "", mixed);
    const visible = whole.answer.layerAndDatasets;
    const expected = Array.from({ length: M }, (_, i) => i).filter(
      (i) => ownerOf(i) === "pager-publisher" || i % 7 === 0 || i % 11 === 0,
    );
    expect(visible.map((p) => p.dataset.path)).toEqual(expected.map(path));
    const paged = await pageThrough("publisher", 500, undefined, mixed);
    expect(paged.pages.flatMap((p) => p.layerAndDatasets)).toEqual(visible);
    expect(paged.pages.map((p) => p.nextStart)).toEqual([
      ...Array.from({ length: Math.ceil(visible.length / 500) - 1 }, (_, k) => 501 + 500 * k),
      -1,
    ]);
    // The hidden pairs are read (and skipped) once, not once per page: a few pairs past each page at most.
    expect(paged.whole).toBeLessThanOrEqual(M + 5 * paged.pages.length);
    // A start never handed out counts the pairs this caller sees, not all of them.
    const counted = await call("publisher", "&start=1001&num=10", mixed);
    expect(counted.answer.layerAndDatasets).toEqual(visible.slice(1_000, 1_010));
    // The administrator sees every pair, and pages them the same way.
    const all = await pageThrough("admin", 1_000, undefined, mixed);
    expect(all.paths).toEqual(Array.from({ length: M }, (_, i) => path(i)));
  });
});
