// Files uploaded as items (`addItem` with a multipart `file`), through the real local engine: by the real ArcGIS REST
// JS client and by raw multipart bodies; served back only as attachments; every bad upload refused with nothing
// left behind; quotas held; the file gone with its item.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine, signInMembers } from "./helpers/engine.ts";
import { type Answer, call, jsonCalls, multipartBody } from "./helpers/http.ts";

let engine: RunningEngine;
const tokens = { admin: "", publisher: "", user: "" };
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

const CSV = "name,lat,lon\nLouvre,48.8606,2.3376\nPrado,40.4138,-3.6921\n";
const GPKG_HEADER = Buffer.concat([Buffer.from("SQLite format 3\u0000"), Buffer.alloc(84)]);
const MB = 1024 * 1024;

const multipart = multipartBody;

async function upload(
  token: string,
  fields: Record<string, string>,
  files: Record<string, { name: string; bytes: Buffer | string }>,
  path = "content/users/publisher/addItem",
): Promise<Record<string, unknown>> {
  const { body, type } = await multipart({ f: "json", token, ...fields }, files);
  return (await call(`${rest()}/${path}`, { ca: engine.ca, body, headers: { "content-type": type } })).json();
}

const itemFilesOf = (dataDir: string) => {
  const dir = join(dataDir, "item-files", "items");
  return existsSync(dir) ? readdirSync(dir) : [];
};

const errorOf = (answer: Record<string, unknown>) =>
  answer.error as { code: number; message: string; details: string[] };

beforeAll(async () => {
  engine = await startEngine({ env: { STORAGE_QUOTA_USER_MB: "2", MAX_BODY_BYTES: "3000000" } });
  Object.assign(tokens, await signInMembers(rest(), engine.ca));
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("uploading a file as an item", () => {
  it("takes a CSV from ArcGIS REST JS's createItem, and gives it back as an attachment, byte for byte", async () => {
    const [created] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        {
          fn: "createItemWithFile",
          options: {
            item: { title: "Museums", type: "CSV" },
            name: "museums.csv",
            base64: Buffer.from(CSV).toString("base64"),
          },
        },
      ],
      { asInBrowser: true },
    )) as [{ success: boolean; id: string }];
    expect(created).toMatchObject({ success: true, id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const item = await getJson(`${rest()}/content/items/${created.id}`, tokens.publisher);
    expect(item).toMatchObject({
      id: created.id,
      owner: "publisher",
      title: "Museums",
      type: "CSV",
      name: "museums.csv",
      size: Buffer.byteLength(CSV),
      access: "private",
    });
    const data = await call(`${rest()}/content/items/${created.id}/data?token=${tokens.publisher}`, { ca: engine.ca });
    expect(data.status).toBe(200);
    expect(data.text).toBe(CSV);
    expect(data.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(data.headers["content-disposition"]).toBe(
      `attachment; filename="museums.csv"; filename*=UTF-8''museums.csv`,
    );
    expect(data.headers["x-content-type-options"]).toBe("nosniff");
    expect(data.headers["content-security-policy"]).toBe("sandbox; default-src 'none'");
    // The same file is on disk under the item's id alone.
    expect(itemFilesOf(engine.dataDir)).toContain(created.id);
  });

  it("knows the type from the file's name, keeps the name without its path, and titles the item after it", async () => {
    const added = await upload(tokens.publisher, {}, { file: { name: "../../Parcels 2026.gpkg", bytes: GPKG_HEADER } });
    expect(added).toMatchObject({ success: true });
    const item = await getJson(`${rest()}/content/items/${String(added.id)}`, tokens.publisher);
    expect(item).toMatchObject({ type: "GeoPackage", name: "Parcels 2026.gpkg", title: "Parcels 2026" });
    const data = await call(`${rest()}/content/items/${String(added.id)}/data?token=${tokens.publisher}`, {
      ca: engine.ca,
    });
    expect(data.body.equals(GPKG_HEADER)).toBe(true);
    // A name beyond ASCII reaches the browser whole (RFC 8187), and nothing in it can break the header.
    const odd = await upload(tokens.publisher, {}, { file: { name: 'Café "x";.csv', bytes: CSV } });
    const oddData = await call(`${rest()}/content/items/${String(odd.id)}/data?token=${tokens.publisher}`, {
      ca: engine.ca,
    });
    expect(oddData.headers["content-disposition"]).toBe(
      `attachment; filename="Caf_ _x__.csv"; filename*=UTF-8''Caf%C3%A9%20%22x%22%3B.csv`,
    );
  });

  it("shows the file only to those who may see the item", async () => {
    const added = await upload(tokens.publisher, { title: "Private sites" }, { file: { name: "s.csv", bytes: CSV } });
    const id = String(added.id);
    const asOther = await call(`${rest()}/content/items/${id}/data?f=json&token=${tokens.user}`, { ca: engine.ca });
    expect(asOther.text).not.toContain("Louvre");
    // As ArcGIS: an item the caller may not see does not exist for them.
    expect(JSON.parse(asOther.text)).toMatchObject({ error: { code: 400 } });
    const anonymous = await call(`${rest()}/content/items/${id}/data?f=json`, { ca: engine.ca });
    expect(anonymous.text).not.toContain("Louvre");
    const admin = await call(`${rest()}/content/items/${id}/data?token=${tokens.admin}`, { ca: engine.ca });
    expect(admin.text).toBe(CSV);
  });

  it("refuses what is not the type it claims, or no file a type takes, and keeps nothing of it", async () => {
    const before = itemFilesOf(engine.dataDir).length;
    const cases: [Record<string, string>, { name: string; bytes: Buffer | string }, RegExp][] = [
      [{ type: "GeoPackage" }, { name: "fake.gpkg", bytes: "not a database" }, /is not a GeoPackage/],
      [{ type: "CSV" }, { name: "tool.exe", bytes: "MZ" }, /An item of type 'CSV' is a CSV file, named \*\.csv/],
      [{}, { name: "page.html", bytes: "<script>alert(1)</script>" }, /is not known from its name/],
      [{ type: "Web Mapping Application" }, { name: "a.csv", bytes: CSV }, /cannot be added as an item of type/],
      [{ type: "Shapefile" }, { name: "roads.zip", bytes: "plain text" }, /is not a zipped shapefile/],
      [{}, { name: "empty.csv", bytes: "" }, /The file is empty/],
    ];
    for (const [fields, file, detail] of cases) {
      const answer = await upload(tokens.publisher, fields, { file });
      expect(errorOf(answer), file.name).toMatchObject({ code: 400, message: "Unable to add item." });
      expect(errorOf(answer).details.join(" "), file.name).toMatch(detail);
    }
    expect(itemFilesOf(engine.dataDir).length).toBe(before);
  });

  it("refuses a file where the operation takes none, a second file, and a body that is not multipart", async () => {
    const elsewhere = await upload(tokens.publisher, { title: "x" }, { file: { name: "a.csv", bytes: CSV } }, "search");
    expect(errorOf(elsewhere)).toMatchObject({ code: 400, message: "Unexpected file." });
    const misnamed = await upload(tokens.publisher, {}, { text: { name: "a.csv", bytes: CSV } });
    expect(errorOf(misnamed).details).toEqual([
      "'text' cannot be a file here; files are taken as 'file', 'thumbnail'.",
    ]);
    const both = await upload(tokens.publisher, { file: "x" }, { file: { name: "a.csv", bytes: CSV } });
    expect(errorOf(both)).toMatchObject({ code: 400, message: "Conflicting parameters." });
    const broken = await call(`${rest()}/content/users/publisher/addItem?f=json&token=${tokens.publisher}`, {
      ca: engine.ca,
      body: '--nope\r\nContent-Disposition: form-data; name="a"\r\n\r\nb',
      headers: { "content-type": "multipart/form-data; boundary=other" },
    });
    expect(broken.json()).toMatchObject({ error: { code: 400, message: "Invalid multipart body." } });
    const xml = await call(`${rest()}/content/users/publisher/addItem?f=json&token=${tokens.publisher}`, {
      ca: engine.ca,
      body: "<a/>",
      headers: { "content-type": "text/xml" },
    });
    expect(xml.json<{ error: { details: string[] } }>().error.details[0]).toMatch(/multipart\/form-data/);
  });

  it("lets only members who may create items upload, and only to their own content", async () => {
    const forOther = await upload(
      tokens.user,
      {},
      { file: { name: "a.csv", bytes: CSV } },
      "content/users/publisher/addItem",
    );
    expect(errorOf(forOther)).toMatchObject({ code: 403 });
    const anonymous = await (async () => {
      const { body, type } = await multipart({ f: "json" }, { file: { name: "a.csv", bytes: CSV } });
      return (
        await call(`${rest()}/content/users/user/addItem`, { ca: engine.ca, body, headers: { "content-type": type } })
      ).json();
    })();
    expect(errorOf(anonymous).code).toBe(499);
    const own = await upload(tokens.user, {}, { file: { name: "mine.csv", bytes: CSV } }, "content/users/user/addItem");
    expect(own).toMatchObject({ success: true });
    // An administrator may add to a member's content.
    const byAdmin = await upload(
      tokens.admin,
      {},
      { file: { name: "given.csv", bytes: CSV } },
      "content/users/user/addItem",
    );
    expect(byAdmin).toMatchObject({ success: true });
    expect(await getJson(`${rest()}/content/items/${String(byAdmin.id)}`, tokens.user)).toMatchObject({
      owner: "user",
    });
  });
});

describe("storage quota and deletion", () => {
  it("holds a member's quota (2 MB here), and gives the bytes back when the item is deleted, file and all", async () => {
    // A fresh member of the organization, so the earlier uploads do not count.
    const big = (n: number) => Buffer.concat([Buffer.from("name,lat,lon\n"), Buffer.alloc(n, 0x41)]);
    const first = await upload(
      tokens.admin,
      {},
      { file: { name: "a.csv", bytes: big(0.9 * MB) } },
      "content/users/admin/addItem",
    );
    const second = await upload(
      tokens.admin,
      {},
      { file: { name: "b.csv", bytes: big(0.9 * MB) } },
      "content/users/admin/addItem",
    );
    expect(first).toMatchObject({ success: true });
    expect(second).toMatchObject({ success: true });
    const files = itemFilesOf(engine.dataDir).length;
    const over = await upload(
      tokens.admin,
      {},
      { file: { name: "c.csv", bytes: big(0.9 * MB) } },
      "content/users/admin/addItem",
    );
    expect(errorOf(over)).toMatchObject({ code: 403, message: "Storage quota exceeded." });
    expect(errorOf(over).details[0]).toMatch(/at most 2 MB/);
    expect(itemFilesOf(engine.dataDir).length).toBe(files);
    const removed = await postJson(`${rest()}/content/users/admin/items/${String(first.id)}/delete`, tokens.admin);
    expect(removed).toMatchObject({ success: true });
    expect(itemFilesOf(engine.dataDir)).not.toContain(String(first.id));
    const again = await upload(
      tokens.admin,
      {},
      { file: { name: "c.csv", bytes: big(0.9 * MB) } },
      "content/users/admin/addItem",
    );
    expect(again).toMatchObject({ success: true });
  });

  it("refuses a first file larger than the whole quota (no counter yet), and keeps nothing of it", async () => {
    const files = itemFilesOf(engine.dataDir).length;
    const big = Buffer.concat([Buffer.from("name\n"), Buffer.alloc(2.5 * MB, 0x41)]);
    const answer = await upload(
      tokens.user,
      {},
      { file: { name: "big.csv", bytes: big } },
      "content/users/user/addItem",
    );
    expect(errorOf(answer)).toMatchObject({ code: 403, message: "Storage quota exceeded." });
    expect(itemFilesOf(engine.dataDir).length).toBe(files);
  });

  it("holds the quota under concurrent uploads: what is kept never passes it", async () => {
    const token = tokens.publisher;
    const used = async () =>
      ((await getJson(`${rest()}/community/self`, token)) as { storageUsage: number }).storageUsage;
    const before = await used();
    expect(await getJson(`${rest()}/community/self`, token)).toMatchObject({ storageQuota: 2 * MB });
    const part = Buffer.concat([Buffer.from("name\n"), Buffer.alloc(0.45 * MB, 0x42)]);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upload(token, {}, { file: { name: `p${i}.csv`, bytes: part } })),
    );
    for (const a of answers) {
      if (a.success !== true) expect(errorOf(a)).toMatchObject({ code: 403, message: "Storage quota exceeded." });
    }
    const kept = answers.filter((a) => a.success === true).length;
    expect(kept).toBeGreaterThan(0);
    expect(before + kept * part.length).toBeLessThanOrEqual(2 * MB);
    expect(before + (kept + 1) * part.length).toBeGreaterThan(2 * MB);
    expect(await used()).toBe(before + kept * part.length);
  });

  it("refuses a body of more parts than parameters a request may have, before building them", async () => {
    const boundary = "b0undary";
    const parts = Array.from(
      { length: 3000 },
      (_, i) => `--${boundary}\r\nContent-Disposition: form-data; name="p${i}"\r\n\r\nx\r\n`,
    ).join("");
    const res = await call(`${rest()}/info?f=json`, {
      ca: engine.ca,
      body: `${parts}--${boundary}--\r\n`,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    });
    expect(res.json()).toMatchObject({ error: { code: 400, message: "Too many parameters." } });
  });

  it("refuses a body over the request limit, saying the limit", async () => {
    const { body, type } = await multipart(
      { f: "json", token: tokens.publisher },
      { file: { name: "huge.csv", bytes: Buffer.alloc(3.5 * MB, 0x41) } },
    );
    const res: Answer = await call(`${rest()}/content/users/publisher/addItem`, {
      ca: engine.ca,
      body,
      headers: { "content-type": type },
    });
    expect(res.text).toMatch(/1048576|1 MB|too large/i);
    expect(res.text).not.toMatch(/"success":\s*true/);
  });
});
