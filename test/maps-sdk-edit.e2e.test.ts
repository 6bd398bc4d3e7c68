// The ArcGIS Maps SDK for JavaScript (@arcgis/core, unchanged) editing a hosted layer in headless Chromium, from an
// origin of its own: a member's token registered with the SDK's IdentityManager, a FeatureLayer on a hosted layer
// published from a CSV, a feature built from the layer's template added by FeatureLayer.applyEdits, then queried
// back by the SDK and by the layer's JSON (its last edit moved). Nothing leaves the machine.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { startEngineAndBrowser } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { call, form, jsonCalls, multipartBody, signIn } from "./helpers/http.ts";
import {
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
let token = "";
let layerUrl = "";
const pages: SdkPage[] = [];
const https = (path: string) => `${engine.ready.https}${path}`;

beforeAll(async () => {
  const [started, bundle] = await Promise.all([startEngineAndBrowser(SDK_CHROMIUM_ARGS), sdkBundle()]);
  ({ engine, browser } = started);
  app = await startSdkServer(bundle);
  token = await signIn(https(REST), engine.ca, "publisher", PASSWORDS.publisher);
  const { body, type } = await multipartBody(
    { f: "json", token },
    { file: { name: "museums.csv", bytes: "name,lat,lon\nLouvre,48.8606,2.3376\n" } },
  );
  const added = (
    await call(https(`${REST}/content/users/publisher/addItem`), {
      ca: engine.ca,
      body,
      headers: { "content-type": type },
    })
  ).json<{ id: string }>();
  const published = (
    await call(https(`${REST}/content/users/publisher/publish`), {
      ca: engine.ca,
      body: form({ f: "json", token, itemId: added.id, filetype: "csv", publishParameters: '{"name":"Sdk_Edits"}' }),
    })
  ).json<{ services: { serviceurl: string }[] }>();
  layerUrl = `${published.services[0]?.serviceurl}/0`;
}, 180_000);

afterAll(async () => {
  for (const p of pages) await p.context.close().catch(() => undefined);
  await browser?.close();
  await app?.close();
  await engine?.stop();
  removeSdkBundle();
});

it("adds a feature built from the layer's template with FeatureLayer.applyEdits, then queries it back", async () => {
  const p = await openSdkPage(browser, app.origin, [engine.ready.https, engine.ready.http]);
  pages.push(p);
  const before = ((await jsonCalls(() => engine.ca).getJson(layerUrl, token)).editingInfo as { lastEditDate: number })
    .lastEditDate;
  const out = await p.run<{
    editable: boolean;
    operations: Record<string, boolean>;
    template: string;
    added: { objectId: number; globalId: string | null; error: unknown }[];
    count: number;
    found: Record<string, unknown>[];
  }>(
    `
    sdk.esriConfig.portalUrl = args.portal;
    // Signed in as the layer's owner: the token the portal gave, for the layer's server.
    sdk.IdentityManager.registerToken({ server: args.server, token: args.token, userId: "publisher" });
    const layer = new sdk.FeatureLayer({ url: args.url, outFields: ["*"] });
    await layer.load();
    const template = layer.templates[0];
    const feature = new sdk.Graphic({
      geometry: new sdk.Point({ x: 12.4922, y: 41.8902, spatialReference: { wkid: 4326 } }),
      attributes: { ...template.prototype.attributes, name: "Colosseum" },
    });
    const result = await layer.applyEdits({ addFeatures: [feature] });
    const count = await layer.queryFeatureCount();
    const set = await layer.queryFeatures({ where: "name = 'Colosseum'", outFields: ["*"], returnGeometry: true,
      outSpatialReference: { wkid: 4326 } });
    return {
      editable: layer.editingEnabled,
      operations: layer.capabilities.operations,
      template: template.name,
      added: result.addFeatureResults.map((r) => ({ objectId: r.objectId, globalId: r.globalId, error: r.error })),
      count,
      found: set.features.map((f) => ({ ...f.attributes, x: f.geometry.x, y: f.geometry.y })),
    };
    `,
    { url: layerUrl, server: https("/arcgis/rest/services"), token, portal: https("/portal") },
  );
  expect(out).toMatchObject({
    editable: true,
    operations: { supportsAdd: true, supportsUpdate: true, supportsDelete: true, supportsQuery: true },
    template: "Sdk_Edits",
    added: [{ objectId: 2, globalId: expect.stringMatching(/^\{[0-9A-F-]{36}\}$/), error: null }],
    count: 2,
  });
  expect(out.found).toEqual([
    expect.objectContaining({ fid: 2, name: "Colosseum", Creator: "publisher", Editor: "publisher" }),
  ]);
  expect(out.found[0]?.x).toBeCloseTo(12.4922, 6);
  const after = ((await jsonCalls(() => engine.ca).getJson(layerUrl, token)).editingInfo as { lastEditDate: number })
    .lastEditDate;
  expect(after).toBeGreaterThan(before);
  expect(p.blocked).toEqual([]);
});
