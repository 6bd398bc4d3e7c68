// Items of every type besides files and data stores: web maps and apps' configurations (`text`), references
// (`url`), their fields, their data as served, delete protection, and who may read and change them, on the real
// local engine, through the real @esri/arcgis-rest-portal client and raw requests for every bad input.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCommand } from "./helpers/admin.ts";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";

const OTHER_PASSWORD = "other-Admin-Pass-1234";
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

/** A web map as the ArcGIS Maps SDK writes one: a feature layer over a tiled basemap, in Web Mercator. */
const webMap = (title = "World") => ({
  operationalLayers: [
    {
      id: "countries",
      layerType: "ArcGISFeatureLayer",
      url: "https://example.com/arcgis/rest/services/World/countries/FeatureServer/0",
      title: "Countries",
      visibility: true,
      opacity: 0.8,
    },
  ],
  baseMap: {
    baseMapLayers: [
      {
        id: "base",
        layerType: "ArcGISTiledMapServiceLayer",
        url: "https://example.com/arcgis/rest/services/World_Basemap/MapServer",
      },
    ],
    title,
  },
  spatialReference: { wkid: 102100, latestWkid: 3857 },
  authoringApp: "mapgate tests",
  authoringAppVersion: "1",
  version: "2.31",
});

const addItem = (token: string | undefined, fields: Record<string, string>, owner = "publisher") =>
  post(`/content/users/${owner}/addItem`, token, fields);

beforeAll(async () => {
  // Requests as large as a Lambda takes (the default is 1 MB), so the text's own limit is what refuses.
  engine = await startEngine({ env: { MAX_BODY_BYTES: "4400000" } });
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
  adminCommand(engine.dataDir, ["bootstrap", "--name", "Other GIS", "--admin", "otheradmin"], {
    MAPGATE_ADMIN_PASSWORD: OTHER_PASSWORD,
  });
  tokens.other = await signIn("otheradmin", OTHER_PASSWORD);
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("items of text and URLs through @esri/arcgis-rest-portal", () => {
  it("creates a web map, reads its data, updates it, finds it by type and keyword, protects it and deletes it", async () => {
    const map = webMap();
    const [created] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "createItem",
        options: {
          item: {
            title: "Countries map",
            type: "Web Map",
            tags: ["world", "test"],
            typeKeywords: ["ArcGIS API for JavaScript", "Web Map", "Map", "mapgate-test-kw"],
            snippet: "The world's countries",
            extent: "-180,-90,180,90",
            accessInformation: "Natural Earth",
            licenseInfo: "Public domain",
            spatialReference: "102100",
            properties: { reviewed: true },
            text: map,
          },
        },
      },
    ])) as [{ success: boolean; id: string; folder: string | null }];
    expect(created).toMatchObject({ success: true, folder: null });
    const id = created.id;
    const changed = webMap("Changed");
    const answers = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "getItem", options: { id } },
      { fn: "getItemData", options: { id } },
      { fn: "updateItem", options: { item: { id, title: "Countries map v2", text: changed, snippet: "Changed" } } },
      { fn: "getItemData", options: { id } },
      { fn: "searchItems", options: { q: 'type:"Web Map" AND owner:publisher' } },
      { fn: "searchItems", options: { q: "typekeywords:mapgate-test-kw" } },
      { fn: "protectItem", options: { id } },
      { fn: "getItem", options: { id } },
      { fn: "removeItem", options: { id } },
      { fn: "getItem", options: { id } },
      { fn: "unprotectItem", options: { id } },
      { fn: "removeItem", options: { id } },
      { fn: "getItem", options: { id } },
    ])) as Record<string, unknown>[];
    const [item, data, updated, data2, byType, byKeyword, prot, protItem, refused, still, unprot, removed, gone] =
      answers;
    expect(item).toMatchObject({
      id,
      owner: "publisher",
      title: "Countries map",
      type: "Web Map",
      typeKeywords: ["ArcGIS API for JavaScript", "Web Map", "Map", "mapgate-test-kw"],
      tags: ["world", "test"],
      snippet: "The world's countries",
      extent: [
        [-180, -90],
        [180, 90],
      ],
      accessInformation: "Natural Earth",
      licenseInfo: "Public domain",
      spatialReference: "102100",
      properties: { reviewed: true },
      access: "private",
      protected: false,
      size: Buffer.byteLength(JSON.stringify(map)),
      url: null,
    });
    expect(data).toEqual(map);
    expect(updated).toEqual({ success: true, id });
    expect(data2).toEqual(changed);
    const ids = (r: unknown) => (r as { results: { id: string }[] }).results.map((x) => x.id);
    expect(ids(byType)).toContain(id);
    expect(ids(byKeyword)).toEqual([id]);
    expect(prot).toEqual({ success: true, itemId: id });
    expect(protItem).toMatchObject({ id, protected: true, title: "Countries map v2", snippet: "Changed" });
    expect(refused).toMatchObject({ error: { code: "CONT_0048" } });
    expect((refused as { error: { message: string } }).error.message).toContain("Delete protection is turned on.");
    expect(still).toMatchObject({ id, protected: true });
    expect(unprot).toEqual({ success: true, itemId: id });
    expect(removed).toEqual({ success: true, itemId: id });
    expect(gone).toMatchObject({ error: { code: "CONT_0001" } });
  }, 60_000);
});

describe("an item's data as served", () => {
  it("answers JSON text as application/json, other text as a sandboxed attachment, both nosniff", async () => {
    const map = webMap();
    const jsonItem = await addItem(tokens.publisher, { type: "Web Map", title: "Served", text: JSON.stringify(map) });
    const plain = await addItem(tokens.publisher, {
      type: "Code Sample",
      title: "Snippet",
      text: "<script>alert(document.cookie)</script>",
    });
    const json = await call(`${rest()}/content/items/${String(jsonItem.id)}/data?token=${tokens.publisher}`, {
      ca: engine.ca,
    });
    expect(json.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(json.headers["x-content-type-options"]).toBe("nosniff");
    expect(json.headers["content-disposition"]).toBeUndefined();
    expect(json.json()).toEqual(map);
    const text = await call(`${rest()}/content/items/${String(plain.id)}/data?token=${tokens.publisher}`, {
      ca: engine.ca,
    });
    expect(text.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(text.headers["x-content-type-options"]).toBe("nosniff");
    expect(text.headers["content-disposition"]).toMatch(/^attachment; /);
    expect(text.headers["content-security-policy"]).toBe("sandbox; default-src 'none'");
    expect(text.text).toBe("<script>alert(document.cookie)</script>");
  });

  it("keeps a text larger than a table record in the item files, counted against the quota, and gives it back", async () => {
    const self = async () => (await post("/community/self", tokens.publisher)).storageUsage as number;
    const before = await self();
    const big = webMap();
    (big.operationalLayers[0] as Record<string, unknown>).popupInfo = { description: "x".repeat(300_000) };
    const body = JSON.stringify(big);
    const added = await addItem(tokens.publisher, { type: "Web Map", title: "Big", text: body });
    expect(added).toMatchObject({ success: true });
    const id = String(added.id);
    expect(await self()).toBe(before + Buffer.byteLength(body));
    const data = await call(`${rest()}/content/items/${id}/data?token=${tokens.publisher}`, { ca: engine.ca });
    expect(data.text).toBe(body);
    // Back to a small text: kept in its record again, the quota given back the difference.
    const small = JSON.stringify(webMap());
    expect(await post(`/content/users/publisher/items/${id}/update`, tokens.publisher, { text: small })).toEqual({
      success: true,
      id,
    });
    expect(await self()).toBe(before + Buffer.byteLength(small));
    expect((await call(`${rest()}/content/items/${id}/data?token=${tokens.publisher}`, { ca: engine.ca })).text).toBe(
      small,
    );
    expect(await post(`/content/users/publisher/items/${id}/delete`, tokens.publisher)).toEqual({
      success: true,
      itemId: id,
    });
    expect(await self()).toBe(before);
  });

  it("adds a reference by URL (never fetched) and updates it in the owner's folder", async () => {
    const folder = await post("/content/users/publisher/createFolder", tokens.publisher, { title: "Maps" });
    const folderId = String((folder.folder as { id: string }).id);
    const added = await post(`/content/users/publisher/${folderId}/addItem`, tokens.publisher, {
      type: "Feature Service",
      title: "Elsewhere",
      url: "https://gis.example.org/arcgis/rest/services/Roads/FeatureServer",
      typeKeywords: "Data,Service,Feature Service",
    });
    expect(added).toMatchObject({ success: true, folder: folderId });
    const id = String(added.id);
    expect(
      await post(`/content/users/publisher/${folderId}/items/${id}/update`, tokens.publisher, {
        url: "https://gis.example.org/arcgis/rest/services/Rivers/FeatureServer",
      }),
    ).toEqual({ success: true, id });
    const item = await post(`/content/items/${id}`, tokens.publisher);
    expect(item).toMatchObject({
      type: "Feature Service",
      url: "https://gis.example.org/arcgis/rest/services/Rivers/FeatureServer",
      ownerFolder: folderId,
      size: -1,
    });
    // In another folder than the item's: not there.
    expect(
      await post(`/content/users/publisher/items/${id}/update`, tokens.publisher, { title: "Root path works" }),
    ).toEqual({ success: true, id });
    expect(await post(`/content/users/publisher/${folderId}/items/${id}/protect`, tokens.publisher)).toEqual({
      success: true,
      itemId: id,
    });
    expect(await post(`/content/items/${id}/data`, tokens.publisher)).toEqual({});
  });
});

describe("bad input is refused with a 400 naming the problem", () => {
  const refusal = async (fields: Record<string, string>) => {
    const out = await addItem(tokens.publisher, { title: "Bad", ...fields });
    const error = out.error as { code: number; message: string; details: string[] } | undefined;
    expect(error, JSON.stringify(out)).toBeDefined();
    return error as { code: number; message: string; details: string[] };
  };
  const without = (path: string[]) => {
    const map = webMap() as unknown as Record<string, unknown>;
    let at = map;
    for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
    Reflect.deleteProperty(at, path.at(-1) as string);
    return JSON.stringify(map);
  };
  const cases: [string, string, string][] = [
    ["operationalLayers", without(["operationalLayers"]), "'operationalLayers' must be an array of layers."],
    ["baseMap", without(["baseMap"]), "'baseMap' must be an object with 'baseMapLayers' and 'title'."],
    ["baseMapLayers", without(["baseMap", "baseMapLayers"]), "'baseMap.baseMapLayers' must be an array of layers."],
    ["baseMap title", without(["baseMap", "title"]), "'baseMap.title' must be a string."],
    ["spatialReference", without(["spatialReference"]), "'spatialReference' must be an object with 'wkid' or 'wkt'."],
    [
      "version",
      without(["version"]),
      `'version' must be the web map specification's version as a string, e.g. "2.31".`,
    ],
    ["a layer's id", without(["operationalLayers", "0", "id"]), "'operationalLayers[0]' must have a string 'id'."],
    [
      "a layer's layerType",
      without(["operationalLayers", "0", "layerType"]),
      "'operationalLayers[0]' must have a string 'layerType'.",
    ],
    [
      "a layer's url",
      without(["operationalLayers", "0", "url"]),
      "'operationalLayers[0]' (ArcGISFeatureLayer) must have its service's 'url' or its item's 'itemId'.",
    ],
    [
      "a basemap layer's url",
      JSON.stringify({
        ...webMap(),
        baseMap: {
          title: "x",
          baseMapLayers: [{ id: "b", layerType: "ArcGISTiledMapServiceLayer", url: "file:///etc/passwd" }],
        },
      }),
      "'baseMap.baseMapLayers[0]' has a 'url' that is not http(s).",
    ],
    ["not JSON", "{operationalLayers:", "'text' of a Web Map item must be a JSON object or array."],
  ];
  it.each(cases)("a web map without or with a wrong %s", async (_what, text, detail) => {
    const error = await refusal({ type: "Web Map", text });
    expect(error).toMatchObject({ code: 400, message: "Unable to add item." });
    expect(error.details).toEqual([detail.startsWith("'text'") ? detail : `The web map is not valid: ${detail}`]);
  });

  it("refuses a web map with the same problems on update, leaving the map as it was", async () => {
    const added = await addItem(tokens.publisher, { type: "Web Map", title: "Kept", text: JSON.stringify(webMap()) });
    const id = String(added.id);
    const out = await post(`/content/users/publisher/items/${id}/update`, tokens.publisher, {
      text: without(["version"]),
    });
    expect(out).toMatchObject({ error: { code: 400, message: "Unable to update item." } });
    const data = await call(`${rest()}/content/items/${id}/data?token=${tokens.publisher}`, { ca: engine.ca });
    expect(data.json()).toEqual(webMap());
  });

  it("refuses oversized text, too deep text, an unknown type, a url not http(s), bad properties and extent", async () => {
    const tooLarge = await refusal({ type: "Web Mapping Application", text: `"${"a".repeat(4 * 1024 * 1024)}"` });
    expect(tooLarge.details[0]).toMatch(/^'text' may take at most 4 MB \(got \d+ bytes\)\.$/);
    const deep = await refusal({ type: "Dashboard", text: `${"[".repeat(65)}${"]".repeat(65)}` });
    expect(deep.details).toEqual(["'text' nests more than 64 levels deep."]);
    const unknown = await refusal({ type: "Web Mapp", text: "{}" });
    expect(unknown.details[0]).toMatch(/^'Web Mapp' is not an item type mapgate knows/);
    const noType = await refusal({ text: "{}" });
    expect(noType.details[0]).toMatch(/^'type' must be specified/);
    for (const url of ["ftp://example.com/x", "javascript:alert(1)", "https://user:secret@example.com/", "not a url"]) {
      const bad = await refusal({ type: "Document Link", url });
      expect(bad.details).toEqual([
        "'url' must be an http(s) URL of at most 2048 characters, without a user or password.",
      ]);
    }
    const nothing = await refusal({ type: "Web Map" });
    expect(nothing.details).toEqual([
      "An item of type 'Web Map' needs its 'text' or its 'url' (or a 'file' of a file's type).",
    ]);
    const deepProps = await refusal({
      type: "Document Link",
      url: "https://example.com/",
      properties: `${'{"a":'.repeat(17)}1${"}".repeat(17)}`,
    });
    expect(deepProps.details).toEqual(["'properties' nests more than 16 levels deep."]);
    const listProps = await refusal({ type: "Document Link", url: "https://example.com/", properties: "[1,2]" });
    expect(listProps.details).toEqual(["'properties' must be a JSON object."]);
    const bigProps = await refusal({
      type: "Document Link",
      url: "https://example.com/",
      properties: JSON.stringify({ a: "x".repeat(33 * 1024) }),
    });
    expect(bigProps.details).toEqual(["'properties' may take at most 32 KB."]);
    const extent = await refusal({ type: "Document Link", url: "https://example.com/", extent: "10,0,-10,5" });
    expect(extent.details).toEqual([
      "'extent' must be 'xmin,ymin,xmax,ymax' or [[xmin,ymin],[xmax,ymax]] in degrees, min before max.",
    ]);
  });
});

describe("who may read and change an item of text", () => {
  it("owner and administrators change it; members see it once shared; anonymous and other organizations never", async () => {
    const added = await addItem(tokens.publisher, {
      type: "Web Map",
      title: "Private map",
      text: JSON.stringify(webMap()),
    });
    const id = String(added.id);
    const data = (token?: string) => post(`/content/items/${id}/data`, token);
    const update = (token?: string, owner = "publisher") =>
      post(`/content/users/${owner}/items/${id}/update`, token, { snippet: `by ${token ? "someone" : "nobody"}` });
    const protect = (token?: string) => post(`/content/users/publisher/items/${id}/protect`, token);
    const del = (token?: string) => post(`/content/users/publisher/items/${id}/delete`, token);
    // Private: its owner and administrators only.
    expect(await data(tokens.publisher)).toEqual(webMap());
    expect(await data(tokens.admin)).toEqual(webMap());
    expect(await data(tokens.user)).toMatchObject({ error: { code: 400, messageCode: "CONT_0001" } });
    expect(await data(undefined)).toMatchObject({ error: { code: 499 } });
    expect(await data(tokens.other)).toMatchObject({ error: { code: 400, messageCode: "CONT_0001" } });
    // Shared with the organization: members read it, and still may not change it.
    expect(
      await post(`/content/users/publisher/items/${id}/share`, tokens.publisher, { everyone: "false", org: "true" }),
    ).toMatchObject({ notSharedWith: [] });
    expect(await data(tokens.user)).toEqual(webMap());
    expect(await data(tokens.other)).toMatchObject({ error: { code: 400 } });
    expect(await update(tokens.user)).toMatchObject({ error: { code: 403 } });
    expect(await update(tokens.user, "user")).toMatchObject({ error: { code: 403 } });
    expect(await protect(tokens.user)).toMatchObject({ error: { code: 403 } });
    expect(await del(tokens.user)).toMatchObject({ error: { code: 403 } });
    expect(await update(undefined)).toMatchObject({ error: { code: 499 } });
    expect(await update(tokens.other)).toMatchObject({ error: { code: 400 } });
    // Its owner and an administrator may.
    expect(await update(tokens.publisher)).toEqual({ success: true, id });
    expect(await update(tokens.admin)).toEqual({ success: true, id });
    expect(await protect(tokens.admin)).toEqual({ success: true, itemId: id });
    expect(await del(tokens.admin)).toMatchObject({
      error: { code: 400, messageCode: "CONT_0048", message: "Unable to delete item. Delete protection is turned on." },
    });
    expect(await data(tokens.user)).toEqual(webMap());
    expect(await post(`/content/users/publisher/items/${id}/unprotect`, tokens.publisher)).toEqual({
      success: true,
      itemId: id,
    });
    expect(await del(tokens.admin)).toEqual({ success: true, itemId: id });
    expect(await data(tokens.publisher)).toMatchObject({ error: { code: 400, messageCode: "CONT_0001" } });
  });

  it("a member with createItem adds items of text; the member of another organization cannot add to this one's members", async () => {
    const mine = await addItem(
      tokens.user,
      { type: "Web Mapping Application", title: "App", text: '{"values":{}}' },
      "user",
    );
    expect(mine).toMatchObject({ success: true });
    expect(
      await addItem(tokens.user, { type: "Web Map", title: "Theirs", text: JSON.stringify(webMap()) }),
    ).toMatchObject({ error: { code: 403 } });
    expect(
      await addItem(tokens.other, { type: "Web Map", title: "Theirs", text: JSON.stringify(webMap()) }),
    ).toMatchObject({ error: { code: 400 } });
  });
});
