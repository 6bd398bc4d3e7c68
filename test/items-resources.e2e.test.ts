// An item's resources, its thumbnail, related items, moving items between folders and deleting a folder, on the real
// local engine, through the real @esri/arcgis-rest-portal client and raw requests for every bad input and for who may
// read and change each.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { type Answer, call, form, multipartBody } from "./helpers/http.ts";

let engine: RunningEngine;
const tokens: Record<string, string> = {};
const rest = () => `${engine.ready.https}/portal/sharing/rest`;

async function signIn(username: string, password: string): Promise<string> {
  const res = await call(`${rest()}/generateToken`, { ca: engine.ca, body: form({ f: "json", username, password }) });
  return res.json<{ token: string }>().token;
}

const post = async (path: string, token: string | undefined, fields: Record<string, string> = {}) =>
  (
    await call(`${rest()}${path}`, { ca: engine.ca, body: form({ f: "json", ...(token ? { token } : {}), ...fields }) })
  ).json<Record<string, unknown>>();

const get = (path: string, token: string | undefined, query: Record<string, string> = {}): Promise<Answer> =>
  call(`${rest()}${path}?${form({ ...(token ? { token } : {}), ...query })}`, { ca: engine.ca });

const getJson = async (path: string, token: string | undefined, query: Record<string, string> = {}) =>
  (await get(path, token, { f: "json", ...query })).json<Record<string, unknown>>();

const postFiles = async (
  path: string,
  token: string,
  fields: Record<string, string>,
  files: Record<string, { name: string; bytes: Buffer | string }>,
) => {
  const { body, type } = await multipartBody({ f: "json", token, ...fields }, files);
  return (await call(`${rest()}${path}`, { ca: engine.ca, body, headers: { "content-type": type } })).json<
    Record<string, unknown>
  >();
};

/** A 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

const addText = async (owner: string, type: string, title: string, text = "{}") => {
  const added = await post(`/content/users/${owner}/addItem`, tokens[owner], { type, title, text });
  expect(added).toMatchObject({ success: true });
  return String(added.id);
};
const addUrl = async (owner: string, type: string, title: string, url: string) => {
  const added = await post(`/content/users/${owner}/addItem`, tokens[owner], { type, title, url });
  expect(added).toMatchObject({ success: true });
  return String(added.id);
};
const usage = async (who: string) => Number((await getJson("/community/self", tokens[who])).storageUsage);
const errorOf = (answer: Record<string, unknown>) =>
  answer.error as { code: number; message: string; details: string[] };

beforeAll(async () => {
  engine = await startEngine();
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("item resources", () => {
  it("adds, lists, reads, updates and removes resources through @esri/arcgis-rest-portal, counted against the quota", async () => {
    const id = await addText("publisher", "Web Mapping Application", "Resourceful app", '{"values":{}}');
    const before = await usage("publisher");
    const answers = await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        { fn: "addItemResource", options: { id, name: "config.json", prefix: "app", content: '{"theme":"dark"}' } },
        { fn: "addItemResource", options: { id, name: "logo.png", base64: PNG.toString("base64") } },
        { fn: "getItemResources", options: { id } },
        { fn: "getItemResource", options: { id, fileName: "app/config.json" } },
        { fn: "updateItemResource", options: { id, name: "app/config.json", content: '{"theme":"light"}' } },
        { fn: "getItemResource", options: { id, fileName: "app/config.json" } },
        { fn: "removeItemResource", options: { id, resource: "logo.png" } },
        { fn: "getItemResources", options: { id } },
      ],
      { asInBrowser: true },
    );
    expect(answers[0]).toEqual({ success: true, itemId: id, owner: "publisher", folder: null });
    expect(answers[1]).toEqual({ success: true, itemId: id, owner: "publisher", folder: null });
    expect(answers[2]).toEqual({
      total: 2,
      start: 1,
      num: 2,
      nextStart: -1,
      resources: [
        { resource: "app/config.json", created: expect.any(Number), size: 16, access: "inherit" },
        { resource: "logo.png", created: expect.any(Number), size: PNG.length, access: "inherit" },
      ],
    });
    expect(answers[3]).toBe('{"theme":"dark"}');
    expect(answers[4]).toEqual({ success: true, itemId: id, owner: "publisher", folder: null });
    expect(answers[5]).toBe('{"theme":"light"}');
    expect(answers[6]).toEqual({ success: true });
    expect(answers[7]).toMatchObject({ total: 1, resources: [{ resource: "app/config.json", size: 17 }] });
    expect(await usage("publisher")).toBe(before + 17);
    // The item's size counts its resources, as ArcGIS's does.
    expect((await getJson(`/content/items/${id}`, tokens.publisher)).size).toBe(13 + 17);
    // Deleting the item gives their bytes back.
    expect(await post(`/content/users/publisher/items/${id}/delete`, tokens.publisher)).toEqual({
      success: true,
      itemId: id,
    });
    expect(await usage("publisher")).toBe(before - 13);
    expect(errorOf(await getJson(`/content/items/${id}/resources`, tokens.publisher)).code).toBe(400);
  }, 60_000);

  it("serves a resource as what it is: images and JSON inline, anything else a sandboxed attachment, never sniffed", async () => {
    const id = await addText("publisher", "Web Mapping Application", "Served app");
    const add = (fields: Record<string, string>) =>
      post(`/content/users/publisher/items/${id}/addResources`, tokens.publisher, fields);
    expect(
      await postFiles(
        `/content/users/publisher/items/${id}/addResources`,
        tokens.publisher ?? "",
        {},
        {
          file: { name: "logo.png", bytes: PNG },
        },
      ),
    ).toMatchObject({ success: true });
    expect(await add({ fileName: "page.html", text: "<script>alert(1)</script>" })).toMatchObject({ success: true });
    expect(await add({ fileName: "data.json", resourcesPrefix: "a/b", text: "[1]" })).toMatchObject({ success: true });
    const png = await get(`/content/items/${id}/resources/logo.png`, tokens.publisher);
    expect(png.status).toBe(200);
    expect(png.headers["content-type"]).toBe("image/png");
    expect(png.headers["x-content-type-options"]).toBe("nosniff");
    expect(png.headers["content-disposition"]).toBeUndefined();
    expect(png.body.equals(PNG)).toBe(true);
    const html = await get(`/content/items/${id}/resources/page.html`, tokens.publisher);
    expect(html.headers["content-type"]).toBe("application/octet-stream");
    expect(html.headers["content-disposition"]).toMatch(/^attachment; filename="page.html"/);
    expect(html.headers["content-security-policy"]).toBe("sandbox; default-src 'none'");
    expect(html.headers["x-content-type-options"]).toBe("nosniff");
    const json = await get(`/content/items/${id}/resources/a/b/data.json`, tokens.publisher);
    expect(json.headers["content-type"]).toBe("application/json");
    expect(json.text).toBe("[1]");
    const missing = await get(`/content/items/${id}/resources/none.png`, tokens.publisher, { f: "json" });
    expect(missing.json()).toMatchObject({
      error: { code: 400, details: ["Resource 'none.png' does not exist on this item."] },
    });
    // Paging.
    expect(await getJson(`/content/items/${id}/resources`, tokens.publisher, { start: "2", num: "1" })).toEqual({
      total: 3,
      start: 2,
      num: 1,
      nextStart: 3,
      resources: [{ resource: "logo.png", created: expect.any(Number), size: PNG.length, access: "inherit" }],
    });
  });

  it("refuses every bad input with a 400 that names it, keeping nothing", async () => {
    const id = await addText("publisher", "Web Mapping Application", "Strict app");
    const path = `/content/users/publisher/items/${id}/addResources`;
    const refused = async (fields: Record<string, string>, detail: RegExp) => {
      const answer = errorOf(await post(path, tokens.publisher, fields));
      expect(answer.code).toBe(400);
      expect(answer.details.join(" ")).toMatch(detail);
    };
    await refused({ fileName: "../escape.json", text: "{}" }, /is not a resource name/);
    await refused({ fileName: "x.json", resourcesPrefix: "..", text: "{}" }, /is not a resource name/);
    await refused({ fileName: ".hidden", text: "{}" }, /is not a resource name/);
    await refused({ fileName: "a\\b.json", text: "{}" }, /is not a resource name/);
    await refused({ fileName: "x.json", resourcesPrefix: "a/b/c/d", text: "{}" }, /at most 4 parts/);
    await refused({ fileName: `${"n".repeat(256)}.json`, text: "{}" }, /at most 255 characters/);
    await refused({ fileName: "x.json" }, /'file' or 'text' must be specified/);
    await refused({ text: "{}" }, /'fileName' must be specified/);
    await refused({ fileName: "x.json", text: "{}", access: "public" }, /'access' must be 'inherit' or 'private'/);
    const both = await postFiles(
      path,
      tokens.publisher ?? "",
      { fileName: "x.png", text: "{}" },
      {
        file: { name: "x.png", bytes: PNG },
      },
    );
    expect(errorOf(both).details).toEqual(["Send the resource as 'file' or as 'text', not both."]);
    expect(await post(path, tokens.publisher, { fileName: "x.json", text: "{}" })).toMatchObject({ success: true });
    await refused({ fileName: "x.json", text: "{}" }, /already: updateResources replaces it/);
    const update = errorOf(
      await post(`/content/users/publisher/items/${id}/updateResources`, tokens.publisher, {
        fileName: "y.json",
        text: "{}",
      }),
    );
    expect(update.details).toEqual(["The item has no resource named 'y.json'."]);
    const remove = (fields: Record<string, string>) =>
      post(`/content/users/publisher/items/${id}/removeResources`, tokens.publisher, fields);
    expect(errorOf(await remove({})).details).toEqual([
      "'resource' (the resource's name) or deleteAll=true must be specified.",
    ]);
    expect(errorOf(await remove({ resource: "nope.json" })).details).toEqual([
      "The item has no resource named 'nope.json'.",
    ]);
    expect(errorOf(await remove({ deleteAll: "maybe" })).details).toEqual(["'deleteAll' must be true or false."]);
    expect(await getJson(`/content/items/${id}/resources`, tokens.publisher)).toMatchObject({
      total: 1,
      resources: [{ resource: "x.json" }],
    });
    expect(await remove({ deleteAll: "true" })).toEqual({ success: true });
    expect(await getJson(`/content/items/${id}/resources`, tokens.publisher)).toMatchObject({ total: 0 });
    // A page larger than 1,000 is refused.
    expect(errorOf(await getJson(`/content/items/${id}/resources`, tokens.publisher, { num: "1001" })).details).toEqual(
      ["'num' must be a whole number from 0 to 1000."],
    );
  });

  it("lets the owner and administrators change resources, and whoever sees the item read them", async () => {
    const id = await addText("publisher", "Web Mapping Application", "Shared app");
    const add = (who: string | undefined, fileName: string, extra: Record<string, string> = {}) =>
      post(`/content/users/publisher/items/${id}/addResources`, who === undefined ? undefined : tokens[who], {
        fileName,
        text: "{}",
        ...extra,
      });
    expect(await add("publisher", "owner.json")).toMatchObject({ success: true });
    expect(await add("admin", "admin.json")).toMatchObject({ success: true });
    expect(await add("publisher", "secret.json", { access: "private" })).toMatchObject({ success: true });
    // Another member sees nothing of a private item.
    expect(errorOf(await add("user", "member.json")).code).toBe(400);
    expect(errorOf(await getJson(`/content/items/${id}/resources`, tokens.user)).code).toBe(400);
    expect(errorOf(await add(undefined, "anonymous.json")).code).toBe(499);
    expect(errorOf(await getJson(`/content/items/${id}/resources`, undefined)).code).toBe(499);
    // Shared with the organization: members read its resources (not the private one), and change none.
    expect(
      await post(`/content/items/${id}/share`, tokens.publisher, { everyone: "false", org: "true" }),
    ).toMatchObject({ notSharedWith: [] });
    expect(await getJson(`/content/items/${id}/resources`, tokens.user)).toMatchObject({
      total: 2,
      resources: [{ resource: "admin.json" }, { resource: "owner.json" }],
    });
    expect((await get(`/content/items/${id}/resources/owner.json`, tokens.user)).text).toBe("{}");
    expect((await get(`/content/items/${id}/resources/secret.json`, tokens.user, { f: "json" })).json()).toMatchObject({
      error: { code: 400, details: ["Resource 'secret.json' does not exist on this item."] },
    });
    expect((await get(`/content/items/${id}/resources/secret.json`, tokens.admin)).text).toBe("{}");
    expect(errorOf(await add("user", "member.json")).code).toBe(403);
    expect(
      errorOf(await post(`/content/users/publisher/items/${id}/removeResources`, tokens.user, { deleteAll: "true" }))
        .code,
    ).toBe(403);
    expect(errorOf(await getJson(`/content/items/${id}/resources`, undefined)).code).toBe(499);
  });
});

describe("thumbnails", () => {
  it("takes an uploaded image through updateItem and serves it at info/, as an image, never sniffed", async () => {
    const id = await addText(
      "publisher",
      "Web Map",
      "Thumbnailed",
      JSON.stringify({
        operationalLayers: [],
        baseMap: { baseMapLayers: [], title: "None" },
        spatialReference: { wkid: 102100 },
        version: "2.31",
      }),
    );
    const [updated] = await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [{ fn: "updateItemThumbnail", options: { id, name: "my map.png", base64: PNG.toString("base64") } }],
      { asInBrowser: true },
    );
    expect(updated).toEqual({ success: true, id });
    const item = await getJson(`/content/items/${id}`, tokens.publisher);
    expect(item.thumbnail).toBe("thumbnail/my_map.png");
    const image = await get(`/content/items/${id}/info/thumbnail/my_map.png`, tokens.publisher);
    expect(image.status).toBe(200);
    expect(image.headers["content-type"]).toBe("image/png");
    expect(image.headers["x-content-type-options"]).toBe("nosniff");
    expect(image.body.equals(PNG)).toBe(true);
    // Private: nobody else reads it.
    expect(
      (await get(`/content/items/${id}/info/thumbnail/my_map.png`, undefined, { f: "json" })).json(),
    ).toMatchObject({ error: { code: 499 } });
    expect(
      (await get(`/content/items/${id}/info/thumbnail/my_map.png`, tokens.user, { f: "json" })).json(),
    ).toMatchObject({ error: { code: 400 } });
  }, 60_000);

  it("refuses a thumbnail that is not an image, one by URL and one given as text, changing nothing", async () => {
    const path = "/content/users/publisher/addItem";
    const notImage = await postFiles(
      path,
      tokens.publisher ?? "",
      { type: "Web Mapping Application", title: "T", text: "{}" },
      {
        thumbnail: { name: "evil.png", bytes: "<svg onload=alert(1)>" },
      },
    );
    expect(errorOf(notImage)).toMatchObject({
      code: 400,
      details: ["The thumbnail is not a PNG, JPEG, GIF or WebP image: its content does not begin as one does."],
    });
    const byUrl = errorOf(
      await post(path, tokens.publisher, {
        type: "Web Mapping Application",
        title: "T",
        text: "{}",
        thumbnailUrl: "http://169.254.169.254/latest/meta-data",
      }),
    );
    // The instance metadata's address is never fetched, on either engine (test/thumbnail-url.e2e.test.ts fetches).
    expect(byUrl.details).toEqual([
      "'thumbnailUrl' cannot be fetched: its host is a loopback, link-local or private address, which mapgate does not fetch from here.",
    ]);
    const asText = errorOf(
      await post(path, tokens.publisher, { type: "Web Mapping Application", title: "T", text: "{}", thumbnail: "x" }),
    );
    expect(asText.details).toEqual([
      "'thumbnail' must be an uploaded image file (multipart/form-data) or the http(s) URL of one, not other text.",
    ]);
    const content = await getJson("/content/users/publisher", tokens.publisher, { num: "100" });
    expect((content.items as { title: string }[]).filter((i) => i.title === "T")).toEqual([]);
    // A thumbnail with addItem is kept with the new item.
    const added = await postFiles(
      path,
      tokens.publisher ?? "",
      { type: "Web Mapping Application", title: "With", text: "{}" },
      {
        thumbnail: { name: "t.png", bytes: PNG },
      },
    );
    expect(added).toMatchObject({ success: true });
    expect((await getJson(`/content/items/${String(added.id)}`, tokens.publisher)).thumbnail).toBe("thumbnail/t.png");
  });
});

describe("updateThumbnail", () => {
  it("takes a file or a data: URL as the ArcGIS Maps SDK sends them, refusing a URL and anything not an image", async () => {
    const id = await addText("publisher", "Web Mapping Application", "SDK thumbnail");
    const path = `/content/users/publisher/items/${id}/updateThumbnail`;
    const data = `data:image/png;base64,${PNG.toString("base64")}`;
    expect(await post(path, tokens.publisher, { data, filename: "from-sdk.png" })).toEqual({ success: true });
    const item = await getJson(`/content/items/${id}`, tokens.publisher);
    expect(item.thumbnail).toBe("thumbnail/from-sdk.png");
    expect(item.size).toBe(2 + PNG.length);
    expect(
      await postFiles(
        path,
        tokens.publisher ?? "",
        {},
        { file: { name: "second.gif", bytes: Buffer.from("GIF89a...") } },
      ),
    ).toEqual({ success: true });
    expect((await getJson(`/content/items/${id}`, tokens.publisher)).thumbnail).toBe("thumbnail/second.gif");
    const gif = await get(`/content/items/${id}/info/thumbnail/second.gif`, tokens.publisher);
    expect(gif.headers["content-type"]).toBe("image/gif");
    // The replaced one is gone.
    expect(
      (await get(`/content/items/${id}/info/thumbnail/from-sdk.png`, tokens.publisher, { f: "json" })).json(),
    ).toMatchObject({ error: { code: 400 } });
    expect(errorOf(await post(path, tokens.publisher, { url: "http://169.254.169.254/x.png" })).details).toEqual([
      "'url' cannot be fetched: its host is a loopback, link-local or private address, which mapgate does not fetch from here.",
    ]);
    expect(
      errorOf(
        await post(path, tokens.publisher, {
          data: `data:image/png;base64,${Buffer.from("<svg/>").toString("base64")}`,
        }),
      ).details,
    ).toEqual(["The thumbnail is not a PNG, JPEG, GIF or WebP image: its content does not begin as one does."]);
    expect(errorOf(await post(path, tokens.publisher, { data: "data:text/html,<b>" })).details).toEqual([
      "'data' must be a base64 data: URL of a PNG, JPEG, GIF or WebP image.",
    ]);
    expect(errorOf(await post(path, tokens.user, { data })).code).toBe(400);
    expect(errorOf(await post(path, undefined, { data })).code).toBe(499);
    expect(await post(path, tokens.admin, { data })).toEqual({ success: true });
    // An update sending the item's thumbnail name back (as clients send the whole item) changes nothing.
    expect(
      await post(`/content/users/publisher/items/${id}/update`, tokens.publisher, { thumbnail: "thumbnail/x.png" }),
    ).toEqual({ success: true, id });
  });
});

describe("related items", () => {
  it("relates a map to a service through @esri/arcgis-rest-portal, both ways, and forgets it when an item goes", async () => {
    const map = await addText("publisher", "Web Mapping Application", "App with code");
    const code = await addText("publisher", "Code Attachment", "Its code", "console.log(1)");
    const answers = await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "addItemRelationship",
        options: { originItemId: map, destinationItemId: code, relationshipType: "WMA2Code" },
      },
      { fn: "getRelatedItems", options: { id: map, relationshipType: "WMA2Code" } },
      { fn: "getRelatedItems", options: { id: code, relationshipType: "WMA2Code", direction: "reverse" } },
      { fn: "getRelatedItems", options: { id: code, relationshipType: "WMA2Code", direction: "forward" } },
    ]);
    expect(answers[0]).toEqual({ success: true });
    expect(answers[1]).toMatchObject({ total: 1, relatedItems: [{ id: code, type: "Code Attachment" }] });
    expect(answers[2]).toMatchObject({ total: 1, relatedItems: [{ id: map }] });
    expect(answers[3]).toEqual({ total: 0, relatedItems: [] });
    const [removed, after] = await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "removeItemRelationship",
        options: { originItemId: map, destinationItemId: code, relationshipType: "WMA2Code" },
      },
      { fn: "getRelatedItems", options: { id: map, relationshipType: "WMA2Code" } },
    ]);
    expect(removed).toEqual({ success: true });
    expect(after).toEqual({ total: 0, relatedItems: [] });
    // Deleting an item removes its relationships at the other end too.
    const webMap = await addText(
      "publisher",
      "Web Map",
      "Map of a service",
      JSON.stringify({
        operationalLayers: [],
        baseMap: { baseMapLayers: [], title: "None" },
        spatialReference: { wkid: 102100 },
        version: "2.31",
      }),
    );
    const service = await addUrl(
      "publisher",
      "Feature Service",
      "Elsewhere",
      "https://example.com/arcgis/rest/services/X/FeatureServer",
    );
    const relate = { originItemId: webMap, destinationItemId: service, relationshipType: "Map2Service" };
    expect(await post("/content/users/publisher/addRelationship", tokens.publisher, relate)).toEqual({ success: true });
    expect(
      await getJson(`/content/items/${service}/relatedItems`, tokens.publisher, {
        relationshipType: "Map2Service",
        direction: "reverse",
      }),
    ).toMatchObject({ total: 1, relatedItems: [{ id: webMap }] });
    expect(await post(`/content/users/publisher/items/${webMap}/delete`, tokens.publisher)).toMatchObject({
      success: true,
    });
    const origin = await getJson(`/content/items/${service}`, tokens.publisher);
    expect(origin.id).toBe(service);
    expect(
      await getJson(`/content/items/${service}/relatedItems`, tokens.publisher, {
        relationshipType: "Map2Service",
        direction: "reverse",
      }),
    ).toEqual({ total: 0, relatedItems: [] });
  }, 60_000);

  it("refuses unknown types, items a type does not relate and callers who may not relate them", async () => {
    const app = await addText("publisher", "Web Mapping Application", "Relating app");
    const code = await addText("publisher", "Code Attachment", "Relating code", "x");
    const mine = await addText("user", "Code Attachment", "Member's code", "y");
    const add = (who: string | undefined, fields: Record<string, string>) =>
      post(`/content/users/${who ?? "publisher"}/addRelationship`, who ? tokens[who] : undefined, fields);
    const base = { originItemId: app, destinationItemId: code, relationshipType: "WMA2Code" };
    expect(errorOf(await add("publisher", { ...base, relationshipType: "Map2Nothing" })).details[0]).toMatch(
      /^'Map2Nothing' is not a relationship type mapgate keeps: Map2Service, Service2Data, Service2Service, WMA2Code, Map2FeatureCollection\.$/,
    );
    expect(errorOf(await add("publisher", { ...base, relationshipType: "" })).details[0]).toMatch(
      /^'relationshipType' must be specified/,
    );
    expect(errorOf(await add("publisher", { ...base, originItemId: "x" })).details).toEqual([
      "'originItemId' must be an item id (32 hexadecimal digits).",
    ]);
    expect(errorOf(await add("publisher", { ...base, destinationItemId: app })).details).toEqual([
      "An item is not related to itself.",
    ]);
    expect(errorOf(await add("publisher", { ...base, originItemId: code, destinationItemId: app })).details).toEqual([
      "WMA2Code relates items from a web mapping application to its code attachment, not a 'Code Attachment' item to a 'Web Mapping Application' item.",
    ]);
    // The member sees neither item; the destination of another member they do not see either.
    expect(errorOf(await add("user", base)).code).toBe(400);
    expect(errorOf(await add("publisher", { ...base, destinationItemId: mine })).code).toBe(400);
    expect(errorOf(await add(undefined, base)).code).toBe(499);
    // Shared with the organization, the member sees both and still may not relate another's item.
    for (const id of [app, code])
      await post(`/content/items/${id}/share`, tokens.publisher, { everyone: "false", org: "true" });
    expect(errorOf(await add("user", base)).code).toBe(403);
    // Administrators may.
    expect(await add("admin", base)).toEqual({ success: true });
    const related = (who: string | undefined) =>
      getJson(`/content/items/${app}/relatedItems`, who ? tokens[who] : undefined, { relationshipType: "WMA2Code" });
    expect(await related("user")).toMatchObject({ total: 1 });
    expect(errorOf(await related(undefined)).code).toBe(499);
    expect(
      errorOf(
        await getJson(`/content/items/${app}/relatedItems`, tokens.publisher, {
          relationshipType: "WMA2Code",
          direction: "up",
        }),
      ).details,
    ).toEqual(["'direction' must be 'forward' or 'reverse'."]);
    expect(
      errorOf(
        await post("/content/users/publisher/deleteRelationship", tokens.publisher, {
          ...base,
          relationshipType: "Map2Service",
        }),
      ).details,
    ).toEqual([`The items have no Map2Service relationship from ${app} to ${code}.`]);
  });

  it("answers a hosted service's source file as Service2Data, and the file's services in reverse", async () => {
    const added = await postFiles(
      "/content/users/publisher/addItem",
      tokens.publisher ?? "",
      { type: "CSV", title: "Sites" },
      {
        file: { name: "sites.csv", bytes: "name,latitude,longitude\nNorth,48.9,2.3\n" },
      },
    );
    const published = await post("/content/users/publisher/publish", tokens.publisher, {
      itemId: String(added.id),
      filetype: "csv",
      publishParameters: JSON.stringify({ name: "Related_sites" }),
    });
    const [service] = published.services as { serviceItemId: string; jobId: string }[];
    const status = `/content/users/publisher/items/${service?.serviceItemId}/status`;
    let state = await getJson(status, tokens.publisher, { jobId: service?.jobId ?? "" });
    for (let i = 0; i < 600 && state.status === "processing"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = await getJson(status, tokens.publisher, { jobId: service?.jobId ?? "" });
    }
    expect(state).toMatchObject({ status: "completed" });
    expect(
      await getJson(`/content/items/${service?.serviceItemId}/relatedItems`, tokens.publisher, {
        relationshipType: "Service2Data",
      }),
    ).toMatchObject({ total: 1, relatedItems: [{ id: added.id, type: "CSV" }] });
    expect(
      await getJson(`/content/items/${String(added.id)}/relatedItems`, tokens.publisher, {
        relationshipType: "Service2Data",
        direction: "reverse",
      }),
    ).toMatchObject({ total: 1, relatedItems: [{ id: service?.serviceItemId, type: "Feature Service" }] });
  }, 60_000);
});

describe("moving items and deleting folders", () => {
  it("moves an item into a folder and back through @esri/arcgis-rest-portal, and many at once", async () => {
    const id = await addText("publisher", "Web Mapping Application", "Mover");
    const other = await addText("publisher", "Web Mapping Application", "Mover too");
    const [folder] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "createFolder", options: { title: "Moved here" } },
    ])) as { folder: { id: string } }[];
    const folderId = folder?.folder.id ?? "";
    const [moved, back] = await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "moveItem", options: { itemId: id, folderId } },
      { fn: "getItem", options: { id } },
    ]);
    expect(moved).toEqual({ success: true, itemId: id, owner: "publisher", folder: folderId });
    expect(back).toMatchObject({ ownerFolder: folderId });
    const [root] = await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "moveItem", options: { itemId: id } },
    ]);
    expect(root).toEqual({ success: true, itemId: id, owner: "publisher", folder: "" });
    expect(
      await post("/content/users/publisher/moveItems", tokens.publisher, {
        items: `${id},${other},0123456789abcdef0123456789abcdef`,
        folder: folderId,
      }),
    ).toEqual({
      results: [
        { itemId: id, success: true },
        { itemId: other, success: true },
        {
          itemId: "0123456789abcdef0123456789abcdef",
          success: false,
          error: {
            code: 400,
            message: "Unable to move items.",
            details: ["Item '0123456789abcdef0123456789abcdef' does not exist or is inaccessible."],
          },
        },
      ],
    });
    expect(await getJson(`/content/users/publisher/${folderId}`, tokens.publisher)).toMatchObject({ total: 2 });
    // Moved in its folder's path too; an item elsewhere is CONT_0005.
    expect(
      await post(`/content/users/publisher/${folderId}/items/${id}/move`, tokens.publisher, { folder: "/" }),
    ).toMatchObject({ success: true });
    expect(
      (await post(`/content/users/publisher/${folderId}/items/${id}/move`, tokens.publisher, { folder: "/" })).error,
    ).toMatchObject({ code: 400, messageCode: "CONT_0005" });
    // Bad folders, other members, anonymous.
    expect(
      errorOf(await post(`/content/users/publisher/items/${id}/move`, tokens.publisher, { folder: "abc" })).details,
    ).toEqual(["Folder 'abc' does not exist in publisher's content."]);
    expect(errorOf(await post(`/content/users/publisher/items/${id}/move`, tokens.user, { folder: "/" })).code).toBe(
      400,
    );
    expect(
      errorOf(await post("/content/users/publisher/moveItems", tokens.user, { items: id, folder: "/" })).code,
    ).toBe(403);
    expect(errorOf(await post(`/content/users/publisher/items/${id}/move`, undefined, { folder: "/" })).code).toBe(499);
    expect(errorOf(await post("/content/users/publisher/moveItems", tokens.publisher, { items: "" })).details).toEqual([
      "'items' must name at least one item id.",
    ]);
    // Administrators organize anyone's content.
    expect(await post(`/content/users/publisher/items/${id}/move`, tokens.admin, { folder: folderId })).toMatchObject({
      success: true,
      folder: folderId,
    });
  }, 60_000);

  it("deletes a folder with its items, refusing it whole while an item in it is protected", async () => {
    const created = await post("/content/users/publisher/createFolder", tokens.publisher, { title: "Doomed" });
    const folderId = (created.folder as { id: string }).id;
    const before = await usage("publisher");
    const a = await post(`/content/users/publisher/${folderId}/addItem`, tokens.publisher, {
      type: "Web Mapping Application",
      title: "Doomed A",
      text: "{}",
    });
    const b = await post(`/content/users/publisher/${folderId}/addItem`, tokens.publisher, {
      type: "Web Mapping Application",
      title: "Doomed B",
      text: "{}",
    });
    const [idA, idB] = [String(a.id), String(b.id)];
    await post(`/content/users/publisher/items/${idA}/addResources`, tokens.publisher, {
      fileName: "r.json",
      text: "[]",
    });
    await post(`/content/users/publisher/items/${idB}/protect`, tokens.publisher);
    const refused = await post(`/content/users/publisher/${folderId}/delete`, tokens.publisher);
    expect(refused).toEqual({
      error: {
        code: 400,
        messageCode: "CONT_0048",
        message: "Unable to delete item. Delete protection is turned on.",
        details: [`The folder holds protected items (${idB}): unprotect or move them first.`],
      },
    });
    expect((await getJson(`/content/items/${idA}`, tokens.publisher)).id).toBe(idA);
    // Only the owner and administrators delete it.
    expect(errorOf(await post(`/content/users/publisher/${folderId}/delete`, tokens.user)).code).toBe(403);
    expect(errorOf(await post(`/content/users/publisher/${folderId}/delete`, undefined)).code).toBe(499);
    await post(`/content/users/publisher/items/${idB}/unprotect`, tokens.publisher);
    const [removed] = await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "removeFolder", options: { folderId } },
    ]);
    expect(removed).toEqual({ success: true, folder: { username: "publisher", id: folderId, title: "Doomed" } });
    for (const id of [idA, idB])
      expect(errorOf(await getJson(`/content/items/${id}`, tokens.publisher)).code).toBe(400);
    expect(await usage("publisher")).toBe(before);
    expect(errorOf(await getJson(`/content/users/publisher/${folderId}`, tokens.publisher)).details).toEqual([
      `Folder '${folderId}' does not exist in publisher's content.`,
    ]);
  }, 60_000);
});
