// The default basemap an administrator names (portals/self/update: defaultBasemap, basemapGalleryGroupQuery,
// useVectorBasemaps), on the local engine with the demo data: only administrators change it, every bad basemap is
// refused naming its fault, portals/self answers it, mapgate's viewer saves new maps over it and opens them drawing
// it, and the ArcGIS Maps SDK (unchanged, in Chromium) gives a new WebMap the portal's default basemap and saves it.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { demoOrganization } from "./helpers/admin.ts";
import { startEngineAndBrowser, stopBrowserAndEngine, viewerSays } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine, signInMembers } from "./helpers/engine.ts";
import { call, form, jsonCalls } from "./helpers/http.ts";
import {
  failedRequests,
  openSdkPage,
  removeSdkBundle,
  SDK_CHROMIUM_ARGS,
  type SdkServer,
  sdkBundle,
  startSdkServer,
} from "./helpers/maps-sdk.ts";
import { publish, share } from "./helpers/publish.ts";

vi.setConfig({ testTimeout: 120_000 });

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
let browser: Browser;
let app: SdkServer;
const contexts: BrowserContext[] = [];
let tokens: { admin: string; publisher: string; user: string };
let streetsPath = "";
let privatePath = "";
let countriesPath = "";
const { getJson, postJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${path}`;
const update = (token: string, fields: Record<string, string>) =>
  postJson(https(`${REST}/portals/self/update`), token, fields);
const errorOf = (answer: Record<string, unknown>) =>
  answer.error as { code: number; message: string; details: string[] } | undefined;

beforeAll(async () => {
  const [started, bundle] = await Promise.all([startEngineAndBrowser(SDK_CHROMIUM_ARGS), sdkBundle()]);
  ({ engine, browser } = started);
  app = await startSdkServer(bundle);
  tokens = await signInMembers(https(REST), engine.ca);
  const org = demoOrganization(engine.dataDir);
  // The demo's vector tiles published as the organization's street basemap, and a private tile service.
  const streets = await publish(engine, {
    token: tokens.admin,
    serverId: org.serverId,
    store: org.folderStore,
    type: "VectorTileServer",
    serviceName: "Streets_Basemap",
    path: "/caches/vectortiles/Streets",
  });
  await share(engine, tokens.admin, streets.serviceItemId, { org: "true" });
  streetsPath = new URL(streets.serviceUrl).pathname;
  const hidden = await publish(engine, {
    token: tokens.publisher,
    serverId: org.serverId,
    store: org.folderStore,
    type: "MapServer",
    serviceName: "Private_Tiles",
    path: "/caches/tiles/Basemap",
  });
  privatePath = new URL(hidden.serviceUrl).pathname;
  const world = (await getJson(https("/arcgis/rest/services/World"))) as { services: { name: string }[] };
  countriesPath = `/arcgis/rest/services/${world.services.find((s) => s.name.startsWith("World/countries"))?.name}/FeatureServer`;
}, 180_000);

afterAll(async () => {
  await stopBrowserAndEngine(contexts, browser, engine);
  await app?.close();
  removeSdkBundle();
}, 60_000);

const STREETS = () => ({
  title: "Streets",
  baseMapLayers: [
    { id: "streets", layerType: "VectorTileLayer", url: https(streetsPath), opacity: 1, visibility: true },
  ],
});

describe.sequential("the organization's default basemap", () => {
  it("answers the demo's tiled basemap until an administrator names another", async () => {
    const self = await getJson(https(`${REST}/portals/self`), tokens.user);
    expect(self).toMatchObject({
      useVectorBasemaps: false,
      basemapGalleryGroupQuery: `title:"Basemaps" AND orgid:${String(self.id)}`,
      defaultBasemap: {
        title: "World Basemap",
        baseMapLayers: [
          { layerType: "ArcGISTiledMapServiceLayer", url: https("/arcgis/rest/services/World_Basemap/MapServer") },
        ],
      },
    });
  });

  it("lets administrators alone change it, and refuses each bad basemap naming its fault, changing nothing", async () => {
    for (const token of [tokens.publisher, tokens.user]) {
      expect(errorOf(await update(token, { defaultBasemap: JSON.stringify(STREETS()) }))?.code).toBe(403);
    }
    const anonymous = await call(https(`${REST}/portals/self/update`), {
      ca: engine.ca,
      body: form({ f: "json", useVectorBasemaps: "true" }),
    });
    expect(errorOf(anonymous.json())?.code).toBe(499);
    const layer = (fields: Record<string, unknown>) =>
      JSON.stringify({ title: "B", baseMapLayers: [{ layerType: "ArcGISTiledMapServiceLayer", ...fields }] });
    const cases: [Record<string, string>, string[]][] = [
      [
        {},
        [
          "Specify what to change: 'allowedOrigins' or 'defaultBasemap', 'basemapGalleryGroupQuery', 'useVectorBasemaps'.",
        ],
      ],
      [{ defaultBasemap: "{" }, ["'defaultBasemap' is not JSON."]],
      [{ defaultBasemap: "[]" }, ["'defaultBasemap' must be an object with 'title' and 'baseMapLayers'."]],
      [
        { defaultBasemap: JSON.stringify({ title: "", baseMapLayers: [] }) },
        [
          "'defaultBasemap.title' must be a text of 1 to 256 characters.",
          "'defaultBasemap.baseMapLayers' must be an array of 1 to 8 layers.",
        ],
      ],
      [
        {
          defaultBasemap: JSON.stringify({
            title: "B",
            baseMapLayers: [{ layerType: "ArcGISFeatureLayer", url: https(countriesPath) }],
          }),
        },
        [
          "'defaultBasemap.baseMapLayers[0].layerType' must be one of ArcGISTiledMapServiceLayer, ArcGISTiledImageServiceLayer, VectorTileLayer.",
        ],
      ],
      [
        { defaultBasemap: layer({}) },
        ["'defaultBasemap.baseMapLayers[0].url' must be the URL of the layer's service."],
      ],
      [
        { defaultBasemap: layer({ url: "http://tiles.example.test/arcgis/rest/services/X/MapServer" }) },
        ["'defaultBasemap.baseMapLayers[0].url' must be an https URL, or a service of this site."],
      ],
      [
        { defaultBasemap: layer({ url: https("/arcgis/rest/services/Nothing/MapServer"), opacity: 2 }) },
        [
          "'defaultBasemap.baseMapLayers[0].opacity' must be a number from 0 to 1.",
          "'defaultBasemap.baseMapLayers[0].url' names a service that does not exist.",
        ],
      ],
      [
        { defaultBasemap: layer({ url: https(countriesPath) }) },
        ["'defaultBasemap.baseMapLayers[0].url' names a FeatureServer: this layer type draws a MapServer."],
      ],
      [
        { defaultBasemap: layer({ url: https(privatePath) }) },
        [
          "'defaultBasemap.baseMapLayers[0].url' names a service not shared with the organization: its members' maps could not draw it.",
        ],
      ],
      [
        { defaultBasemap: layer({ url: "/arcgis/rest/services/Parcels/MapServer" }) },
        ["'defaultBasemap.baseMapLayers[0].url' names a service that is listed only: it has no tiles to draw."],
      ],
      [
        { defaultBasemap: layer({ url: https(`${streetsPath}/tile/0/0/0.pbf`) }) },
        [
          "'defaultBasemap.baseMapLayers[0].url' is not the URL of a service of this site (…/rest/services/[<folder>/]<name>/MapServer).",
        ],
      ],
      [
        { basemapGalleryGroupQuery: " " },
        ["'basemapGalleryGroupQuery' must be a search query of 1 to 1024 characters."],
      ],
      [{ useVectorBasemaps: "maybe" }, ["'useVectorBasemaps' must be true or false."]],
      [{ defaultBasemap: "x".repeat(16_385) }, ["'defaultBasemap' is longer than 16384 characters."]],
    ];
    for (const [fields, details] of cases) {
      expect(errorOf(await update(tokens.admin, fields)), JSON.stringify(fields).slice(0, 200)).toEqual({
        code: 400,
        message: "Unable to update the organization.",
        details,
      });
    }
    expect((await getJson(https(`${REST}/portals/self`), tokens.user)).defaultBasemap).toMatchObject({
      title: "World Basemap",
    });
  });

  it("takes an administrator's vector basemap (by URL or path) and answers it in portals/self", async () => {
    const set = await update(tokens.admin, {
      defaultBasemap: JSON.stringify({
        title: "Streets",
        baseMapLayers: [
          { id: "streets", layerType: "VectorTileLayer", styleUrl: `${streetsPath}/resources/styles/root.json` },
          {
            id: "labels",
            title: "Labels elsewhere",
            layerType: "ArcGISTiledMapServiceLayer",
            url: "https://tiles.example.test/arcgis/rest/services/Labels/MapServer",
            isReference: true,
            opacity: 0.8,
          },
        ],
        ignored: "members besides these are not kept",
      }),
      basemapGalleryGroupQuery: 'title:"Street maps"',
      useVectorBasemaps: "true",
    });
    const expected = {
      basemapGalleryGroupQuery: 'title:"Street maps"',
      useVectorBasemaps: true,
      defaultBasemap: {
        title: "Streets",
        baseMapLayers: [
          {
            id: "streets",
            layerType: "VectorTileLayer",
            styleUrl: https(`${streetsPath}/resources/styles/root.json`),
            opacity: 1,
            visibility: true,
          },
          {
            id: "labels",
            title: "Labels elsewhere",
            layerType: "ArcGISTiledMapServiceLayer",
            url: "https://tiles.example.test/arcgis/rest/services/Labels/MapServer",
            opacity: 0.8,
            visibility: true,
            isReference: true,
          },
        ],
      },
    };
    expect(set).toEqual({ success: true, id: expect.any(String), ...expected });
    expect(await getJson(https(`${REST}/portals/self`), tokens.user)).toMatchObject(expected);
    // The basemap the maps below take: the street basemap alone (nothing outside this machine is asked for).
    expect(await update(tokens.admin, { defaultBasemap: JSON.stringify(STREETS()) })).toMatchObject({ success: true });
  });

  it("mapgate's viewer saves a new map over it and draws it when the map is opened", async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 900 } });
    contexts.push(context);
    const page: Page = await context.newPage();
    await page.goto(https(`${REST}/oauth2/signin?redirect=/`));
    await page.getByLabel("Username").fill("publisher");
    await page.getByLabel("Password").fill(PASSWORDS.publisher);
    await Promise.all([page.waitForURL(https("/")), page.getByRole("button", { name: "Sign in" }).click()]);
    await page.goto(https(`/viewer/map?url=${encodeURIComponent(`${countriesPath}/0`)}`));
    expect(await viewerSays(page)).toBe("drawn");
    await page.getByLabel("Title").fill("Over the streets");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset
          .saved !== undefined,
      undefined,
      { timeout: 20_000 },
    );
    const id = (await page.locator("body").getAttribute("data-saved")) ?? "";
    const data = await getJson(https(`${REST}/content/items/${id}/data`), tokens.publisher);
    expect(data.baseMap).toEqual({
      title: "Streets",
      baseMapLayers: [
        {
          id: "streets",
          layerType: "VectorTileLayer",
          styleUrl: https(`${streetsPath}/resources/styles/root.json`),
          opacity: 1,
          visibility: true,
        },
      ],
    });
    // Opened, the map draws its basemap's vector tiles from this site under its layer.
    const tiles: string[] = [];
    page.on("response", (r) => {
      if (r.url().startsWith(https(`${streetsPath}/tile/`)) && r.status() === 200) tiles.push(r.url());
    });
    await page.goto(https(`/viewer/map?webmap=${id}`));
    expect(await viewerSays(page)).toBe("drawn");
    expect(await page.locator("#viewer-layers li[data-state=not-drawn]").count()).toBe(0);
    await expect.poll(() => tiles.length, { timeout: 20_000 }).toBeGreaterThan(0);
  });

  it("the ArcGIS Maps SDK gives a new WebMap the portal's default basemap and saves it", async () => {
    const { token, expires } = (
      await call(https(`${REST}/generateToken`), {
        ca: engine.ca,
        body: form({ f: "json", username: "publisher", password: PASSWORDS.publisher, client: "requestip" }),
      })
    ).json<{ token: string; expires: number }>();
    const p = await openSdkPage(browser, app.origin, [engine.ready.https, engine.ready.http]);
    contexts.push(p.context);
    const out = await p.run<{ error: string | null; id: string; title: string; types: string[] }>(
      `
      try {
        sdk.esriConfig.portalUrl = args.portal;
        sdk.IdentityManager.registerToken({ server: args.portal + "/sharing/rest", userId: "publisher", token: args.token, expires: args.expires, ssl: true });
        const portal = new sdk.Portal({ url: args.portal, authMode: "immediate" });
        await portal.load();
        const basemap = portal.defaultBasemap;
        await basemap.load();
        const webmap = new sdk.WebMap({ basemap, layers: [new sdk.FeatureLayer({ url: args.layer })] });
        await webmap.load();
        // As an app saves what its view shows: the view's viewpoint becomes the map's initial one.
        const view = new sdk.MapView({ container: "view", map: webmap, center: [10, 45], zoom: 3 });
        await view.when();
        await webmap.updateFrom(view, { thumbnailExcluded: true });
        const item = await webmap.saveAs(new sdk.PortalItem({ title: "SDK over the streets", portal }));
        return { error: null, id: item.id, title: basemap.title, types: basemap.baseLayers.toArray().map((l) => l.type) };
      } catch (e) {
        return { error: String(e?.message ?? e), id: "", title: "", types: [] };
      }
      `,
      { portal: https("/portal"), token, expires, layer: https(`${countriesPath}/0`) },
    );
    expect(out.error, `${out.error} (${failedRequests(p.engineRequests).join(", ")})`).toBeNull();
    expect(out).toMatchObject({ title: "Streets", types: ["vector-tile"] });
    const data = await getJson(https(`${REST}/content/items/${out.id}/data`), tokens.publisher);
    expect(data.baseMap).toMatchObject({
      title: "Streets",
      baseMapLayers: [{ layerType: "VectorTileLayer", styleUrl: https(`${streetsPath}/resources/styles/root.json`) }],
    });
    expect(p.blocked).toEqual([]);
  });
});
