// A publish killed with SIGKILL leaves no half service: the real engine is killed at several moments of publishing a
// 30,000-row CSV (while the request is read, while the layer's data is written, around the transaction that makes
// the service), restarted on the same data folder, and each time the service either exists whole (its item, its
// place in the directory, every row answering a query, its size charged to the storage quota once) or not at all
// (no item, its name free again, the quota as it was). A name a killed publish did not take is then published.
import { afterAll, beforeAll, expect, it } from "vitest";
import { type RunningEngine, startSignedIn } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody } from "./helpers/http.ts";

const ROWS = 30_000;
/**
 * When the engine is killed, as parts of the time an unbroken publish of the same file took in this run (so the
 * kills land at the same stages on a fast machine and a busy one): one publish each.
 */
const KILL_AT = [0.02, 0.3, 0.7, 0.95, 1.2];

let engine: RunningEngine;
let token = "";
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

/** Room for the file in one request (the default body limit is 1 MB). */
const ENV = { MAX_BODY_BYTES: "4000000" };

async function restart(): Promise<void> {
  ({ engine, token } = await startSignedIn("publisher", { dataDir: engine.dataDir, env: ENV }));
}

const usage = async () => Number((await getJson(`${rest()}/community/self`, token)).storageUsage);

async function hostedItems(): Promise<{ id: string; title: string; size: number; url: string }[]> {
  const found = await postJson(`${rest()}/search`, token, {
    q: 'owner:publisher AND type:"Feature Service" AND typekeywords:"Hosted Service"',
    num: "100",
  });
  return found.results as { id: string; title: string; size: number; url: string }[];
}

beforeAll(async () => {
  ({ engine, token } = await startSignedIn("publisher", { env: ENV }));
}, 120_000);

afterAll(() => engine?.stop());

it("leaves each publish killed midway whole or gone, its name free when gone, the quota exact", async () => {
  const lines = ["name,value,latitude,longitude"];
  for (let i = 0; i < ROWS; i++) lines.push(`site_${i},${i},${(40 + (i % 1000) / 100).toFixed(4)},${(i % 360) - 180}`);
  const { body, type } = await multipartBody(
    { f: "json", token, type: "CSV", title: "Crash sites" },
    { file: { name: "sites.csv", bytes: lines.join("\n") } },
  );
  const added = (
    await call(`${rest()}/content/users/publisher/addItem`, { ca: engine.ca, body, headers: { "content-type": type } })
  ).json<{ id: string; success: boolean }>();
  const source = added.id;
  expect(added).toMatchObject({ success: true, id: expect.stringMatching(/^[0-9a-f]{32}$/) });

  const started = performance.now();
  const unbroken = (await postJson(`${rest()}/content/users/publisher/publish`, token, {
    itemId: source,
    filetype: "csv",
    publishParameters: JSON.stringify({ name: "Unbroken", locationType: "coordinates" }),
  })) as { services: { serviceurl: string }[] };
  const took = performance.now() - started;
  expect(unbroken.services[0]?.serviceurl).toMatch(/\/Hosted\/Unbroken\/FeatureServer$/);
  // What clients ask before publishing: a hosted service's name is taken (it lives in the Hosted folder).
  expect(
    await postJson(`${rest()}/portals/self/isServiceNameAvailable`, token, {
      name: "unbroken",
      type: "Feature Service",
    }),
  ).toEqual({ available: false });

  const outcomes: string[] = [];
  for (const [i, part] of KILL_AT.entries()) {
    const delay = Math.round(part * took);
    const name = `Crash_${i}`;
    const before = await usage();
    const publishing = postJson(`${rest()}/content/users/publisher/publish`, token, {
      itemId: source,
      filetype: "csv",
      publishParameters: JSON.stringify({ name, locationType: "coordinates" }),
    }).catch(() => undefined); // the connection dies with the engine
    await new Promise((r) => setTimeout(r, delay));
    await engine.stop("SIGKILL");
    await publishing;
    await restart();

    const item = (await hostedItems()).find((it) => it.url?.endsWith(`/Hosted/${name}/FeatureServer`));
    const available = await postJson(`${rest()}/portals/self/isServiceNameAvailable`, token, {
      name,
      type: "Feature Service",
    });
    if (item) {
      outcomes.push(`${delay} ms: whole`);
      expect(available.available, name).toBe(false);
      const count = await postJson(`${item.url}/0/query`, token, { where: "1=1", returnCountOnly: "true" });
      expect(count, name).toEqual({ count: ROWS });
      expect(await usage(), name).toBe(before + item.size);
    } else {
      outcomes.push(`${delay} ms: gone`);
      expect(available.available, name).toBe(true);
      const directory = await getJson(`${engine.ready.https}/arcgis/rest/services/Hosted`, token);
      expect(JSON.stringify(directory.services ?? []), name).not.toContain(`Hosted/${name}"`);
      expect(await usage(), name).toBe(before);
    }
  }
  // The earliest kill comes before the request is even read, so at least one publish is gone: publishing its
  // name now works, whole.
  console.log(`an unbroken publish took ${Math.round(took)} ms; killed at ${outcomes.join(", ")}`);
  const gone = outcomes.findIndex((o) => o.endsWith("gone"));
  expect(gone, outcomes.join(", ")).toBeGreaterThanOrEqual(0);
  const again = (await postJson(`${rest()}/content/users/publisher/publish`, token, {
    itemId: source,
    filetype: "csv",
    publishParameters: JSON.stringify({ name: `Crash_${gone}`, locationType: "coordinates" }),
  })) as { services: { serviceurl: string }[] };
  const url = again.services[0]?.serviceurl;
  expect(url).toMatch(new RegExp(`/Hosted/Crash_${gone}/FeatureServer$`));
  expect(await postJson(`${url}/0/query`, token, { where: "1=1", returnCountOnly: "true" })).toEqual({ count: ROWS });
}, 300_000);
