// Publishing as a job, as ArcGIS publishes: with PUBLISH_IN_REQUEST_MB=0 every publish starts a `publishHosted` job
// on the real engine's workflow (the same definition file and task module the stack deploys). The answer names the
// service item and the job at once; the item's status (asked with the job's id, as clients poll it) is
// `processing`, then `completed` with every row served, or `failed` with the reason, the name free again and
// nothing kept. The name is held while the job runs. A job killed with SIGKILL midway is resumed when the engine
// starts again and makes the service whole, its size charged to the quota once.
import { afterAll, beforeAll, expect, it } from "vitest";
import { PASSWORDS, type RunningEngine, startEngine, startSignedIn } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody, signIn } from "./helpers/http.ts";

const ROWS = 30_000;
const ENV = { MAX_BODY_BYTES: "4000000", PUBLISH_IN_REQUEST_MB: "0" };

let engine: RunningEngine;
let token = "";
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

type Published = Record<string, unknown> & {
  services: { serviceurl: string; serviceItemId: string; jobId: string; size: number; type: string }[];
};

const usage = async () => Number((await getJson(`${rest()}/community/self`, token)).storageUsage);

async function upload(name: string, title: string, text: string): Promise<string> {
  const { body, type } = await multipartBody({ f: "json", token, type: "CSV", title }, { file: { name, bytes: text } });
  const added = (
    await call(`${rest()}/content/users/publisher/addItem`, { ca: engine.ca, body, headers: { "content-type": type } })
  ).json<{ id: string; success: boolean }>();
  expect(added.success).toBe(true);
  return added.id;
}

const publish = (itemId: string, name: string) =>
  postJson(`${rest()}/content/users/publisher/publish`, token, {
    itemId,
    filetype: "csv",
    publishParameters: JSON.stringify({ name, locationType: "coordinates" }),
  });

const status = (serviceItemId: string, jobId: string) =>
  getJson(
    `${rest()}/content/users/publisher/items/${serviceItemId}/status?jobId=${jobId}&jobType=publish`,
    token,
  ) as Promise<{ status: string; statusMessage: string; itemId: string }>;

/** Polls as clients do, until the job ends (bounded: the test's own timeout ends a job that never does). */
async function ended(serviceItemId: string, jobId: string): Promise<{ status: string; statusMessage: string }> {
  for (;;) {
    const s = await status(serviceItemId, jobId);
    if (s.status !== "processing") return s;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const sites = () => {
  const lines = ["name,value,latitude,longitude"];
  for (let i = 0; i < ROWS; i++) lines.push(`site_${i},${i},${(40 + (i % 1000) / 100).toFixed(4)},${(i % 360) - 180}`);
  return lines.join("\n");
};

beforeAll(async () => {
  ({ engine, token } = await startSignedIn("publisher", { env: ENV }));
}, 120_000);

afterAll(() => engine?.stop());

it("answers at once with the service item and job, holds the name, and completes with every row served", async () => {
  const source = await upload("sites.csv", "Job sites", sites());
  const before = await usage();
  const answer = (await publish(source, "Job_sites")) as Published;
  const [service] = answer.services;
  expect(service).toMatchObject({
    type: "Feature Service",
    serviceurl: expect.stringMatching(/\/Hosted\/Job_sites\/FeatureServer$/),
    serviceItemId: expect.stringMatching(/^[0-9a-f]{32}$/),
    jobId: expect.stringMatching(/^[0-9a-f]{32}$/),
  });
  if (!service) throw new Error("no service");
  // The name is held from the answer on: a second publish of it is refused whether the job has ended or not.
  expect(await publish(source, "job_SITES")).toEqual({
    error: { code: 400, message: "Unable to publish item.", details: ["Service name 'job_SITES' already exists."] },
  });
  expect(await ended(service.serviceItemId, service.jobId)).toMatchObject({
    status: "completed",
    statusMessage: "completed",
  });
  const item = await getJson(`${rest()}/content/items/${service.serviceItemId}`, token);
  expect(item).toMatchObject({ type: "Feature Service", owner: "publisher", url: service.serviceurl });
  expect(await postJson(`${service.serviceurl}/0/query`, token, { where: "1=1", returnCountOnly: "true" })).toEqual({
    count: ROWS,
  });
  expect(await usage()).toBe(before + Number(item.size));
  // An overwrite runs within its request: a file publishing would hand to a job is refused, said so.
  const overwrite = await postJson(`${rest()}/content/users/publisher/publish`, token, {
    itemId: source,
    filetype: "csv",
    overwrite: "true",
    publishParameters: JSON.stringify({ name: "Job_sites", locationType: "coordinates" }),
  });
  expect(overwrite.error).toMatchObject({
    code: 400,
    details: [expect.stringMatching(/^An overwrite takes a file of at most 0 MB \(PUBLISH_IN_REQUEST_MB\)/)],
  });
  // Another member sees neither the job nor the private item.
  const other = await signIn(rest(), engine.ca, "user", PASSWORDS.user);
  const theirs = await getJson(
    `${rest()}/content/users/publisher/items/${service.serviceItemId}/status?jobId=${service.jobId}`,
    other,
  );
  expect(theirs.status).not.toBe("completed");
  expect(JSON.stringify(theirs)).not.toContain("processing");
}, 120_000);

it("fails with the reason a request would have answered, keeps nothing and gives the name back", async () => {
  const header = Array.from({ length: 1001 }, (_, i) => `c${i}`).join(",");
  const source = await upload(
    "wide.csv",
    "Too wide",
    `${header}\n${Array.from({ length: 1001 }, () => "1").join(",")}`,
  );
  const before = await usage();
  const [service] = ((await publish(source, "Too_wide")) as Published).services;
  if (!service) throw new Error("no service");
  expect(await ended(service.serviceItemId, service.jobId)).toEqual({
    status: "failed",
    statusMessage: "The layer was not published. The CSV file has 1001 columns; a layer holds at most 1000.",
    itemId: service.serviceItemId,
    jobId: service.jobId,
  });
  expect(
    await postJson(`${rest()}/portals/self/isServiceNameAvailable`, token, {
      name: "Too_wide",
      type: "Feature Service",
    }),
  ).toEqual({
    available: true,
  });
  expect((await getJson(`${rest()}/content/items/${service.serviceItemId}`, token)).error).toMatchObject({ code: 400 });
  expect(await usage()).toBe(before);
}, 60_000);

it("resumes a job killed midway when the engine starts again, and makes the service whole once", async () => {
  const source = await upload("killed.csv", "Killed sites", sites());
  const before = await usage();
  const [service] = ((await publish(source, "Killed_sites")) as Published).services;
  if (!service) throw new Error("no service");
  // Killed while its task reads and keeps the rows (the answer came first: the job was written).
  await new Promise((r) => setTimeout(r, 300));
  // Still running when killed (30,000 rows take over a second to keep), or this would prove nothing.
  expect((await status(service.serviceItemId, service.jobId)).status).toBe("processing");
  await engine.stop("SIGKILL");
  engine = await startEngine({ dataDir: engine.dataDir, env: ENV });
  token = await signIn(rest(), engine.ca, "publisher", PASSWORDS.publisher);
  expect(await ended(service.serviceItemId, service.jobId)).toMatchObject({ status: "completed" });
  const url = service.serviceurl.replace(/^https:\/\/[^/]+/, engine.ready.https);
  expect(await postJson(`${url}/0/query`, token, { where: "1=1", returnCountOnly: "true" })).toEqual({ count: ROWS });
  const item = await getJson(`${rest()}/content/items/${service.serviceItemId}`, token);
  expect(await usage()).toBe(before + Number(item.size));
}, 240_000);
