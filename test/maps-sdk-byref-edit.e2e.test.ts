// The ArcGIS Maps SDK for JavaScript (@arcgis/core, unchanged) editing a layer published by reference from a
// PostgreSQL + PostGIS data store (a throwaway cluster on loopback) whose publisher turned editing on, in headless
// Chromium from an origin of its own: a FeatureLayer on the layer, a feature built from the layer's template added,
// another updated and one deleted by FeatureLayer.applyEdits, then queried back by the SDK, and the table read by the
// database's own client. Nothing leaves the machine.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization, registerPostgresStore } from "./helpers/admin.ts";
import { startEngineAndBrowser, stopBrowserAndEngine } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { jsonCalls, signIn } from "./helpers/http.ts";
import {
  openSdkPage,
  removeSdkBundle,
  SDK_CHROMIUM_ARGS,
  type SdkPage,
  type SdkServer,
  sdkBundle,
  startSdkServer,
} from "./helpers/maps-sdk.ts";
import { jobEnd } from "./helpers/publish.ts";
import { type Postgres, postgresBin, startPostgres } from "./helpers/postgres.ts";

// The SDK draws with WebGL in software (SwiftShader): seconds a view, more when another test file shares the cores.
vi.setConfig({ testTimeout: 120_000 });

const REST = "/portal/sharing/rest";
const WRITER = { user: "sdk_writer", password: `sdk-${Math.random().toString(36).slice(2)}` };
let engine: RunningEngine;
let browser: Browser;
let app: SdkServer;
let db: Postgres;
let token = "";
let layerUrl = "";
const pages: SdkPage[] = [];
const https = (path: string) => `${engine.ready.https}${path}`;

const suite = postgresBin() ? describe : describe.skip;

suite("the ArcGIS Maps SDK editing a layer read by reference from PostgreSQL", () => {
  beforeAll(async () => {
    const [started, bundle, cluster] = await Promise.all([
      startEngineAndBrowser(SDK_CHROMIUM_ARGS),
      sdkBundle(),
      startPostgres(),
    ]);
    ({ engine, browser } = started);
    db = cluster;
    app = await startSdkServer(bundle);
    token = await signIn(https(REST), engine.ca, "publisher", PASSWORDS.publisher);
    const { postJson } = jsonCalls(() => engine.ca);
    await db.admin.query(
      "CREATE TABLE public.museums (id serial PRIMARY KEY, name varchar(40) NOT NULL, geom geometry(Point, 4326))",
    );
    await db.admin.query(
      "INSERT INTO public.museums (name, geom) VALUES ('Louvre', ST_SetSRID(ST_MakePoint(2.3376, 48.8606), 4326)), ('Prado', ST_SetSRID(ST_MakePoint(-3.6921, 40.4138), 4326))",
    );
    await db.admin.query(`CREATE ROLE ${WRITER.user} LOGIN PASSWORD '${WRITER.password}'`);
    await db.admin.query(`GRANT USAGE ON SCHEMA public TO ${WRITER.user}`);
    await db.admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON public.museums TO ${WRITER.user}`);
    await db.admin.query(`GRANT USAGE ON SEQUENCE public.museums_id_seq TO ${WRITER.user}`);
    const org = demoOrganization(engine.dataDir);
    const store = registerPostgresStore(engine.dataDir, org, "Museums", db.uri(WRITER.user, WRITER.password));
    const started2 = await postJson(https(`${REST}/portals/self/datastores/allDatasets/publishLayers`), token, {
      datastoreId: store.datastoreId,
      serverId: org.serverId,
      serverFolder: "Museums",
    });
    expect(await jobEnd(engine, token, started2)).toMatchObject({ status: "completed", result: { published: 1 } });
    const service = https(
      `/arcgis/rest/services/Museums/public_museums_${stableItemId(store.datastoreId, "/public.museums").slice(0, 6)}/FeatureServer`,
    );
    expect(
      await postJson(`${service.replace("/rest/services/", "/rest/admin/services/")}/updateDefinition`, token, {
        updateDefinition: JSON.stringify({ capabilities: "Create,Delete,Query,Update,Editing" }),
      }),
    ).toEqual({ success: true });
    layerUrl = `${service}/0`;
  }, 180_000);

  afterAll(async () => {
    await stopBrowserAndEngine(
      pages.map((p) => p.context),
      browser,
      engine,
    );
    await app?.close();
    await db?.stop();
    removeSdkBundle();
  });

  it("adds from the layer's template, updates and deletes with FeatureLayer.applyEdits, then queries them back", async () => {
    const p = await openSdkPage(browser, app.origin, [engine.ready.https, engine.ready.http]);
    pages.push(p);
    const out = await p.run<{
      editable: boolean;
      operations: Record<string, boolean>;
      template: string;
      results: { adds: unknown[]; updates: unknown[]; deletes: unknown[] };
      found: Record<string, unknown>[];
    }>(
      `
      sdk.esriConfig.portalUrl = args.portal;
      sdk.IdentityManager.registerToken({ server: args.server, token: args.token, userId: "publisher" });
      const layer = new sdk.FeatureLayer({ url: args.url, outFields: ["*"] });
      await layer.load();
      const template = layer.templates[0];
      const added = new sdk.Graphic({
        geometry: new sdk.Point({ x: 12.4922, y: 41.8902, spatialReference: { wkid: 4326 } }),
        attributes: { ...template.prototype.attributes, name: "Colosseum" },
      });
      const updated = new sdk.Graphic({ attributes: { id: 1, name: "Musée du Louvre" } });
      const result = await layer.applyEdits({
        addFeatures: [added],
        updateFeatures: [updated],
        deleteFeatures: [{ objectId: 2 }],
      });
      const set = await layer.queryFeatures({ where: "1=1", outFields: ["*"], returnGeometry: true,
        orderByFields: ["id"], outSpatialReference: { wkid: 4326 } });
      const pick = (r) => ({ objectId: r.objectId, error: r.error });
      return {
        editable: layer.editingEnabled,
        operations: layer.capabilities.operations,
        template: template.name,
        results: {
          adds: result.addFeatureResults.map(pick),
          updates: result.updateFeatureResults.map(pick),
          deletes: result.deleteFeatureResults.map(pick),
        },
        found: set.features.map((f) => ({ ...f.attributes, x: Math.round(f.geometry.x * 1e4) / 1e4,
          y: Math.round(f.geometry.y * 1e4) / 1e4 })),
      };
      `,
      { url: layerUrl, server: https("/arcgis/rest/services"), token, portal: https("/portal") },
    );
    expect(out).toMatchObject({
      editable: true,
      operations: { supportsAdd: true, supportsUpdate: true, supportsDelete: true, supportsQuery: true },
      template: "public.museums",
      results: {
        adds: [{ objectId: 3, error: null }],
        updates: [{ objectId: 1, error: null }],
        deletes: [{ objectId: 2, error: null }],
      },
    });
    expect(out.found).toEqual([
      { id: 1, name: "Musée du Louvre", x: 2.3376, y: 48.8606 },
      { id: 3, name: "Colosseum", x: 12.4922, y: 41.8902 },
    ]);
    expect((await db.admin.query("SELECT id, name FROM public.museums ORDER BY id")).rows).toEqual([
      { id: 1, name: "Musée du Louvre" },
      { id: 3, name: "Colosseum" },
    ]);
    expect(p.blocked).toEqual([]);
  });
});
