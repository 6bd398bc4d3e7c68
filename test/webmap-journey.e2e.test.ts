// The journey issue 38 names, as people walk it, in a real headless Chromium against the local engine with the demo
// data, every step through the site's own pages: a publisher signs in from the home page, opens a service in the
// viewer from the home page's "View" link, adds a second layer (the team's hosted layer of field sites, shared
// with the group), saves the map as a web map and shares it with a
// group on the item's page. A member of that group, in a browser context of their own, signs in, finds the map
// with the portal's search box, opens it in the viewer from its item page and sees both layers drawn; then an app
// built on the ArcGIS Maps SDK, signed in as the same member, finds the map by the same search and draws it: every
// layer's view settles (the SDK's own layer views) with its features queried from mapgate.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEngineAndBrowser, stopBrowserAndEngine, viewerSays } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { call, form, jsonCalls, signIn } from "./helpers/http.ts";
import { definePointService } from "./helpers/arcgis.ts";
import {
  failedRequests,
  openSdkPage,
  removeSdkBundle,
  SDK_CHROMIUM_ARGS,
  type SdkServer,
  sdkBundle,
  startSdkServer,
} from "./helpers/maps-sdk.ts";

// The SDK draws with WebGL in software (SwiftShader): seconds a view, more when another test file shares the cores.
vi.setConfig({ testTimeout: 120_000 });

const REST = "/portal/sharing/rest";
const TITLE = "Journey map of countries and field sites";
let engine: RunningEngine;
let browser: Browser;
let app: SdkServer;
const contexts: BrowserContext[] = [];
let adminToken = "";
let groupId = "";
let sitesUrl = "";
const { getJson, postJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${path}`;

/** The page as the functions run in the browser see it. */
type InBrowser = { document: { body: { dataset: Record<string, string | undefined> } } };

/** A fresh browser context (nothing shared with another person's), signed in from the home page's link. */
async function signedIn(username: "publisher" | "user"): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(https("/"));
  await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Sign in" }).click()]);
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(PASSWORDS[username]);
  await Promise.all([page.waitForURL(https("/")), page.getByRole("button", { name: "Sign in" }).click()]);
  expect(await page.locator("main p strong").first().textContent()).toBe(username);
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
  await expect.poll(() => page.locator("#viewer-layers li[data-state=drawn]").count()).toBe(n);
  expect(await page.locator("#viewer-layers li[data-state=not-drawn]").count()).toBe(0);
}

beforeAll(async () => {
  const [started, bundle] = await Promise.all([startEngineAndBrowser(SDK_CHROMIUM_ARGS), sdkBundle()]);
  ({ engine, browser } = started);
  app = await startSdkServer(bundle);
  adminToken = await signIn(https(REST), engine.ca, "admin", PASSWORDS.admin);
  // The team: an administrator's group of which the publisher and the member are members.
  const group = await postJson(https(`${REST}/community/createGroup`), adminToken, {
    title: "Field team",
    access: "org",
  });
  groupId = String((group.group as { id: string }).id);
  await postJson(https(`${REST}/community/groups/${groupId}/addUsers`), adminToken, { users: "publisher,user" });
  // The publisher's hosted layer of three field sites around Paris, shared with the group (and no one else).
  const publisher = await signIn(https(REST), engine.ca, "publisher", PASSWORDS.publisher);
  const sitesItem = await definePointService(engine, "Field_Sites");
  sitesUrl = "/arcgis/rest/services/Hosted/Field_Sites/FeatureServer";
  const added = await postJson(https(`${sitesUrl}/0/addFeatures`), publisher, {
    features: JSON.stringify(
      [
        [2.35, 48.86],
        [2.29, 48.86],
        [2.42, 48.83],
      ].map(([x, y], i) => ({ attributes: { Name: `Site ${i + 1}` }, geometry: { x, y } })),
    ),
  });
  expect((added.addResults as { success: boolean }[]).every((r) => r.success)).toBe(true);
  const shared = await postJson(https(`${REST}/content/items/${sitesItem}/share`), publisher, { groups: groupId });
  expect(shared.notSharedWith).toEqual([]);
}, 180_000);

afterAll(async () => {
  await stopBrowserAndEngine(contexts, browser, engine);
  await app?.close();
  removeSdkBundle();
}, 60_000);

describe.sequential("a web map made, shared and opened by its group", () => {
  let mapId = "";

  it("a publisher opens a service in the viewer from the home page, adds a layer and saves the map", async () => {
    const page = await signedIn("publisher");
    const row = page.locator("tr", { hasText: /World\/countries/ }).filter({ hasText: "FeatureServer" });
    await Promise.all([page.waitForEvent("load"), row.getByRole("link", { name: "View" }).click()]);
    expect(new URL(page.url()).pathname).toBe("/viewer/map");
    await drawnLayers(page, 1);
    await page.getByLabel("Add layer (a service or layer URL of this site)").fill(sitesUrl);
    await page.getByRole("button", { name: "Add layer" }).click();
    await drawnLayers(page, 2);
    await page.getByLabel("Title").fill(TITLE);
    await page.getByLabel("Tags (comma-separated)").fill("journey");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.waitForFunction(
      () => (globalThis as unknown as InBrowser).document.body.dataset.saved !== undefined,
      undefined,
      { timeout: 20_000 },
    );
    mapId = (await page.locator("body").getAttribute("data-saved")) ?? "";
    expect(mapId).toMatch(/^[0-9a-f]{32}$/);

    // Saved private: nobody but its owner (and administrators) finds it yet.
    const member = await signIn(https(REST), engine.ca, "user", PASSWORDS.user);
    const before = await getJson(https(`${REST}/search?q=${encodeURIComponent(`"${TITLE}"`)}`), member);
    expect(before.total).toBe(0);
  });

  it("the publisher shares it with the group on the item's page", async () => {
    const page = await signedIn("publisher");
    await page.goto(https(`${REST}/content/users/publisher?f=html`));
    await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: TITLE }).click()]);
    await page.getByLabel("Group: Field team").check();
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Share", exact: true }).click()]);
    // As its owner sees it: shared with the one group, of which the publisher is a member.
    const publisher = await signIn(https(REST), engine.ca, "publisher", PASSWORDS.publisher);
    const groups = await getJson(https(`${REST}/content/items/${mapId}/groups`), publisher);
    expect((groups.member as { id: string }[]).map((g) => g.id)).toEqual([groupId]);
  });

  it("a member signs in, finds it with the search box, opens it in the viewer and sees both layers drawn", async () => {
    const page = await signedIn("user");
    await page.getByRole("searchbox", { name: "Search items" }).fill(TITLE);
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Search" }).click()]);
    expect(new URL(page.url()).pathname).toBe(`${REST}/search`);
    expect(await page.locator("h1").textContent()).toBe(`Search: ${TITLE}`);
    const result = page.locator("tr", { hasText: TITLE });
    expect(await result.locator("td").allTextContents()).toEqual([TITLE, "Web Map", "publisher", "shared"]);
    await Promise.all([page.waitForEvent("load"), result.getByRole("link", { name: TITLE }).click()]);
    await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Open in viewer" }).click()]);
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe(`/viewer/map?webmap=${mapId}`);
    await drawnLayers(page, 2);
    expect(await page.locator("h1").textContent()).toBe(TITLE);
    expect(await page.locator("#viewer-status").textContent()).toMatch(
      /^countries: \d+ features\. Sites: 3 features\.$/,
    );
  });

  it("an app on the ArcGIS Maps SDK, signed in as the member, finds it by search and draws every layer", async () => {
    const { token, expires } = (
      await call(https(`${REST}/generateToken`), {
        ca: engine.ca,
        body: form({ f: "json", username: "user", password: PASSWORDS.user, client: "requestip" }),
      })
    ).json<{ token: string; expires: number }>();
    const p = await openSdkPage(browser, app.origin, [engine.ready.https, engine.ready.http], {
      width: 800,
      height: 600,
    });
    contexts.push(p.context);
    const opened = await p.run<{
      error: string | null;
      found: string[];
      layers: { title: string; url: string; drawn: boolean; count: number }[];
    }>(
      `
      try {
        sdk.esriConfig.portalUrl = args.portal;
        sdk.esriConfig.request.timeout = 20000;
        sdk.IdentityManager.registerToken({ server: args.portal + "/sharing/rest", userId: "user", token: args.token, expires: args.expires, ssl: true });
        const portal = new sdk.Portal({ url: args.portal, authMode: "immediate" });
        await portal.load();
        const found = await portal.queryItems(new sdk.PortalQueryParams({ query: '"' + args.title + '" type:"Web Map"' }));
        const item = found.results[0];
        const webmap = new sdk.WebMap({ portalItem: item });
        await webmap.load();
        const view = new sdk.MapView({ container: "view", map: webmap, center: [2.35, 48.85], zoom: 5 });
        await view.when();
        const layers = [];
        for (const layer of webmap.layers.toArray()) {
          const layerView = await view.whenLayerView(layer);
          const deadline = Date.now() + 30000;
          while (Date.now() < deadline && (view.updating || layerView.updating)) await new Promise((r) => setTimeout(r, 50));
          const count = await layerView.queryFeatureCount();
          layers.push({ title: layer.title, url: layer.url + "/" + layer.layerId, drawn: !layerView.updating && !layerView.suspended, count });
        }
        return { error: null, found: found.results.map((r) => r.id), layers };
      } catch (e) {
        return { error: String(e?.message ?? e), found: [], layers: [] };
      }
      `,
      { portal: https("/portal"), title: TITLE, token, expires },
    );
    expect(opened.error, `${opened.error} (${failedRequests(p.engineRequests).join(", ")})`).toBeNull();
    expect(opened.found).toEqual([mapId]);
    const data = await getJson(https(`${REST}/content/items/${mapId}/data`), adminToken);
    const saved = data.operationalLayers as { title: string; url: string }[];
    // The countries layer and the field sites, in the order the viewer drew them.
    expect(saved.map((l) => l.title)).toEqual(["countries", "Sites"]);
    expect(saved[1]?.url).toBe(https(`${sitesUrl}/0`));
    expect(opened.layers.map((l) => ({ title: l.title, url: l.url, drawn: l.drawn }))).toEqual(
      saved.map((l) => ({ title: l.title, url: l.url, drawn: true })),
    );
    // Every layer view holds features drawn from mapgate's answers to its queries.
    expect(opened.layers.map((l) => l.count)).toEqual([expect.any(Number), 3]);
    expect(opened.layers[0]?.count).toBeGreaterThan(0);
    expect(p.engineRequests.some((r) => r.url.startsWith(`${saved[0]?.url}/query`) && r.status === 200)).toBe(true);
    expect(p.blocked).toEqual([]);
  });
});
