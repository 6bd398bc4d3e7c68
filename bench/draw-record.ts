// Records the queries the ArcGIS Maps SDK for JavaScript (@arcgis/core, unchanged, in headless Chromium) makes to
// draw the demo's two feature layers in a MapView, for the draw-path figures (bench/draw.ts) to replay: `countries`
// (polygons, coloured by name) and `places` (points, one symbol), each at a world view and at a city view over
// Paris. Each view is drawn in a fresh browser context (nothing cached) and waited on until the SDK is idle; every
// `/query` request the view sent is kept, in the order sent, without the layer's address (the bench puts it back).
//   node bench/draw-record.ts  →  writes bench/draw-queries.json (DRAW_ONLY=<layer>-<view>-<mode>,… for some)
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { startEngineAndBrowser, stopBrowserAndEngine } from "../test/helpers/browser.ts";
import { ROOT } from "../test/helpers/engine.ts";
import { call } from "../test/helpers/http.ts";
import {
  openSdkPage,
  removeSdkBundle,
  SDK_CHROMIUM_ARGS,
  type SdkPage,
  sdkBundle,
  startSdkServer,
} from "../test/helpers/maps-sdk.ts";
import { DRAW_FIXTURE, type DrawFixture, DRAW_VIEWPORT, DRAW_VIEWS, viewName } from "./draw-views.ts";

/**
 * How long a view is given to draw. Software WebGL on a loaded machine draws a world of points slowly, and the SDK
 * keeps splitting a tile that holds more than a page into four (its drill-down): a view still drawing then keeps
 * the queries sent so far, marked so.
 */
const WAIT_MS = 150_000;

/** The SDK's feature flags as a page sets them before the SDK loads: no snapshot, every view drawn by tiles. */
const SNAPSHOT_OFF = `globalThis.esriConfig = { has: { "featurelayer-snapshot-enabled": false } };`;

/** `DRAW_ONLY=places-world-tile,places-city-tile`: record only these views (the others keep their record). */
const ONLY = process.env.DRAW_ONLY?.split(",");
const sdkVersion = (createRequire(import.meta.url)("@arcgis/core/package.json") as { version: string }).version;

const { engine, browser } = await startEngineAndBrowser(SDK_CHROMIUM_ARGS);
const app = await startSdkServer(await sdkBundle());
const pages: SdkPage[] = [];
try {
  const world = await call(`${engine.ready.https}/arcgis/rest/services/World?f=json`, { ca: engine.ca });
  const services = world.json<{ services: { name: string; type: string }[] }>().services;
  const layerUrl = (table: string) => {
    const s = services.find((x) => x.type === "FeatureServer" && x.name.startsWith(`World/${table}_`));
    if (!s) throw new Error(`no ${table} service in the World folder`);
    return `${engine.ready.https}/arcgis/rest/services/${s.name}/FeatureServer/0`;
  };
  const fixture: DrawFixture = { sdk: sdkVersion, viewport: DRAW_VIEWPORT, views: [] };
  for (const v of DRAW_VIEWS) {
    if (ONLY && !ONLY.includes(viewName(v))) continue;
    const url = layerUrl(v.layer);
    const p = await openSdkPage(browser, app.origin, [engine.ready.https], {
      ...DRAW_VIEWPORT,
      ...(v.mode === "tile" ? { init: SNAPSHOT_OFF } : {}),
    });
    pages.push(p);
    const out = await p.run<{ idle: boolean; zoom: number; error: string | null }>(
      `sdk.esriConfig.request.timeout = 120000;
      const layer = new sdk.FeatureLayer({ url: args.url, renderer: args.renderer });
      // No basemap: the view's levels are given (TileInfo's Web Mercator ones), as an app without one must.
      const lods = sdk.TileInfo.create({ spatialReference: { wkid: 3857 }, numLODs: 24 }).lods;
      const view = new sdk.MapView({ container: document.getElementById("view"), map: new sdk.EsriMap({ layers: [layer] }),
        center: args.center, zoom: args.zoom, spatialReference: { wkid: 3857 }, constraints: { lods } });
      await view.when();
      const layerView = await view.whenLayerView(layer);
      const deadline = Date.now() + args.waitMs;
      let idle = false;
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        if (!view.updating && !layerView.updating) { idle = true; break; }
      }
      return { idle, zoom: view.zoom, error: layer.loadError ? String(layer.loadError) : null };`,
      { url, center: v.center, zoom: v.zoom, renderer: v.renderer, waitMs: WAIT_MS },
    );
    const queries = p.engineRequests
      .filter((r) => r.method === "GET" && new URL(r.url).pathname === new URL(`${url}/query`).pathname)
      .map((r) => {
        if (r.status !== 200) throw new Error(`${viewName(v)}: ${r.status} ${r.url}`);
        return new URL(r.url).search;
      });
    if (out.error || out.zoom !== v.zoom) throw new Error(`${viewName(v)}: zoom ${out.zoom}, error ${out.error}`);
    if (queries.length === 0) throw new Error(`${viewName(v)}: the view made no query`);
    fixture.views.push({
      layer: v.layer,
      view: v.view,
      mode: v.mode,
      center: v.center,
      zoom: v.zoom,
      idle: out.idle,
      queries,
    });
    console.log(
      `${viewName(v)}: ${queries.length} queries${out.idle ? "" : `, still drawing after ${WAIT_MS / 1000} s`}`,
    );
    await p.context.close();
  }
  // Views recorded again replace their old record; the others are kept.
  const file = join(ROOT, DRAW_FIXTURE);
  const old = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as DrawFixture).views : [];
  const views = DRAW_VIEWS.flatMap(
    (v) => fixture.views.find((r) => viewName(r) === viewName(v)) ?? old.find((r) => viewName(r) === viewName(v)) ?? [],
  );
  writeFileSync(file, `${JSON.stringify({ ...fixture, views }, null, 2)}\n`);
} finally {
  await app.close();
  removeSdkBundle();
  await stopBrowserAndEngine(
    pages.map((p) => p.context),
    browser,
    engine,
  );
}
