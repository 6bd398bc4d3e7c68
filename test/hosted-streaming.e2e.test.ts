// Publishing reads a file as a stream, twice, and never holds it or its rows whole: the real engine runs with a V8
// heap of HEAP_MB (`--max-old-space-size`, the engine's own dynalite and demo data included) and publishes a CSV
// of ROWS points uploaded in parts (about 24 MB; the file as text alone, plus the arrays and objects the old
// whole-file reading made of it, needed several times that heap), then answers queries with every row.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PASSWORDS, type RunningEngine, startSignedIn } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody, signIn } from "./helpers/http.ts";

const ROWS = 320_000;
/** Rows whose latitude does not parse: kept without a point, and counted in the publish answer's notes. */
const UNLOCATED = [1000, 150_000, 300_000];
const HEAP_MB = 160;
/** Room for 3.9 MB parts (the default body limit is 1 MB). */
const ENV = { MAX_BODY_BYTES: "4000000", NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` };

let engine: RunningEngine;
let token = "";
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

beforeAll(async () => {
  ({ engine, token } = await startSignedIn("publisher", { env: ENV }));
}, 120_000);

afterAll(() => engine?.stop());

/** The CSV, made a row at a time (id, name, a double, a date, latitude, longitude). */
function csv(): Buffer {
  const lines = ["id,name,value,day,latitude,longitude"];
  for (let i = 0; i < ROWS; i++) {
    const lat = UNLOCATED.includes(i) ? "north" : (-60 + ((i * 7) % 12_000) / 100).toFixed(4);
    const day = `2024-${String(1 + (i % 12)).padStart(2, "0")}-${String(1 + (i % 28)).padStart(2, "0")}`;
    lines.push(`${i},site ${i},${(i / 7).toFixed(3)},${day},${lat},${(-179 + (i % 35_800) / 100).toFixed(3)}`);
  }
  return Buffer.from(lines.join("\n"));
}

/** The engine's peak resident memory so far (Linux: VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const line = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Math.round(Number(line?.[1] ?? 0) / 1024);
}

it("publishes a CSV of 320,000 points within a 160 MB heap and answers every row", async () => {
  const file = csv();
  const started = await postJson(`${rest()}/content/users/publisher/addItem`, token, {
    multipart: "true",
    type: "CSV",
    title: "Many sites",
    filename: "many-sites.csv",
  });
  expect(started).toMatchObject({ success: true });
  const id = String(started.id);
  const PART = 3_900_000;
  for (let n = 1, at = 0; at < file.length; n++, at += PART) {
    const { body, type } = await multipartBody(
      { f: "json", token },
      { file: { name: "blob", bytes: file.subarray(at, at + PART) } },
    );
    const added = await call(`${rest()}/content/users/publisher/items/${id}/addPart?partNum=${n}`, {
      ca: engine.ca,
      body,
      headers: { "content-type": type },
    });
    expect(added.json()).toEqual({ success: true, id });
  }
  expect(await postJson(`${rest()}/content/users/publisher/items/${id}/commit`, token, {})).toEqual({
    success: true,
    id,
  });

  // Analyze reads the whole file once for its fields, and its first ten rows again.
  const analyzed = (await postJson(`${rest()}/content/features/analyze`, token, { itemId: id, filetype: "csv" })) as {
    publishParameters: { locationType: string; layerInfo: { fields: { name: string; type: string }[] } };
    records: unknown[];
  };
  expect(analyzed.publishParameters.locationType).toBe("coordinates");
  expect(analyzed.publishParameters.layerInfo.fields.map((f) => [f.name, f.type])).toEqual([
    ["fid", "esriFieldTypeOID"],
    ["id", "esriFieldTypeInteger"],
    ["name", "esriFieldTypeString"],
    ["value", "esriFieldTypeDouble"],
    ["day", "esriFieldTypeDate"],
    ["latitude", "esriFieldTypeString"],
    ["longitude", "esriFieldTypeDouble"],
  ]);
  expect(analyzed.records).toHaveLength(10);

  const published = (await postJson(`${rest()}/content/users/publisher/publish`, token, {
    itemId: id,
    filetype: "csv",
    publishParameters: JSON.stringify({ name: "ManySites", locationType: "coordinates" }),
  })) as { services: { serviceurl: string; size: number; serviceItemId: string; jobId: string }[] };
  const [service] = published.services;
  expect(service?.serviceurl).toMatch(/\/Hosted\/ManySites\/FeatureServer$/);
  expect(service?.size).toBe(file.length);
  // A file past PUBLISH_IN_REQUEST_MB is published by a job, in the engine's own process and heap: followed as
  // clients follow it, then its warnings read where an administrator reads a job's.
  const status = `${rest()}/content/users/publisher/items/${service?.serviceItemId}/status?jobId=${service?.jobId}`;
  let state = "processing";
  while (state === "processing") {
    await new Promise((r) => setTimeout(r, 250));
    state = String((await getJson(status, token)).status);
  }
  expect(state).toBe("completed");
  const admin = await signIn(rest(), engine.ca, "admin", PASSWORDS.admin);
  const job = await getJson(`${rest()}/portals/self/jobs/${service?.jobId}`, admin);
  expect(job.messages).toEqual([
    {
      type: "warning",
      message: "3 row(s) had no coordinates that parse as a latitude and longitude: kept without a point.",
    },
  ]);
  const layer = `${service?.serviceurl}/0/query`;
  expect(await getJson(`${layer}?where=1%3D1&returnCountOnly=true&f=json`, token)).toEqual({ count: ROWS });
  expect(await getJson(`${layer}?where=latitude%20IS%20NULL&returnCountOnly=true&f=json`, token)).toEqual({
    count: 0,
  });
  // The last row, as written: every value kept, its point where the file put it.
  const last = (await getJson(
    `${layer}?where=id%3D${ROWS - 1}&outFields=id,name,value,day,longitude&f=json`,
    token,
  )) as { features: { attributes: Record<string, unknown>; geometry: { x: number; y: number } }[] };
  const i = ROWS - 1;
  expect(last.features[0]?.attributes).toMatchObject({
    id: i,
    name: `site ${i}`,
    value: Number((i / 7).toFixed(3)),
    day: Date.UTC(2024, i % 12, 1 + (i % 28)),
    longitude: Number((-179 + (i % 35_800) / 100).toFixed(3)),
  });
  // The engine stayed up within its heap: one more request answers.
  expect(engine.child.exitCode).toBeNull();
  console.log(`engine peak RSS after publishing ${ROWS} rows: ${peakRssMb(engine.child.pid as number)} MB`);
}, 300_000);
