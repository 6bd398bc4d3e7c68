// Files uploaded in parts (`addItem` with `multipart=true`, `addPart`, `commit`, `status`), through the real local
// engine and its folder store: by the real ArcGIS REST JS client (parts sent out of order) and by raw requests; parts
// counted against the quotas as they arrive; every bad part or commit refused with the usage as it was; a partial
// item deleted with its parts; a CSV uploaded in parts published by the publish operation.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine, signInMembers } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody } from "./helpers/http.ts";

let engine: RunningEngine;
const tokens = { admin: "", publisher: "", user: "" };
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

const MB = 1024 * 1024;
const MAX_BODY = 1_000_000;
const MAX_PART = MAX_BODY - 8192;

type Json = Record<string, unknown>;
const errorOf = (answer: Json) => answer.error as { code: number; message: string; details: string[] };

/** A file of `n` bytes that begins as a CSV does and differs at every offset (so a misordered part shows). */
function csvBytes(n: number): Buffer {
  const head = Buffer.from("name,lat,lon\n");
  const body = Buffer.alloc(n - head.length);
  for (let i = 0; i < body.length; i++) body[i] = 97 + ((i * 7 + Math.floor(i / 26)) % 26);
  return Buffer.concat([head, body]);
}

async function startUpload(token: string, fields: Json, owner = "publisher"): Promise<string> {
  const answer = await postJson(`${rest()}/content/users/${owner}/addItem`, token, {
    multipart: "true",
    ...(fields as Record<string, string>),
  });
  expect(answer, JSON.stringify(answer)).toMatchObject({ success: true, folder: null });
  return String(answer.id);
}

async function addPart(token: string, itemId: string, partNum: number, bytes: Buffer, owner = "publisher") {
  const { body, type } = await multipartBody({ f: "json", token }, { file: { name: "blob", bytes } });
  return (
    await call(`${rest()}/content/users/${owner}/items/${itemId}/addPart?partNum=${partNum}`, {
      ca: engine.ca,
      body,
      headers: { "content-type": type },
    })
  ).json<Json>();
}

const commit = (token: string, itemId: string, fields: Record<string, string> = {}, owner = "publisher") =>
  postJson(`${rest()}/content/users/${owner}/items/${itemId}/commit`, token, fields);
const status = (token: string, itemId: string, owner = "publisher") =>
  getJson(`${rest()}/content/users/${owner}/items/${itemId}/status`, token);
const usage = async (token: string) =>
  ((await getJson(`${rest()}/community/self`, token)) as { storageUsage: number }).storageUsage;
const partsOnDisk = (itemId: string) => {
  const dir = join(engine.dataDir, "item-files", "items", "parts", itemId);
  return existsSync(dir) ? readdirSync(dir).sort() : [];
};
const fileOnDisk = (itemId: string) => existsSync(join(engine.dataDir, "item-files", "items", itemId));

beforeAll(async () => {
  engine = await startEngine({ env: { STORAGE_QUOTA_USER_MB: "4", MAX_BODY_BYTES: String(MAX_BODY) } });
  Object.assign(tokens, await signInMembers(rest(), engine.ca));
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("a file uploaded in parts", () => {
  it("is made by ArcGIS REST JS: item, three parts out of order, commit, completed, the exact bytes back", async () => {
    const file = csvBytes(2_500_000);
    const cuts = [0, 900_000, 1_800_000, file.length];
    const part = (n: number) => file.subarray(cuts[n - 1], cuts[n]).toString("base64");
    const before = await usage(tokens.publisher);
    const [created] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [{ fn: "createItemMultipart", options: { item: { title: "Big sites", type: "CSV" }, filename: "sites.csv" } }],
      { asInBrowser: true },
    )) as [{ success: boolean; id: string; folder: unknown }];
    expect(created).toEqual({ success: true, id: expect.stringMatching(/^[0-9a-f]{32}$/), folder: null });
    const id = created.id;
    const answers = await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        { fn: "getItemStatus", options: { id } },
        { fn: "addItemPart", options: { id, partNum: 3, base64: part(3) } },
        { fn: "addItemPart", options: { id, partNum: 1, base64: part(1) } },
        { fn: "addItemPart", options: { id, partNum: 2, base64: part(2) } },
        { fn: "getItemStatus", options: { id } },
        { fn: "commitItemUpload", options: { id, item: { type: "CSV", title: "Big sites" } } },
        { fn: "getItemStatus", options: { id } },
      ],
      { asInBrowser: true },
    );
    expect(answers).toEqual([
      { status: "partial", statusMessage: "partial", itemId: id },
      { success: true, id },
      { success: true, id },
      { success: true, id },
      { status: "partial", statusMessage: "partial", itemId: id },
      { success: true, id },
      { status: "completed", statusMessage: "completed", itemId: id },
    ]);
    const data = await call(`${rest()}/content/items/${id}/data?token=${tokens.publisher}`, { ca: engine.ca });
    expect(data.status).toBe(200);
    expect(Buffer.from(data.body).equals(file)).toBe(true);
    expect(data.headers["content-disposition"]).toBe(`attachment; filename="sites.csv"; filename*=UTF-8''sites.csv`);
    const item = await getJson(`${rest()}/content/items/${id}`, tokens.publisher);
    expect(item).toMatchObject({ id, type: "CSV", title: "Big sites", name: "sites.csv", size: file.length });
    // The parts are gone; the file counts once.
    expect(partsOnDisk(id)).toEqual([]);
    expect(await usage(tokens.publisher)).toBe(before + file.length);
    // Once committed, the item takes no more parts.
    const late = await addPart(tokens.publisher, id, 4, Buffer.from("x"));
    expect(errorOf(late)).toEqual({
      code: 400,
      message: "Unable to add part.",
      details: ["The item's file is whole (committed, or uploaded in one request): it takes no more parts."],
    });
    expect(await usage(tokens.publisher)).toBe(before + file.length);
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
  });

  it("commits asynchronously: answered at once, processing until its status assembles it", async () => {
    const file = csvBytes(300_000);
    const id = await startUpload(tokens.publisher, { filename: "later.csv", type: "CSV", title: "Later" });
    expect(await addPart(tokens.publisher, id, 2, file.subarray(150_000))).toEqual({ success: true, id });
    expect(await addPart(tokens.publisher, id, 1, file.subarray(0, 150_000))).toEqual({ success: true, id });
    expect(await commit(tokens.publisher, id, { async: "true" })).toEqual({ success: true, id });
    // Not whole yet: no file, and the data says so.
    expect(fileOnDisk(id)).toBe(false);
    const early = await getJson(`${rest()}/content/items/${id}/data`, tokens.publisher);
    expect(errorOf(early)).toEqual({
      code: 400,
      message: "Unable to get item data.",
      details: ["The item's file is not whole yet (its upload is processing): its status says when it is."],
    });
    // Nothing assembles it after the answer: the owner's next status request does.
    expect(await status(tokens.publisher, id)).toEqual({ status: "completed", statusMessage: "completed", itemId: id });
    const data = await call(`${rest()}/content/items/${id}/data?token=${tokens.publisher}`, { ca: engine.ca });
    expect(Buffer.from(data.body).equals(file)).toBe(true);
    expect(partsOnDisk(id)).toEqual([]);
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
  });

  it("takes parts sent at once, as ArcGIS allows, and counts each once", async () => {
    const before = await usage(tokens.publisher);
    const file = csvBytes(600_000);
    const id = await startUpload(tokens.publisher, { filename: "together.csv" });
    const cuts = [0, 100_000, 220_000, 350_000, 480_000, file.length];
    const answers = await Promise.all(
      [5, 3, 1, 4, 2].map((n) => addPart(tokens.publisher, id, n, file.subarray(cuts[n - 1], cuts[n]))),
    );
    expect(answers).toEqual(Array.from({ length: 5 }, () => ({ success: true, id })));
    expect(await usage(tokens.publisher)).toBe(before + file.length);
    expect(await commit(tokens.publisher, id)).toEqual({ success: true, id });
    const data = await call(`${rest()}/content/items/${id}/data?token=${tokens.publisher}`, { ca: engine.ca });
    expect(Buffer.from(data.body).equals(file)).toBe(true);
    expect(await usage(tokens.publisher)).toBe(before + file.length);
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
    expect(await usage(tokens.publisher)).toBe(before);
  });

  it("refuses a commit with missing parts, naming them, and stays partial", async () => {
    const id = await startUpload(tokens.publisher, { filename: "gaps.csv" });
    for (const n of [1, 3, 4, 8]) await addPart(tokens.publisher, id, n, csvBytes(100));
    const answer = await commit(tokens.publisher, id);
    expect(errorOf(answer)).toEqual({
      code: 400,
      message: "Unable to commit item.",
      details: ["Parts 2, 5–7 are missing: parts 1 to 8 must all be added before commit."],
    });
    expect(await status(tokens.publisher, id)).toEqual({ status: "partial", statusMessage: "partial", itemId: id });
    const none = await startUpload(tokens.publisher, { filename: "none.csv" });
    expect(errorOf(await commit(tokens.publisher, none)).details).toEqual([
      "No parts were uploaded: add them with addPart first.",
    ]);
    // A bad part number is refused before anything is kept.
    expect(errorOf(await addPart(tokens.publisher, id, 10_001, csvBytes(100))).details).toEqual([
      "'partNum' must be a whole number from 1 to 10000 (got '10001').",
    ]);
    expect(partsOnDisk(id)).toEqual(["00001", "00003", "00004", "00008"]);
    for (const item of [id, none])
      await postJson(`${rest()}/content/users/publisher/items/${item}/delete`, tokens.publisher);
  });

  it("refuses a part too large for a request, saying which sizes this engine takes", async () => {
    const id = await startUpload(tokens.publisher, { filename: "large.csv" });
    const before = await usage(tokens.publisher);
    const sizes = `A part may hold at most ${MAX_PART} bytes here: a request body is at most ${MAX_BODY} bytes (MAX_BODY_BYTES), 8192 of which are kept for the form's other fields;`;
    // Over the part limit, within the body limit: refused by the operation.
    const over = await addPart(tokens.publisher, id, 1, csvBytes(MAX_PART + 1));
    expect(errorOf(over).code).toBe(400);
    expect(errorOf(over).details).toEqual([
      `${sizes} this one was ${MAX_PART + 1} bytes. Send smaller parts (ArcGIS's 5 MB minimum part size does not apply).`,
    ]);
    // Over the body limit: refused before the body is read, with the same sizes.
    const huge = await addPart(tokens.publisher, id, 1, csvBytes(MAX_BODY + 10));
    expect(errorOf(huge)).toMatchObject({ code: 400, message: "Unable to add part." });
    expect(errorOf(huge).details[0]).toMatch(new RegExp(`^${sizes.replace(/[().]/g, "\\$&")} this one was \\d+ bytes`));
    expect(await usage(tokens.publisher)).toBe(before);
    expect(partsOnDisk(id)).toEqual([]);
    // A part of exactly the limit is taken.
    expect(await addPart(tokens.publisher, id, 1, csvBytes(MAX_PART))).toEqual({ success: true, id });
    expect(await usage(tokens.publisher)).toBe(before + MAX_PART);
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
    expect(await usage(tokens.publisher)).toBe(before);
  });

  it("takes parts and commits from the item's owner or an administrator only", async () => {
    const id = await startUpload(tokens.publisher, { filename: "mine.csv" });
    const byUser = await addPart(tokens.user, id, 1, csvBytes(100));
    expect(errorOf(byUser).code).toBe(403);
    expect(errorOf(await commit(tokens.user, id)).code).toBe(403);
    // Nor under another member's name in the path.
    expect(errorOf(await addPart(tokens.user, id, 1, csvBytes(100), "user"))).toEqual({
      code: 400,
      messageCode: "CONT_0001",
      message: "Item does not exist or is inaccessible.",
      details: [`Item '${id}' does not exist or is inaccessible.`],
    });
    expect(partsOnDisk(id)).toEqual([]);
    // An administrator may (as they may change any item of the organization).
    expect(await addPart(tokens.admin, id, 1, csvBytes(100))).toEqual({ success: true, id });
    expect(await commit(tokens.admin, id)).toEqual({ success: true, id });
    expect(await status(tokens.publisher, id)).toMatchObject({ status: "completed" });
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
  });

  it("counts parts against the quota as they arrive: a part past it is refused, the usage as it was", async () => {
    const before = await usage(tokens.publisher);
    const id = await startUpload(tokens.publisher, { filename: "quota.csv" });
    const part = csvBytes(MAX_PART);
    const room = 4 * MB - before;
    const fit = Math.floor(room / MAX_PART);
    for (let n = 1; n <= fit; n++) expect(await addPart(tokens.publisher, id, n, part)).toEqual({ success: true, id });
    expect(await usage(tokens.publisher)).toBe(before + fit * MAX_PART);
    const over = await addPart(tokens.publisher, id, fit + 1, part);
    expect(errorOf(over)).toMatchObject({ code: 403, message: "Storage quota exceeded." });
    expect(await usage(tokens.publisher)).toBe(before + fit * MAX_PART);
    expect(partsOnDisk(id)).toHaveLength(fit);
    // Replacing a part counts only the difference.
    expect(await addPart(tokens.publisher, id, 1, csvBytes(1000))).toEqual({ success: true, id });
    expect(await usage(tokens.publisher)).toBe(before + (fit - 1) * MAX_PART + 1000);
    // An abandoned upload is its owner's partial item, listed in their content, and deleted with its parts.
    const content = (await getJson(`${rest()}/content/users/publisher`, tokens.publisher)) as { items: Json[] };
    expect(content.items.map((i) => i.id)).toContain(id);
    expect(await status(tokens.publisher, id)).toMatchObject({ status: "partial" });
    expect(await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher)).toEqual({
      success: true,
      itemId: id,
    });
    expect(partsOnDisk(id)).toEqual([]);
    expect(await usage(tokens.publisher)).toBe(before);
  });

  it("fails a commit whose file is not what its type says: the reason in its status, parts and bytes given back", async () => {
    const before = await usage(tokens.publisher);
    const id = await startUpload(tokens.publisher, { filename: "fake.gpkg", type: "GeoPackage" });
    await addPart(tokens.publisher, id, 1, Buffer.from("not a database"));
    const answer = await commit(tokens.publisher, id);
    expect(errorOf(answer)).toEqual({
      code: 400,
      message: "Unable to commit item.",
      details: ["The file is not a GeoPackage: its content does not begin as one does."],
    });
    expect(await status(tokens.publisher, id)).toEqual({
      status: "failed",
      statusMessage: "The file is not a GeoPackage: its content does not begin as one does.",
      itemId: id,
    });
    expect(partsOnDisk(id)).toEqual([]);
    expect(fileOnDisk(id)).toBe(false);
    expect(await usage(tokens.publisher)).toBe(before);
    expect(errorOf(await addPart(tokens.publisher, id, 1, Buffer.from("x"))).details[0]).toMatch(
      /^The item's upload failed \(The file is not a GeoPackage/,
    );
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
  });

  it("refuses addItem's multipart with a file, or without a file name", async () => {
    const { body, type } = await multipartBody(
      { f: "json", token: tokens.publisher, multipart: "true" },
      { file: { name: "a.csv", bytes: "a,b\n1,2\n" } },
    );
    const both = (
      await call(`${rest()}/content/users/publisher/addItem`, {
        ca: engine.ca,
        body,
        headers: { "content-type": type },
      })
    ).json<Json>();
    expect(errorOf(both).details).toEqual([
      "With multipart=true the file comes in parts (addPart): send no 'file' here.",
    ]);
    const nameless = await postJson(`${rest()}/content/users/publisher/addItem`, tokens.publisher, {
      multipart: "true",
      type: "CSV",
    });
    expect(errorOf(nameless).details).toEqual([
      "'filename' must be specified with multipart=true (the name of the file to come).",
    ]);
    const flag = await postJson(`${rest()}/content/users/publisher/addItem`, tokens.publisher, { multipart: "yes" });
    expect(errorOf(flag).details).toEqual(["'multipart' must be true or false."]);
  });

  it("publishes a CSV uploaded in parts through the publish operation", async () => {
    const rows = ["name,lat,lon", ...Array.from({ length: 400 }, (_, i) => `site ${i},${(i % 80) - 40},${i % 170}`)];
    const file = Buffer.from(`${rows.join("\n")}\n`);
    const half = Math.floor(file.length / 2);
    const id = await startUpload(tokens.publisher, { filename: "parted.csv", type: "CSV", title: "Parted" });
    await addPart(tokens.publisher, id, 2, file.subarray(half));
    await addPart(tokens.publisher, id, 1, file.subarray(0, half));
    expect(await commit(tokens.publisher, id)).toEqual({ success: true, id });
    const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
      itemId: id,
      filetype: "csv",
    });
    const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
      itemId: id,
      filetype: "csv",
      publishParameters: JSON.stringify({ ...(analyzed.publishParameters as object), name: "Parted" }),
    })) as { services: { serviceurl: string; serviceItemId: string }[] };
    const [service] = published.services;
    expect(service?.serviceurl).toBe(`${engine.ready.https}/arcgis/rest/services/Hosted/Parted/FeatureServer`);
    const count = await getJson(`${service?.serviceurl}/0/query?where=1%3D1&returnCountOnly=true`, tokens.publisher);
    expect(count).toEqual({ count: 400 });
    await postJson(`${rest()}/content/users/publisher/items/${service?.serviceItemId}/delete`, tokens.publisher);
    await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher);
  });
});
