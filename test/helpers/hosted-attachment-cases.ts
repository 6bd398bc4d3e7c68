// Attachments of hosted feature layers, run on each backing of hosted data (test/hosted-attachments.e2e.test.ts: a
// GeoPackage per service; test/hosted-attachments-postgis.e2e.test.ts: PostgreSQL + PostGIS), through the real local
// engine: ArcGIS REST JS's addAttachment, getAttachments, updateAttachment and deleteAttachments for the main paths,
// raw requests for the bytes (served back exactly, with the headers that keep them data), queryAttachments, the
// errors (too large, a script, an unknown feature or attachment, someone not allowed), and the bytes in the data
// folder following the rows (an update, a delete, a feature's delete, the service's delete).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachmentCalls, defineCalls } from "./arcgis.ts";
import { PASSWORDS, type RunningEngine, signInMembers, startEngine } from "./engine.ts";
import { call, form, jsonCalls, multipartBody } from "./http.ts";

export interface AttachmentBacking {
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

const GID = expect.stringMatching(
  /^\{[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\}$/,
) as unknown as string;

/** A small JPEG's bytes as a camera starts them (its signature), then some data. */
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from("JFIF photo of a hydrant")]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("png data")]);
const PDF = Buffer.from("%PDF-1.4\n% a site report\n");
const file = (name: string, type: string, bytes: Buffer) => ({ name, type, base64: bytes.toString("base64") });

export function hostedAttachmentSuite(backing: AttachmentBacking): void {
  let engine: RunningEngine;
  const tokens = { admin: "", publisher: "", user: "" };
  const rest = () => `${engine.ready.https}/portal/sharing/rest`;
  const { getJson, postJson } = jsonCalls(() => engine.ca);
  let url = "";
  let itemId = "";
  const layer = () => `${url}/0`;
  const files = () => {
    const dir = join(engine.dataDir, "hosted", "attachments", itemId);
    return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith(".")) : [];
  };
  const client = (calls: { fn: string; options: Record<string, unknown> }[], who: "publisher" | "user" = "publisher") =>
    attachmentCalls(engine, who, PASSWORDS[who], calls);
  /** A multipart POST of an attachment operation (what REST JS sends), as anyone. */
  const upload = async (path: string, fields: Record<string, string>, name: string, bytes: Buffer) => {
    const { body, type } = await multipartBody({ f: "json", ...fields }, { attachment: { name, bytes } });
    return (await call(`${layer()}/${path}`, { ca: engine.ca, body, headers: { "content-type": type } })).json();
  };

  beforeAll(async () => {
    const env = await backing.start();
    // A request body large enough for an attachment just past the limit (the default body limit is 1 MiB).
    // The owner's quota: a few large attachments pass it (the quota test).
    engine = await startEngine({ env: { ...env, MAX_BODY_BYTES: "4400000", STORAGE_QUOTA_USER_MB: "10" } });
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
    const [created] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "createFeatureService", options: { item: { name: "Hydrants", capabilities: "Query" } } },
    ])) as [Record<string, unknown>];
    itemId = String(created.itemId);
    url = `${engine.ready.https}/arcgis/rest/services/Hosted/Hydrants/FeatureServer`;
    const [added] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "addToServiceDefinition",
        options: {
          url,
          layers: [
            {
              name: "Hydrants",
              type: "Feature Layer",
              geometryType: "esriGeometryPoint",
              objectIdField: "OBJECTID",
              hasAttachments: true,
              fields: [
                { name: "OBJECTID", type: "esriFieldTypeOID" },
                { name: "Name", type: "esriFieldTypeString", length: 20 },
              ],
            },
          ],
          tables: [
            {
              name: "Inspections",
              type: "Table",
              objectIdField: "OBJECTID",
              fields: [
                { name: "OBJECTID", type: "esriFieldTypeOID" },
                { name: "Note", type: "esriFieldTypeString", length: 40 },
              ],
            },
          ],
        },
      },
    ])) as [Record<string, unknown>];
    expect(added).toMatchObject({ success: true });
    const edits = await postJson(`${layer()}/applyEdits`, tokens.publisher, {
      adds: JSON.stringify([
        { attributes: { Name: "A" }, geometry: { x: 10, y: 59 } },
        { attributes: { Name: "B" }, geometry: { x: 11, y: 60 } },
      ]),
    });
    expect(edits).toMatchObject({ addResults: [{ objectId: 1 }, { objectId: 2 }] });
  }, 120_000);

  afterAll(async () => {
    await engine?.stop();
    await backing.stop();
  });

  describe("a hosted layer's attachments through ArcGIS REST JS", () => {
    it("says it keeps attachments, as ArcGIS describes them; a table turns them on with updateDefinition", async () => {
      const json = await getJson(layer(), tokens.publisher);
      expect(json).toMatchObject({
        hasAttachments: true,
        attachmentProperties: [
          { name: "name", isEnabled: true },
          { name: "size", isEnabled: true },
          { name: "contentType", isEnabled: true },
          { name: "keywords", isEnabled: true },
        ],
        supportsAttachmentsByUploadId: false,
        advancedQueryCapabilities: { supportsQueryAttachments: true, supportsQueryAttachmentsWithReturnUrl: true },
      });
      expect((await getJson(`${url}/1`, tokens.publisher)).hasAttachments).toBe(false);
      const refused = await postJson(`${url}/1/0/addAttachment`, tokens.publisher, {});
      expect(refused).toMatchObject({ error: { code: 400 } });
      const [turned] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
        {
          fn: "request",
          options: {
            url: `${engine.ready.https}/arcgis/rest/admin/services/Hosted/Hydrants/FeatureServer/1/updateDefinition`,
            params: { updateDefinition: JSON.stringify({ hasAttachments: true }) },
          },
        },
      ])) as [Record<string, unknown>];
      expect(turned).toEqual({ success: true });
      expect((await getJson(`${url}/1`, tokens.publisher)).hasAttachments).toBe(true);
    });

    let photo = 0;
    let report = 0;
    it("adds, lists, updates and deletes attachments as REST JS calls them", async () => {
      const [a, b, c, listed] = (await client([
        {
          fn: "addAttachment",
          options: {
            url: layer(),
            featureId: 1,
            file: file("photo.jpg", "image/jpeg", JPEG),
            params: { keywords: "front,valve" },
          },
        },
        {
          fn: "addAttachment",
          options: { url: layer(), featureId: 1, file: file("report.pdf", "application/pdf", PDF) },
        },
        { fn: "addAttachment", options: { url: layer(), featureId: 2, file: file("side.png", "image/png", PNG) } },
        { fn: "getAttachments", options: { url: layer(), featureId: 1 } },
      ])) as Record<string, { objectId: number; globalId: string; success: boolean }>[];
      expect(a).toEqual({ addAttachmentResult: { objectId: 1, globalId: GID, success: true } });
      expect(b).toEqual({ addAttachmentResult: { objectId: 2, globalId: GID, success: true } });
      expect(c).toEqual({ addAttachmentResult: { objectId: 3, globalId: GID, success: true } });
      photo = a?.addAttachmentResult?.objectId ?? 0;
      report = b?.addAttachmentResult?.objectId ?? 0;
      expect(listed).toEqual({
        attachmentInfos: [
          {
            id: 1,
            globalId: a?.addAttachmentResult?.globalId,
            parentGlobalId: GID,
            name: "photo.jpg",
            contentType: "image/jpeg",
            size: JPEG.length,
            keywords: "front,valve",
          },
          {
            id: 2,
            globalId: b?.addAttachmentResult?.globalId,
            parentGlobalId: GID,
            name: "report.pdf",
            contentType: "application/pdf",
            size: PDF.length,
            keywords: "",
          },
        ],
      });
      expect(files()).toHaveLength(3);
    });

    it("serves the bytes back exactly, as data: an attachment in a sandbox, never sniffed", async () => {
      const res = await call(`${layer()}/1/attachments/${photo}?token=${tokens.publisher}`, { ca: engine.ca });
      expect(res.status).toBe(200);
      expect(res.body.equals(JPEG)).toBe(true);
      expect(res.headers["content-type"]).toBe("image/jpeg");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["content-disposition"]).toBe(`attachment; filename="photo.jpg"; filename*=UTF-8''photo.jpg`);
      expect(res.headers["content-security-policy"]).toBe("sandbox; default-src 'none'");
      // Another feature's attachment id is not this feature's.
      const other = await getJson(`${layer()}/2/attachments/${photo}`, tokens.publisher);
      expect(other).toMatchObject({ error: { code: 404, message: "Attachment not found." } });
    });

    it("replaces an attachment's file (updateAttachment), its old bytes removed", async () => {
      const before = files();
      const [updated, listed] = (await client([
        {
          fn: "updateAttachment",
          options: { url: layer(), featureId: 1, attachmentId: photo, file: file("photo2.png", "image/png", PNG) },
        },
        { fn: "getAttachments", options: { url: layer(), featureId: 1 } },
      ])) as Record<string, unknown>[];
      expect(updated).toEqual({ updateAttachmentResult: { objectId: photo, globalId: GID, success: true } });
      expect((listed as { attachmentInfos: unknown[] }).attachmentInfos[0]).toMatchObject({
        id: photo,
        name: "photo2.png",
        contentType: "image/png",
        size: PNG.length,
        keywords: "front,valve",
      });
      const res = await call(`${layer()}/1/attachments/${photo}?token=${tokens.publisher}`, { ca: engine.ca });
      expect(res.body.equals(PNG)).toBe(true);
      const after = files();
      expect(after).toHaveLength(before.length);
      expect(after.filter((n) => !before.includes(n))).toHaveLength(1);
    });

    it("queries attachments by ids, global ids and a definition expression, then type, size and keywords", async () => {
      const q = (params: string) => getJson(`${layer()}/queryAttachments?${params}`, tokens.publisher);
      const all = (await q("objectIds=1,2&returnUrl=true")) as {
        attachmentGroups: { parentObjectId: number; attachmentInfos: { id: number; url?: string }[] }[];
      };
      expect(all.attachmentGroups.map((g) => [g.parentObjectId, g.attachmentInfos.map((i) => i.id)])).toEqual([
        [1, [1, 2]],
        [2, [3]],
      ]);
      expect(all.attachmentGroups[0]?.attachmentInfos[0]?.url).toBe(`${layer()}/1/attachments/1`);
      const ids = async (params: string) =>
        ((await q(params)) as { attachmentGroups: { attachmentInfos: { id: number }[] }[] }).attachmentGroups.flatMap(
          (g) => g.attachmentInfos.map((i) => i.id),
        );
      expect(await ids("objectIds=1,2&attachmentTypes=image")).toEqual([1, 3]);
      expect(await ids("objectIds=1,2&attachmentTypes=application/pdf")).toEqual([2]);
      // The photo (now a PNG) and the side view are smaller than the report.
      expect(await ids(`objectIds=1,2&size=${PDF.length},${PDF.length}`)).toEqual([2]);
      expect(await ids(`objectIds=1,2&size=0,${PNG.length}`)).toEqual([1, 3]);
      expect(await ids("objectIds=1,2&keywords=valve")).toEqual([1]);
      expect(await ids(`definitionExpression=${encodeURIComponent("Name = 'B'")}`)).toEqual([3]);
      const gids = (await getJson(`${layer()}/query?where=Name%3D'B'&outFields=GlobalID`, tokens.publisher)) as {
        features: { attributes: { GlobalID: string } }[];
      };
      expect(await ids(`globalIds=${encodeURIComponent(gids.features[0]?.attributes.GlobalID ?? "")}`)).toEqual([3]);
      expect(await q("attachmentTypes=image")).toMatchObject({ error: { code: 400 } });
      expect(await q("objectIds=1&size=9,1")).toMatchObject({ error: { code: 400 } });
    });

    it("deletes attachments by id (an unknown one its own error), and a feature's delete takes its attachments", async () => {
      const [deleted] = (await client([
        { fn: "deleteAttachments", options: { url: layer(), featureId: 1, attachmentIds: [report, 999] } },
      ])) as Record<string, unknown>[];
      expect(deleted).toEqual({
        deleteAttachmentResults: [
          { objectId: report, globalId: GID, success: true },
          {
            objectId: 999,
            globalId: null,
            success: false,
            error: { code: 1019, description: "Delete for the object was not attempted. Object may not exist." },
          },
        ],
      });
      expect(files()).toHaveLength(2);
      const removed = await postJson(`${layer()}/deleteFeatures`, tokens.publisher, { objectIds: "2" });
      expect(removed).toMatchObject({ deleteResults: [{ objectId: 2, success: true }] });
      expect(files()).toHaveLength(1);
      expect(await getJson(`${layer()}/queryAttachments?objectIds=2`, tokens.publisher)).toEqual({
        attachmentGroups: [],
      });
    });
  });

  describe("applyEdits' attachments (by global id)", () => {
    const gid = () => `{${crypto.randomUUID().toUpperCase()}}`;
    const edit = (fields: Record<string, string>) =>
      postJson(`${layer()}/applyEdits`, tokens.publisher, { useGlobalIds: "true", ...fields });
    it("adds a feature and its attachment in one request, then updates and deletes the attachment", async () => {
      const feature = gid();
      const attachment = gid();
      const added = await edit({
        adds: JSON.stringify([{ attributes: { Name: "C", GlobalID: feature }, geometry: { x: 12, y: 61 } }]),
        attachments: JSON.stringify({
          adds: [
            {
              globalId: attachment,
              parentGlobalId: feature,
              contentType: "image/jpeg",
              name: "new.jpg",
              data: JPEG.toString("base64"),
            },
          ],
        }),
      });
      expect(added).toEqual({
        addResults: [{ objectId: 3, globalId: feature, success: true }],
        updateResults: [],
        deleteResults: [],
        attachments: {
          addResults: [{ objectId: 4, globalId: attachment, success: true }],
          updateResults: [],
          deleteResults: [],
        },
      });
      const res = await call(`${layer()}/3/attachments/4?token=${tokens.publisher}`, { ca: engine.ca });
      expect(res.body.equals(JPEG)).toBe(true);
      expect(files()).toHaveLength(2);
      const updated = await edit({
        attachments: JSON.stringify({
          updates: [
            { globalId: attachment, contentType: "application/pdf", name: "new.pdf", data: PDF.toString("base64") },
          ],
        }),
      });
      expect(updated).toMatchObject({
        attachments: { updateResults: [{ objectId: 4, globalId: attachment, success: true }] },
      });
      expect(
        (await call(`${layer()}/3/attachments/4?token=${tokens.publisher}`, { ca: engine.ca })).body.equals(PDF),
      ).toBe(true);
      expect(files()).toHaveLength(2);
      const deleted = await edit({ attachments: JSON.stringify({ deletes: [attachment] }) });
      expect(deleted).toMatchObject({
        attachments: { deleteResults: [{ objectId: 4, globalId: attachment, success: true }] },
      });
      expect(files()).toHaveLength(1);
    });

    it("rolls back a request whose attachment has no feature, keeping none of its bytes; refuses one without useGlobalIds", async () => {
      const orphan = gid();
      const answer = await edit({
        adds: JSON.stringify([{ attributes: { Name: "D", GlobalID: gid() }, geometry: { x: 1, y: 1 } }]),
        attachments: JSON.stringify({
          adds: [
            {
              globalId: orphan,
              parentGlobalId: gid(),
              name: "x.jpg",
              contentType: "image/jpeg",
              data: JPEG.toString("base64"),
            },
          ],
        }),
      });
      expect(answer).toMatchObject({
        addResults: [],
        attachments: { addResults: [{ objectId: -1, globalId: orphan, success: false, error: { code: 1000 } }] },
      });
      expect(await getJson(`${layer()}/query?where=Name%3D'D'&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 0,
      });
      expect(files()).toHaveLength(1);
      const refused = await postJson(`${layer()}/applyEdits`, tokens.publisher, {
        attachments: JSON.stringify({ deletes: [orphan] }),
      });
      expect(refused).toEqual({
        error: {
          code: 400,
          message: "Unable to complete operation.",
          details: ["'attachments' are edited by global id: send useGlobalIds=true with them."],
        },
      });
      const atService = await postJson(`${url}/applyEdits`, tokens.publisher, {
        useGlobalIds: "true",
        edits: JSON.stringify([{ id: 0, attachments: { deletes: [orphan] } }]),
      });
      expect(atService).toEqual({
        error: {
          code: 400,
          message: "Unable to complete operation.",
          details: [
            `edits[0].attachments: send a layer's attachments to its own applyEdits (…/FeatureServer/0/applyEdits).`,
          ],
        },
      });
    });
  });

  describe("bad input and callers not allowed", () => {
    it("refuses a file past the limit, a script by its bytes, and an empty request", async () => {
      const big = Buffer.alloc(4 * 1024 * 1024 + 1, 0x20);
      big.set([0xff, 0xd8, 0xff], 0);
      expect(await upload("1/addAttachment", { token: tokens.publisher }, "big.jpg", big)).toEqual({
        error: {
          code: 400,
          message: "Unable to complete operation.",
          details: [`The attachment is ${big.length} bytes: an attachment is at most 4194304 bytes.`],
        },
      });
      for (const [name, bytes] of [
        ["evil.html", Buffer.from("<script>alert(document.cookie)</script>")],
        ["evil.jpg", Buffer.from("<svg onload=alert(1)>")],
        ["evil.svg", Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')],
      ] as const) {
        const answer = (await upload("1/addAttachment", { token: tokens.publisher }, name, bytes)) as {
          error: { code: number; details: string[] };
        };
        expect(answer.error.code).toBe(400);
        expect(answer.error.details[0]).toContain("is not a kind of file attachments take");
      }
      expect(await postJson(`${layer()}/1/addAttachment`, tokens.publisher, {})).toEqual({
        error: {
          code: 400,
          message: "Unable to complete operation.",
          details: ["'attachment' must be a file sent as multipart/form-data."],
        },
      });
      expect(files()).toHaveLength(1);
    });

    it("answers an unknown feature and an unknown attachment", async () => {
      const [unknownFeature, unknownAttachment] = (await client([
        { fn: "addAttachment", options: { url: layer(), featureId: 999, file: file("a.jpg", "image/jpeg", JPEG) } },
        {
          fn: "updateAttachment",
          options: { url: layer(), featureId: 1, attachmentId: 999, file: file("a.jpg", "image/jpeg", JPEG) },
        },
      ])) as Record<string, unknown>[];
      expect(unknownFeature).toMatchObject({
        error: { code: 404, message: expect.stringContaining("Feature not found.") },
      });
      expect(unknownAttachment).toEqual({
        updateAttachmentResult: {
          objectId: 999,
          globalId: null,
          success: false,
          error: { code: 1019, description: "Update for the object was not attempted. Object may not exist." },
        },
      });
      expect(await getJson(`${layer()}/999/attachments`, tokens.publisher)).toMatchObject({ error: { code: 404 } });
      expect(files()).toHaveLength(1);
    });

    it("lets no one change or read attachments who may not edit or see the layer", async () => {
      const [member] = (await client(
        [{ fn: "addAttachment", options: { url: layer(), featureId: 1, file: file("a.jpg", "image/jpeg", JPEG) } }],
        "user",
      )) as Record<string, unknown>[];
      expect(member).toMatchObject({ error: { code: 404 } });
      expect(await upload("1/addAttachment", {}, "a.jpg", JPEG)).toMatchObject({ error: { code: 499 } });
      expect(await postJson(`${layer()}/1/deleteAttachments`, tokens.user, { attachmentIds: "1" })).toMatchObject({
        error: { code: 404 },
      });
      const read = await call(`${layer()}/1/attachments/1?token=${tokens.user}`, { ca: engine.ca });
      expect(read.json()).toMatchObject({ error: { code: 404 } });
      expect((await call(`${layer()}/1/attachments/1`, { ca: engine.ca })).json()).toMatchObject({
        error: { code: 499 },
      });
      expect(files()).toHaveLength(1);
    });

    it("truncates a layer's attachments only (attachmentOnly), its features kept", async () => {
      const [truncated] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
        {
          fn: "request",
          options: {
            url: `${engine.ready.https}/arcgis/rest/admin/services/Hosted/Hydrants/FeatureServer/0/truncate`,
            params: { attachmentOnly: true },
          },
        },
      ])) as [Record<string, unknown>];
      expect(truncated).toEqual({ success: true });
      expect(files()).toEqual([]);
      expect(await getJson(`${layer()}/queryAttachments?objectIds=1`, tokens.publisher)).toEqual({
        attachmentGroups: [],
      });
      expect(await getJson(`${layer()}/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 2,
      });
    });

    it("counts attachments against the owner's quota: one past it refused and not kept, a delete gives room back", async () => {
      // Just under the largest attachment: two fit in the suite's 10 MB quota beside the service's data, a third not.
      const big = Buffer.alloc(4 * 1024 * 1024 - 1024, 7);
      big.set(JPEG, 0);
      const item = async () => (await getJson(`${rest()}/content/items/${itemId}`, tokens.publisher)).size as number;
      const before = await item();
      const kept = files().length;
      const add = async (name: string) =>
        (await upload("1/addAttachment", { token: tokens.publisher }, name, big)) as {
          addAttachmentResult?: { objectId: number; success: boolean };
        };
      const first = (await add("big1.jpg")).addAttachmentResult;
      const second = (await add("big2.jpg")).addAttachmentResult;
      expect([first?.success, second?.success]).toEqual([true, true]);
      expect(await item()).toBe(before + 2 * big.length);
      expect(await add("big3.jpg")).toEqual({
        error: {
          code: 403,
          message: "Storage quota exceeded.",
          details: [
            "The service's data is counted against its owner's storage quota (10 MB), which it would pass: delete features or other items, or ask an administrator for more.",
          ],
        },
      });
      // The same through applyEdits' attachments (a smaller file, within the request's limit once in base64, but past
      // the room left): the whole request refused before it writes anything.
      const medium = big.subarray(0, 2 * 1024 * 1024 + 4096);
      const viaEdits = await call(`${layer()}/applyEdits`, {
        ca: engine.ca,
        body: form({
          f: "json",
          token: tokens.publisher,
          useGlobalIds: "true",
          attachments: JSON.stringify({
            adds: [
              {
                globalId: "{7A1B2C3D-0000-4000-8000-0000000000F1}",
                parentGlobalId: (
                  (await getJson(`${layer()}/query?objectIds=1&outFields=GlobalID`, tokens.publisher)).features as {
                    attributes: { GlobalID: string };
                  }[]
                )[0]?.attributes.GlobalID,
                contentType: "image/jpeg",
                name: "big4.jpg",
                data: medium.toString("base64"),
              },
            ],
          }),
        }),
      });
      expect(viaEdits.json()).toMatchObject({ error: { code: 403, message: "Storage quota exceeded." } });
      expect(files()).toHaveLength(kept + 2);
      expect(await item()).toBe(before + 2 * big.length);
      for (const id of [first?.objectId, second?.objectId])
        expect(
          await postJson(`${layer()}/1/deleteAttachments`, tokens.publisher, { attachmentIds: String(id) }),
        ).toEqual({
          deleteAttachmentResults: [{ objectId: id, globalId: GID, success: true }],
        });
      expect(await item()).toBe(before);
      expect(files()).toHaveLength(kept);
      const again = (await add("big5.jpg")).addAttachmentResult;
      expect(again?.success).toBe(true);
      expect(await item()).toBe(before + big.length);
      await postJson(`${layer()}/1/deleteAttachments`, tokens.publisher, { attachmentIds: String(again?.objectId) });
      expect(await item()).toBe(before);
    });

    it("deleting the service deletes its attachments' bytes", async () => {
      const res = await call(`${rest()}/content/users/publisher/items/${itemId}/delete`, {
        ca: engine.ca,
        body: form({ f: "json", token: tokens.publisher }),
      });
      expect(res.json()).toMatchObject({ success: true });
      expect(files()).toEqual([]);
    });
  });
}
