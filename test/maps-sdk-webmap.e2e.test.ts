// Web maps saved and opened by the ArcGIS Maps SDK for JavaScript (@arcgis/core, unchanged) in headless Chromium,
// from an origin of its own (cross-origin to the engine, as a web app is): signed in, a WebMap over the portal's
// default basemap with the demo's countries layer is saved as a new item (`saveAs`), changed and saved again
// (`save`), then a new page opens it by its item id, finds its layers as saved and draws them in a MapView.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEngineAndBrowser } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";
import {
  failedRequests,
  openSdkPage,
  removeSdkBundle,
  SDK_CHROMIUM_ARGS,
  type SdkPage,
  type SdkServer,
  sdkBundle,
  startSdkServer,
} from "./helpers/maps-sdk.ts";

// The SDK draws with WebGL in software (SwiftShader): seconds a view, more when another test file shares the cores.
vi.setConfig({ testTimeout: 120_000 });

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
let browser: Browser;
let app: SdkServer;
let token: { token: string; expires: number };
let countriesUrl: string;
const pages: SdkPage[] = [];

const https = (path: string) => `${engine.ready.https}${path}`;

/** A page of the app, its SDK pointed at mapgate's portal and holding the publisher's token (as after sign-in). */
async function open(): Promise<SdkPage> {
  const page = await openSdkPage(browser, app.origin, [engine.ready.https, engine.ready.http], {
    width: 800,
    height: 600,
  });
  pages.push(page);
  await page.run(
    `sdk.esriConfig.portalUrl = args.portal; sdk.esriConfig.request.timeout = 20000;
     sdk.IdentityManager.registerToken({ server: args.portal + "/sharing/rest", userId: "publisher", token: args.token, expires: args.expires, ssl: true });`,
    { portal: https("/portal"), ...token },
  );
  return page;
}

beforeAll(async () => {
  const [started, bundle] = await Promise.all([startEngineAndBrowser(SDK_CHROMIUM_ARGS), sdkBundle()]);
  ({ engine, browser } = started);
  app = await startSdkServer(bundle);
  token = (
    await call(https(`${REST}/generateToken`), {
      ca: engine.ca,
      body: form({ f: "json", username: "publisher", password: PASSWORDS.publisher, client: "requestip" }),
    })
  ).json<{ token: string; expires: number }>();
  const world = await call(https("/arcgis/rest/services/World?f=json"), { ca: engine.ca });
  const countries = world
    .json<{ services: { name: string }[] }>()
    .services.find((s) => s.name.startsWith("World/countries"));
  countriesUrl = https(`/arcgis/rest/services/${countries?.name}/FeatureServer/0`);
}, 150_000);

afterAll(async () => {
  for (const p of pages) await p.context.close().catch(() => undefined);
  await browser?.close();
  await app?.close();
  await engine?.stop();
  removeSdkBundle();
}, 60_000);

describe("web maps through the SDK", () => {
  it("saves a WebMap (saveAs, then save after a change) and a new page opens it by id and draws its layers", async () => {
    const p = await open();
    const saved = await p.run<{ id: string; error: string | null; basemap: string | null }>(
      `
      try {
        const portal = new sdk.Portal({ url: args.portal });
        await portal.load();
        const layer = new sdk.FeatureLayer({ url: args.layer, title: "Countries" });
        const webmap = new sdk.WebMap({ basemap: portal.defaultBasemap, layers: [layer] });
        await webmap.load();
        // As an app saves what its view shows: the view's viewpoint becomes the map's initial one (no thumbnail: mapgate
        // keeps none yet).
        const div = document.createElement("div");
        div.style.cssText = "position:absolute;inset:0";
        document.body.appendChild(div);
        const view = new sdk.MapView({ container: div, map: webmap, center: [10, 45], zoom: 3 });
        await view.when();
        await webmap.updateFrom(view, { thumbnailExcluded: true });
        const item = await webmap.saveAs(new sdk.PortalItem({ title: "Countries from the SDK", tags: ["sdk", "test"], portal }));
        layer.opacity = 0.5;
        layer.title = "Countries, half seen";
        await webmap.save();
        return { id: item.id, error: null, basemap: webmap.basemap?.title ?? null };
      } catch (e) {
        return { id: "", error: String(e?.message ?? e) + " " + JSON.stringify(e?.details ?? null), basemap: null };
      }
      `,
      { portal: https("/portal"), layer: countriesUrl },
    );
    expect(saved.error, `${saved.error} (${failedRequests(p.engineRequests).join(", ")})`).toBeNull();
    expect(saved.basemap).toBe("World Basemap");
    expect(saved.id).toMatch(/^[0-9a-f]{32}$/);
    expect(p.blocked).toEqual([]);

    // What was saved, as a REST client reads it: a Web Map item whose data names the layer with its change.
    const item = (
      await call(https(`${REST}/content/items/${saved.id}?f=json&token=${token.token}`), { ca: engine.ca })
    ).json<{ type: string; title: string; owner: string; typeKeywords: string[] }>();
    expect(item).toMatchObject({ type: "Web Map", title: "Countries from the SDK", owner: "publisher" });
    const data = (
      await call(https(`${REST}/content/items/${saved.id}/data?f=json&token=${token.token}`), { ca: engine.ca })
    ).json<{
      operationalLayers: { url: string; opacity: number; title: string; layerType: string }[];
      baseMap: { title: string; baseMapLayers: { url: string }[] };
    }>();
    expect(data.operationalLayers).toHaveLength(1);
    expect(data.operationalLayers[0]).toMatchObject({
      url: countriesUrl,
      opacity: 0.5,
      title: "Countries, half seen",
      layerType: "ArcGISFeatureLayer",
    });
    expect(data.baseMap.title).toBe("World Basemap");
    expect(data.baseMap.baseMapLayers[0]?.url).toBe(https("/arcgis/rest/services/World_Basemap/MapServer"));

    const q = await open();
    const opened = await q.run<{
      error: string | null;
      layers: { title: string; url: string; opacity: number }[];
      count: number;
      drawn: boolean;
      basemapLayers: number;
    }>(
      `
      try {
        const webmap = new sdk.WebMap({ portalItem: { id: args.id, portal: new sdk.Portal({ url: args.portal }) } });
        await webmap.load();
        const layer = webmap.layers.getItemAt(0);
        await layer.load();
        const count = await layer.queryFeatureCount();
        const div = document.createElement("div");
        div.style.cssText = "position:absolute;inset:0";
        document.body.appendChild(div);
        const view = new sdk.MapView({ container: div, map: webmap });
        await view.when();
        const layerView = await view.whenLayerView(layer);
        const deadline = Date.now() + 20000;
        while (Date.now() < deadline && (view.updating || layerView.updating)) await new Promise((r) => setTimeout(r, 50));
        return {
          error: null,
          layers: webmap.layers.toArray().map((l) => ({ title: l.title, url: l.url + "/" + l.layerId, opacity: l.opacity })),
          count,
          drawn: !layerView.updating,
          basemapLayers: webmap.basemap.baseLayers.length,
        };
      } catch (e) {
        return { error: String(e?.message ?? e), layers: [], count: -1, drawn: false, basemapLayers: 0 };
      }
      `,
      { portal: https("/portal"), id: saved.id },
    );
    expect(opened.error, `${opened.error} (${failedRequests(q.engineRequests).join(", ")})`).toBeNull();
    expect(opened.layers).toEqual([{ title: "Countries, half seen", url: countriesUrl, opacity: 0.5 }]);
    expect(opened.count).toBeGreaterThan(100);
    expect(opened.drawn).toBe(true);
    expect(opened.basemapLayers).toBe(1);
    // The layer's features were drawn from its queries, answered by mapgate.
    expect(q.engineRequests.some((r) => r.url.startsWith(`${countriesUrl}/query`) && r.status === 200)).toBe(true);
    expect(q.blocked).toEqual([]);
  });
});
