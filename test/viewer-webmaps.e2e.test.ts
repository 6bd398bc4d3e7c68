// The viewer makes web maps, in a real headless Chromium against the local engine with the demo data: a publisher
// opens a layer, adds a second one, changes its opacity and saves the map into a folder (a Web Map item written
// through addItem, checked on the REST wire); shares it with a group from the item's page; a member of the group
// finds it by search, opens it in the viewer from the item's page and sees both layers drawn. A web map naming a
// service its reader may not see draws the rest and names that layer; bad `webmap` parameters are refused.
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngineAndBrowser, stopBrowserAndEngine, viewerSays } from "./helpers/browser.ts";
import { demoOrganization } from "./helpers/admin.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { call, jsonCalls, signIn } from "./helpers/http.ts";
import { CHROMIUM_ARGS } from "./helpers/map-render.ts";
import { publish } from "./helpers/publish.ts";

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
let browser: Browser;
const contexts: BrowserContext[] = [];
const tokens: Record<string, string> = {};
let countriesUrl: string;
let placesUrl: string;
let sceneUrl: string;
let groupId: string;
let folderId: string;
const { getJson, postJson } = jsonCalls(() => engine.ca);

const https = (path: string) => `${engine.ready.https}${path}`;
const viewer = (path: string) => https(`/viewer/map?url=${encodeURIComponent(path)}`);

async function signedIn(username: keyof typeof PASSWORDS): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(https(`${REST}/oauth2/signin?redirect=/`));
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(PASSWORDS[username]);
  await Promise.all([page.waitForURL(https("/")), page.getByRole("button", { name: "Sign in" }).click()]);
  return page;
}

/** Waits until the viewer has drawn `n` layers (its body's `data-layers`) and says it drew them. */
async function drawnLayers(page: Page, n: number): Promise<void> {
  await page.waitForFunction(
    (count) => (globalThis as unknown as InBrowser).document.body.dataset.layers === String(count),
    n,
    { timeout: 30_000 },
  );
  expect(await viewerSays(page)).toBe("drawn");
}

/** The page as the functions run in the browser see it. */
type InBrowser = { document: { body: { dataset: Record<string, string | undefined> } } };
const status = (page: Page) => page.locator("#viewer-status").textContent();

beforeAll(async () => {
  ({ engine, browser } = await startEngineAndBrowser(CHROMIUM_ARGS));
  const org = demoOrganization(engine.dataDir);
  for (const who of ["admin", "publisher", "user"] as const) {
    tokens[who] = await signIn(https(REST), engine.ca, who, PASSWORDS[who]);
  }
  const world = (await getJson(https("/arcgis/rest/services/World"))) as { services: { name: string }[] };
  const named = (prefix: string) => world.services.find((s) => s.name.startsWith(prefix))?.name;
  countriesUrl = `/arcgis/rest/services/${named("World/countries")}/FeatureServer/0`;
  placesUrl = `/arcgis/rest/services/${named("World/places")}/FeatureServer`;
  // A service the member may not see: the publisher's scene layer, left private.
  const scene = await publish(engine, {
    token: tokens.publisher ?? "",
    serverId: org.serverId,
    store: org.folderStore,
    type: "SceneServer",
    serviceName: "Webmap_Buildings",
    path: "/caches/scene/Buildings3D",
  });
  sceneUrl = scene.serviceUrl;
  const group = await postJson(https(`${REST}/community/createGroup`), tokens.admin ?? "", {
    title: "Map makers",
    access: "org",
  });
  groupId = String((group.group as { id: string }).id);
  await postJson(https(`${REST}/community/groups/${groupId}/addUsers`), tokens.admin ?? "", {
    users: "publisher,user",
  });
  const folder = await postJson(https(`${REST}/content/users/publisher/createFolder`), tokens.publisher ?? "", {
    title: "Maps",
  });
  folderId = String((folder.folder as { id: string }).id);
}, 180_000);

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

describe.sequential("web maps made in the viewer", () => {
  let mapId = "";

  it("a publisher adds a second layer to a viewer, changes its opacity and saves the map into a folder", async () => {
    const page = await signedIn("publisher");
    await page.goto(viewer(countriesUrl));
    await drawnLayers(page, 1);
    await page.getByLabel("Add layer (a service or layer URL of this site)").fill(placesUrl);
    await page.getByRole("button", { name: "Add layer" }).click();
    await drawnLayers(page, 2);
    await expect.poll(() => page.locator("#viewer-layers li[data-state=drawn]").count()).toBe(2);
    expect(await status(page)).toMatch(
      /^countries: \d+ features\. places: \d+ features( \(the layer.s maximum per request: zoom in for the rest\))?\.$/,
    );
    // The same service again is not a third layer.
    await page.getByLabel("Add layer (a service or layer URL of this site)").fill(placesUrl);
    await page.getByRole("button", { name: "Add layer" }).click();
    await expect.poll(() => page.locator("#viewer-add-status").textContent()).toMatch(/is already in the map\.$/);
    await page.getByLabel(/^Opacity of World\/places/).fill("50");
    await page.getByLabel(/^Opacity of World\/places/).dispatchEvent("change");

    await page.getByLabel("Title").fill("Countries and places");
    await page.getByLabel("Tags (comma-separated)").fill("viewer, test");
    await page.getByLabel("Folder").selectOption({ label: "Maps" });
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.waitForFunction(
      () => (globalThis as unknown as InBrowser).document.body.dataset.saved !== undefined,
      undefined,
      { timeout: 20_000 },
    );
    mapId = (await page.locator("body").getAttribute("data-saved")) ?? "";
    expect(mapId).toMatch(/^[0-9a-f]{32}$/);
    expect(await page.locator("#viewer-saved").textContent()).toContain("Saved as the web map “Countries and places”.");
    expect(await page.getByRole("link", { name: "Open it" }).getAttribute("href")).toBe(`/viewer/map?webmap=${mapId}`);

    // On the REST wire: a Web Map item in the folder, its layers in the order drawn, each as it is seen.
    const item = await getJson(https(`${REST}/content/items/${mapId}`), tokens.publisher);
    expect(item).toMatchObject({
      type: "Web Map",
      title: "Countries and places",
      owner: "publisher",
      ownerFolder: folderId,
      tags: ["viewer", "test"],
      access: "private",
    });
    const data = await getJson(https(`${REST}/content/items/${mapId}/data`), tokens.publisher);
    const places = await getJson(https(placesUrl));
    const placeLayers = places.layers as { id: number; name: string }[];
    expect(data).toEqual({
      operationalLayers: [
        {
          id: "mapgate-layer-1",
          title: "countries",
          layerType: "ArcGISFeatureLayer",
          url: https(countriesUrl),
          visibility: true,
          opacity: 1,
        },
        ...placeLayers.map((l, i) => ({
          id: `mapgate-layer-${i + 2}`,
          title: l.name,
          layerType: "ArcGISFeatureLayer",
          url: https(`${placesUrl}/${l.id}`),
          visibility: true,
          opacity: 0.5,
        })),
      ],
      baseMap: expect.objectContaining({ title: "World Basemap" }),
      spatialReference: { wkid: 102100, latestWkid: 3857 },
      authoringApp: "mapgate viewer",
      authoringAppVersion: "1",
      version: "2.31",
    });
  });

  it("the owner shares the map with the group by its checkbox on the item page, which links Open in viewer", async () => {
    const page = await signedIn("publisher");
    await page.goto(https(`${REST}/content/items/${mapId}?f=html`));
    expect(await page.getByRole("link", { name: "Open in viewer" }).getAttribute("href")).toBe(
      `/viewer/map?webmap=${mapId}`,
    );
    await page.getByLabel("Group: Map makers").check();
    const loaded = page.waitForEvent("load");
    await page.getByRole("button", { name: "Share", exact: true }).click();
    await loaded;
    const item = await getJson(https(`${REST}/content/items/${mapId}/groups`), tokens.publisher);
    expect((item.member as { id: string }[]).map((g) => g.id)).toEqual([groupId]);
  });

  it("a member of the group finds the map by search, opens it in the viewer and sees both layers drawn", async () => {
    const page = await signedIn("user");
    await page.goto(https(`${REST}/search?q=${encodeURIComponent('"Countries and places"')}&f=html`));
    await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Countries and places" }).click()]);
    await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Open in viewer" }).click()]);
    expect(page.url()).toBe(https(`/viewer/map?webmap=${mapId}`) + new URL(page.url()).hash);
    await drawnLayers(page, 2);
    expect(await page.locator("h1").textContent()).toBe("Countries and places");
    await expect.poll(() => page.locator("#viewer-layers li[data-state=drawn]").count()).toBe(2);
    await expect.poll(() => page.locator("#viewer-layers li[data-state=not-drawn]").count()).toBe(0);
    expect(await status(page)).toMatch(
      /^countries: \d+ features\. places: \d+ features( \(the layer.s maximum per request: zoom in for the rest\))?\.$/,
    );
    expect(
      await page
        .getByLabel(/^Opacity of /)
        .last()
        .inputValue(),
    ).toBe("50");
    // Anyone else is told to sign in, and nothing is drawn.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    contexts.push(context);
    const anonymous = await context.newPage();
    await anonymous.goto(https(`/viewer/map?webmap=${mapId}`));
    expect(await viewerSays(anonymous)).toBe("failed");
    expect(await status(anonymous)).toMatch(/^The web map could not be read: /);
    expect(await anonymous.getByRole("link", { name: "Sign in" }).getAttribute("href")).toContain(
      encodeURIComponent(`/viewer/map?webmap=${mapId}`),
    );
  });

  it("a layer whose service the reader may not see is named, not drawn; the others are drawn as saved", async () => {
    const text = JSON.stringify({
      operationalLayers: [
        { id: "a", title: "Buildings", layerType: "ArcGISSceneServiceLayer", url: `${sceneUrl}/layers/0` },
        { id: "b", title: "Countries", layerType: "ArcGISFeatureLayer", url: https(countriesUrl), visibility: false },
      ],
      baseMap: { title: "None", baseMapLayers: [] },
      spatialReference: { wkid: 102100 },
      version: "2.31",
    });
    const added = await postJson(https(`${REST}/content/users/user/addItem`), tokens.user ?? "", {
      type: "Web Map",
      title: "Partly seen",
      text,
    });
    const page = await signedIn("user");
    await page.goto(https(`/viewer/map?webmap=${String(added.id)}`));
    await drawnLayers(page, 1);
    expect(await page.locator("#viewer-layers li[data-state=not-drawn]").allTextContents()).toEqual([
      "Buildings: not drawn (This service does not exist, or you may not see it.)",
    ]);
    expect(await page.locator("#viewer-unseen").textContent()).toBe("Layers you may not see are not drawn: Buildings.");
    // Saved hidden, it stays hidden until its box is checked.
    expect(await page.getByRole("checkbox", { name: "Countries" }).isChecked()).toBe(false);
    // The publisher, who may see both, sees both.
    const owner = await signedIn("publisher");
    await postJson(https(`${REST}/content/items/${String(added.id)}/share`), tokens.user ?? "", { org: "true" });
    await owner.goto(https(`/viewer/map?webmap=${String(added.id)}`));
    await drawnLayers(owner, 2);
    expect(await status(owner)).toMatch(/^Footprint of .+ drawn\. countries: \d+ features\.$/);
  });

  it("refuses a webmap that is not an item id, or given with a url", async () => {
    const bad = await call(https("/viewer/map?webmap=nope&f=json"), { ca: engine.ca });
    expect(bad.json()).toMatchObject({
      error: { code: 400, message: "Which map?", details: ["'webmap' is a Web Map item's id: 32 hexadecimal digits."] },
    });
    const both = await call(https(`/viewer/map?webmap=${mapId}&url=${encodeURIComponent(countriesUrl)}&f=json`), {
      ca: engine.ca,
    });
    expect(both.json()).toMatchObject({
      error: { code: 400, details: ["Give either 'url' (a service) or 'webmap', not both."] },
    });
  });
});
