// Hosted feature layers of every format drawn in a browser, against the real local engine: a GeoJSON of polygons, a
// zipped shapefile in UTM zone 31N and a GeoPackage of points, lines and an attribute table (files made here by GDAL's
// ogr2ogr), and a CSV whose column and title are HTML, are uploaded, published and shared with everyone as ArcGIS
// clients do. Each is then opened (a) in mapgate's own viewer at the links its item page and the README give, and
// checked drawn (its status, a click inside and outside its shapes, no failed request), and (b) in the ArcGIS Maps SDK
// for JavaScript as a FeatureLayer from its URL: its feature count, and a hitTest inside a polygon, in its hole and
// outside it, on a point and on a line, which the SDK answers from the quantized tiles it draws. Hostile names are
// shown as text wherever they reach a page. One engine, one browser (the SDK's flags: the viewer draws with them too).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { launchChromium, viewerSays } from "./helpers/browser.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody, signIn } from "./helpers/http.ts";
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
import { share } from "./helpers/publish.ts";
import { square, zipOf } from "./helpers/shapes.ts";

// The SDK draws with WebGL in software (SwiftShader): seconds a view, more when another test file shares the cores.
vi.setConfig({ testTimeout: 120_000 });

const ARTIFACTS = join(ROOT, "test-artifacts");
const REST = "/portal/sharing/rest";
const HOSTILE = "<img src=x onerror=alert(1)>";
const HOSTILE_TITLE = "<script>alert(2)</script>Sites";

let engine: RunningEngine;
let browser: Browser;
let app: SdkServer;
let token = "";
let work = "";
const https = (path: string) => `${engine.ready.https}${path}`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

/** Lakes in WGS 84, published from GeoJSON: one with a hole, one of two parts. */
const LAKES = {
  type: "FeatureCollection",
  features: [
    {
      type: "Feature",
      properties: { name: "Léman", depth: 310 },
      geometry: { type: "Polygon", coordinates: [square(6, 46, 0.5), square(6.2, 46.2, 0.1).reverse()] },
    },
    {
      type: "Feature",
      properties: { name: "Zürich", depth: 136 },
      geometry: { type: "MultiPolygon", coordinates: [[square(8.5, 47, 0.25)], [square(9, 47, 0.25)]] },
    },
  ],
};
/** Zones, published from a shapefile made from them in UTM zone 31N (EPSG:32631). */
const ZONES = {
  type: "FeatureCollection",
  features: [
    {
      type: "Feature",
      properties: { name: "Île", rank: 3 },
      geometry: { type: "Polygon", coordinates: [square(2, 48, 1), square(2.25, 48.25, 0.25).reverse()] },
    },
    {
      type: "Feature",
      properties: { name: "Sud", rank: -1 },
      geometry: { type: "Polygon", coordinates: [square(1, 43, 0.5)] },
    },
  ],
};
const STATIONS = {
  type: "FeatureCollection",
  features: [
    { type: "Feature", properties: { code: "S1" }, geometry: { type: "Point", coordinates: [5, 45] } },
    { type: "Feature", properties: { code: "S2" }, geometry: { type: "Point", coordinates: [6, 46] } },
    { type: "Feature", properties: { code: "S3" }, geometry: { type: "Point", coordinates: [7, 47] } },
  ],
};
/** Along a parallel and a meridian: straight both in degrees and in Web Mercator, so a midpoint is on the line. */
const ROUTES = {
  type: "FeatureCollection",
  features: [
    {
      type: "Feature",
      properties: { route: "R1" },
      geometry: {
        type: "LineString",
        coordinates: [
          [5, 44],
          [7, 44],
        ],
      },
    },
    {
      type: "Feature",
      properties: { route: "R2" },
      geometry: {
        type: "LineString",
        coordinates: [
          [8, 44],
          [8, 46],
        ],
      },
    },
  ],
};
const READINGS = "station,value\nS1,1.5\nS2,2.25\nS1,3\nS3,4.75\n";
const SITES = `name,${HOSTILE},latitude,longitude\nLouvre,1,48.8606,2.3376\nPrado,2,40.4138,-3.6921\n`;

interface Hosted {
  readonly serviceUrl: string;
  readonly serviceItemId: string;
}
const hosted: Record<"lakes" | "zones" | "network" | "sites", Hosted> = {} as never;

const ogr = (...args: string[]) => execFileSync("ogr2ogr", args, { cwd: work, stdio: "pipe" });

/** addItem with the file (multipart, as ArcGIS clients send it), publish, share with everyone. */
async function publishFile(
  file: string,
  bytes: Buffer | string,
  type: string,
  filetype: string,
  name: string,
  title = file,
  parameters: Record<string, string> = {},
): Promise<Hosted> {
  const { body, type: contentType } = await multipartBody(
    { f: "json", token, type, title, tags: "viewer" },
    { file: { name: file, bytes } },
  );
  const added = (
    await call(https(`${REST}/content/users/publisher/addItem`), {
      ca: engine.ca,
      body,
      headers: { "content-type": contentType },
    })
  ).json<{ id?: string }>();
  expect(added.id, JSON.stringify(added)).toBeTruthy();
  const published = (await postJson(https(`${REST}/content/users/publisher/publish`), token, {
    itemId: added.id as string,
    filetype,
    publishParameters: JSON.stringify({ name, ...parameters }),
  })) as { services?: { serviceurl: string; serviceItemId: string }[] };
  const service = published.services?.[0];
  expect(service, JSON.stringify(published)).toBeDefined();
  expect(await share(engine, token, service?.serviceItemId ?? "", { everyone: "true" })).toMatchObject({
    notSharedWith: [],
  });
  return { serviceUrl: service?.serviceurl ?? "", serviceItemId: service?.serviceItemId ?? "" };
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  work = mkdtempSync(join(tmpdir(), "viewer-hosted-"));
  writeFileSync(join(work, "lakes.geojson"), JSON.stringify(LAKES));
  writeFileSync(join(work, "zones.geojson"), JSON.stringify(ZONES));
  writeFileSync(join(work, "stations.geojson"), JSON.stringify(STATIONS));
  writeFileSync(join(work, "routes.geojson"), JSON.stringify(ROUTES));
  writeFileSync(join(work, "readings.csv"), READINGS);
  ogr("-f", "ESRI Shapefile", "-t_srs", "EPSG:32631", "-lco", "ENCODING=UTF-8", "zones.shp", "zones.geojson");
  ogr("-f", "GPKG", "-t_srs", "EPSG:3857", "-nln", "stations", "network.gpkg", "stations.geojson");
  ogr("-f", "GPKG", "-update", "-nln", "routes", "network.gpkg", "routes.geojson");
  ogr("-f", "GPKG", "-update", "-nln", "readings", "-oo", "AUTODETECT_TYPE=YES", "network.gpkg", "readings.csv");
  const [, , bundle] = await Promise.all([
    startEngine().then((e) => (engine = e)),
    launchChromium(SDK_CHROMIUM_ARGS).then((b) => (browser = b)),
    sdkBundle(),
  ]);
  app = await startSdkServer(bundle);
  token = await signIn(https(REST), engine.ca, "publisher", PASSWORDS.publisher);
  const zipped = await zipOf(
    ["shp", "shx", "dbf", "prj", "cpg"].map((ext) => ({
      name: `zones.${ext}`,
      bytes: readFileSync(join(work, `zones.${ext}`)),
    })),
  );
  hosted.lakes = await publishFile(
    "lakes.geojson",
    readFileSync(join(work, "lakes.geojson")),
    "GeoJson",
    "geojson",
    "Lakes",
  );
  hosted.zones = await publishFile("zones.zip", zipped, "Shapefile", "shapefile", "Zones");
  hosted.network = await publishFile(
    "network.gpkg",
    readFileSync(join(work, "network.gpkg")),
    "GeoPackage",
    "geoPackage",
    "Network",
  );
  hosted.sites = await publishFile("sites.csv", SITES, "CSV", "csv", "Hostile_sites", HOSTILE_TITLE);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await engine?.stop();
  removeSdkBundle();
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

/** The viewer's page, one for every test: what went wrong in it is collected, and dialogs (alert) are recorded. */
interface ViewerPage {
  readonly page: Page;
  readonly errors: string[];
  readonly dialogs: string[];
}
let viewerPage: ViewerPage | undefined;

async function theViewerPage(): Promise<ViewerPage> {
  if (viewerPage) return viewerPage;
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 800, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("requestfailed", (r) => {
    if (r.failure()?.errorText !== "net::ERR_ABORTED") errors.push(`${r.url()} ${r.failure()?.errorText}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
  });
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  viewerPage = { page, errors, dialogs };
  return viewerPage;
}

/** Opens a viewer link and waits until the page says it drew the map or could not (`data-viewer`). */
async function view(v: ViewerPage, href: string): Promise<string> {
  await v.page.goto("about:blank");
  await v.page.goto(href.startsWith("http") ? href : https(href));
  return viewerSays(v.page, 30_000);
}

/** The viewer's "View" link on an item's page, as a person finds it. */
async function itemViewLink(v: ViewerPage, itemId: string): Promise<string> {
  await v.page.goto(https(`${REST}/content/items/${itemId}?f=html`));
  const href = await v.page.getByRole("link", { name: "View", exact: true }).getAttribute("href");
  expect(href).toBeTruthy();
  return href ?? "";
}

/**
 * Clicks the viewer's map where a longitude and latitude lie, for a view given as `#zoom/latitude/longitude` (the
 * viewer follows the address's hash): Web Mercator with maplibre's 512-pixel world at zoom 0. Answers the id of the
 * feature whose attributes the page then shows ("" for none).
 */
async function clickAt(
  v: ViewerPage,
  at: { zoom: number; lat: number; lon: number },
  lon: number,
  lat: number,
): Promise<string> {
  const box = await v.page.locator("#map").boundingBox();
  if (!box) throw new Error("no map");
  const world = 512 * 2 ** at.zoom;
  const x = (l: number) => ((l + 180) / 360) * world;
  const y = (l: number) => (0.5 - Math.log(Math.tan(Math.PI / 4 + (l * Math.PI) / 360)) / (2 * Math.PI)) * world;
  await v.page.mouse.click(box.x + box.width / 2 + x(lon) - x(at.lon), box.y + box.height / 2 + y(lat) - y(at.lat));
  // The click's handler runs in the page's next tasks.
  await v.page.waitForTimeout(100);
  return (await v.page.locator("body").getAttribute("data-feature")) ?? "";
}

const README_LINK = () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const link = /`(https:\/\/localhost:8443\/viewer\/map\?url=)<the \$SITES URL>(\/0)`/.exec(readme);
  expect(link, "the README's viewer link of the hosted walk").not.toBeNull();
  return (sitesUrl: string) =>
    `${link?.[1]?.replace("https://localhost:8443", engine.ready.https)}${sitesUrl}${link?.[2]}`;
};

describe("mapgate's viewer draws each hosted layer", () => {
  it("a GeoJSON of polygons, from its item page: in place, its hole empty", async () => {
    const v = await theViewerPage();
    const href = await itemViewLink(v, hosted.lakes.serviceItemId);
    expect(href).toBe(`/viewer/map?url=${encodeURIComponent(new URL(hosted.lakes.serviceUrl).pathname)}`);
    expect(await view(v, href)).toBe("drawn");
    await expect
      .poll(() => v.page.locator("#viewer-status").textContent(), { timeout: 20_000 })
      .toBe("Lakes: 2 features.");
    const at = { zoom: 7, lat: 46.6, lon: 7.5 };
    expect(await view(v, `${href}#${at.zoom}/${at.lat}/${at.lon}`)).toBe("drawn");
    await v.page.screenshot({ path: join(ARTIFACTS, "viewer-hosted-geojson.png") });
    expect(await clickAt(v, at, 6.1, 46.1)).toBe("1");
    await expect(v.page.locator("#viewer-details td").allTextContents()).resolves.toContain("Léman");
    expect(await clickAt(v, at, 6.25, 46.25)).toBe("");
    expect(await clickAt(v, at, 9.125, 47.125)).toBe("2");
    expect(await clickAt(v, at, 7.5, 46.5)).toBe("");
    expect(v.errors).toEqual([]);
  });

  it("a zipped shapefile in UTM zone 31N, at the README's kind of link (the layer's absolute URL)", async () => {
    const v = await theViewerPage();
    const href = README_LINK()(hosted.zones.serviceUrl);
    expect(await view(v, href)).toBe("drawn");
    await expect
      .poll(() => v.page.locator("#viewer-status").textContent(), { timeout: 20_000 })
      .toBe("zones: 2 features.");
    const at = { zoom: 7, lat: 48.5, lon: 2.5 };
    expect(await view(v, `${href}#${at.zoom}/${at.lat}/${at.lon}`)).toBe("drawn");
    await expect(v.page.locator("#viewer-status").textContent()).resolves.toBe("zones: 1 feature.");
    await v.page.screenshot({ path: join(ARTIFACTS, "viewer-hosted-shapefile.png") });
    expect(await clickAt(v, at, 2.75, 48.75)).toBe("1");
    expect(await clickAt(v, at, 2.375, 48.375)).toBe("");
    expect(await clickAt(v, at, 1.5, 48.5)).toBe("");
    const south = { zoom: 7, lat: 43.25, lon: 1.25 };
    expect(await view(v, `${href}#${south.zoom}/${south.lat}/${south.lon}`)).toBe("drawn");
    expect(await clickAt(v, south, 1.25, 43.25)).toBe("2");
    expect(await clickAt(v, south, 1.25, 43.75)).toBe("");
    expect(v.errors).toEqual([]);
  });

  it("a GeoPackage of points, lines and an attribute table: the layers drawn, the table listed, not drawn", async () => {
    const v = await theViewerPage();
    const service = (await getJson(hosted.network.serviceUrl)) as {
      layers: { id: number; name: string }[];
      tables: { id: number; name: string }[];
    };
    expect(service.layers.map((l) => l.name).sort()).toEqual(["routes", "stations"]);
    expect(service.tables.map((t) => t.name)).toEqual(["readings"]);
    const href = await itemViewLink(v, hosted.network.serviceItemId);
    expect(await view(v, href)).toBe("drawn");
    const names = service.layers.map((l) => `${l.name}: ${l.name === "stations" ? 3 : 2} features`);
    await expect
      .poll(() => v.page.locator("#viewer-status").textContent(), { timeout: 20_000 })
      .toBe(`${names.join("; ")}. Not drawn (a table, without geometry): readings.`);
    const at = { zoom: 7, lat: 45, lon: 6.5 };
    expect(await view(v, `${href}#${at.zoom}/${at.lat}/${at.lon}`)).toBe("drawn");
    await v.page.screenshot({ path: join(ARTIFACTS, "viewer-hosted-geopackage.png") });
    expect(await clickAt(v, at, 6, 46)).toBe("2");
    await expect(v.page.locator("#viewer-details h2").textContent()).resolves.toBe("stations 2");
    expect(await clickAt(v, at, 6, 44)).toBe("1");
    await expect(v.page.locator("#viewer-details h2").textContent()).resolves.toBe("routes 1");
    expect(await clickAt(v, at, 6, 44.5)).toBe("");
    // Each layer at a link as the README writes them (the layer's absolute URL); the table's own link says why nothing is drawn, in words.
    for (const l of service.layers) {
      expect(await view(v, `/viewer/map?url=${hosted.network.serviceUrl}/${l.id}`), l.name).toBe("drawn");
      await expect
        .poll(() => v.page.locator("#viewer-status").textContent(), { timeout: 20_000 })
        .toBe(`${l.name}: ${l.name === "stations" ? 3 : 2} features.`);
    }
    const table = service.tables[0]?.id;
    expect(await view(v, `/viewer/map?url=${encodeURIComponent(`${hosted.network.serviceUrl}/${table}`)}`)).toBe(
      "failed",
    );
    await expect(v.page.locator("#viewer-status").textContent()).resolves.toBe(
      "A table has no geometry: there is nothing to draw on a map.",
    );
    // A service of a table only (a CSV without coordinates), from its item page: said in words, no empty map.
    const readings = await publishFile("readings.csv", READINGS, "CSV", "csv", "Readings", "Readings", {
      locationType: "none",
    });
    expect(await view(v, await itemViewLink(v, readings.serviceItemId))).toBe("failed");
    await expect(v.page.locator("#viewer-status").textContent()).resolves.toBe(
      "The feature service has tables only (Readings): they have no geometry to draw on a map.",
    );
    expect(await v.page.locator("#map").isHidden()).toBe(true);
    expect(v.errors).toEqual([]);
  });

  it("a CSV whose column and title are HTML: shown as text in the popup, the item page and the layer's page", async () => {
    const v = await theViewerPage();
    const href = await itemViewLink(v, hosted.sites.serviceItemId);
    await expect(v.page.locator("h1").textContent()).resolves.toBe(HOSTILE_TITLE);
    await expect(v.page.locator("h1 script, td img").count()).resolves.toBe(0);
    const at = { zoom: 7, lat: 48.5, lon: 2 };
    expect(await view(v, `${href}#${at.zoom}/${at.lat}/${at.lon}`)).toBe("drawn");
    await expect
      .poll(() => v.page.locator("#viewer-status").textContent(), { timeout: 20_000 })
      .toBe("Hostile_sites: 1 feature.");
    expect(await clickAt(v, at, 2.3376, 48.8606)).toBe("1");
    // The popup names each field by its alias (the column as written in the file), as text.
    await expect(v.page.locator("#viewer-details th").allTextContents()).resolves.toContain(HOSTILE);
    await expect(v.page.locator("#viewer-details h2").textContent()).resolves.toBe("Hostile_sites 1");
    await expect(v.page.locator("#viewer-details img, #viewer-details script").count()).resolves.toBe(0);
    // The layer's page lists the field with its alias, as text too.
    await v.page.goto(`${hosted.sites.serviceUrl}/0?f=html`);
    await expect(v.page.getByText(HOSTILE, { exact: true }).count()).resolves.toBeGreaterThan(0);
    await expect(v.page.locator("img").count()).resolves.toBe(0);
    expect(v.dialogs).toEqual([]);
    expect(v.errors).toEqual([]);
  });
});

/** In the page: a view in a fresh container, waited on until it and its layers have drawn. */
const VIEW_HELPERS = `
  const whenIdle = async (view, ms = 20000) => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      if (!view.updating) return true;
    }
    return false;
  };
  const container = () => {
    const div = document.createElement("div");
    div.style.cssText = "position:absolute;inset:0";
    document.body.appendChild(div);
    return div;
  };
`;

describe("the ArcGIS Maps SDK draws each hosted layer from its URL", () => {
  let p: SdkPage;
  beforeAll(async () => {
    // A small view: software WebGL draws every frame on the CPU.
    p = await openSdkPage(browser, app.origin, [engine.ready.https, engine.ready.http], { width: 400, height: 300 });
    await p.run(`sdk.esriConfig.portalUrl = args; sdk.esriConfig.request.timeout = 20000;`, https("/portal"));
  });

  /**
   * Loads each layer, counts its features and queries them (`field` of each, in object id order), then draws them all in one MapView and hit-tests each place at the zoom
   * given: the value of `field` of the feature the SDK hits there in that layer (null for none).
   */
  async function drawAndHit(
    layers: { url: string; field: string }[],
    places: { layer: number; lon: number; lat: number; zoom: number }[],
  ) {
    return p.run<{
      loaded: { geometryType: string | null; isTable: boolean; count: number; values: string[] }[];
      hits: (string | null)[];
      zooms: number[];
    }>(
      `${VIEW_HELPERS}
      const layers = args.layers.map((l) => new sdk.FeatureLayer({ url: l.url, outFields: ["*"] }));
      const loaded = [];
      for (const layer of layers) {
        await layer.load();
        const field = args.layers[loaded.length].field;
        const set = await layer.queryFeatures({ where: "1=1", outFields: [field], orderByFields: ["fid"] });
        loaded.push({ geometryType: layer.geometryType ?? null, isTable: layer.isTable, count: await layer.queryFeatureCount(),
          values: set.features.map((f) => String(f.attributes[field])) });
      }
      const lods = sdk.TileInfo.create({ spatialReference: { wkid: 3857 }, numLODs: 24 }).lods;
      const view = new sdk.MapView({ container: container(), map: new sdk.EsriMap({ layers: layers.filter((l) => !l.isTable) }),
        center: [5, 46], zoom: 5, spatialReference: { wkid: 3857 }, constraints: { lods } });
      try {
        await view.when();
        const hits = [];
        const zooms = [];
        for (const place of args.places) {
          await view.goTo({ center: [place.lon, place.lat], zoom: place.zoom }, { animate: false });
          await whenIdle(view);
          const layer = layers[place.layer];
          const screen = view.toScreen(new sdk.Point({ longitude: place.lon, latitude: place.lat }));
          const hit = await view.hitTest(screen, { include: [layer] });
          const graphic = hit.results.find((r) => r.type === "graphic")?.graphic;
          hits.push(graphic ? String(graphic.attributes?.[args.layers[place.layer].field]) : null);
          zooms.push(view.zoom);
        }
        return { loaded, hits, zooms };
      } finally {
        view.destroy();
      }
      `,
      { layers, places },
    );
  }

  it("a GeoJSON of polygons: inside a lake, in its hole, outside, and in a second part", async () => {
    const out = await drawAndHit(
      [{ url: `${hosted.lakes.serviceUrl}/0`, field: "name" }],
      [
        { layer: 0, lon: 6.1, lat: 46.1, zoom: 8 },
        { layer: 0, lon: 6.25, lat: 46.25, zoom: 8 },
        { layer: 0, lon: 7.5, lat: 46.5, zoom: 8 },
        { layer: 0, lon: 9.125, lat: 47.125, zoom: 8 },
        { layer: 0, lon: 6.45, lat: 46.45, zoom: 11 },
      ],
    );
    expect(out.loaded).toEqual([{ geometryType: "polygon", isTable: false, count: 2, values: ["Léman", "Zürich"] }]);
    expect(out.hits).toEqual(["Léman", null, null, "Zürich", "Léman"]);
    expect(out.zooms).toEqual([8, 8, 8, 8, 11]);
  });

  it("a zipped shapefile in UTM zone 31N: placed where its zones are, not shifted by the projection", async () => {
    const out = await drawAndHit(
      [{ url: `${hosted.zones.serviceUrl}/0`, field: "name" }],
      [
        { layer: 0, lon: 2.75, lat: 48.75, zoom: 8 },
        { layer: 0, lon: 2.375, lat: 48.375, zoom: 8 },
        { layer: 0, lon: 1.5, lat: 48.5, zoom: 8 },
        { layer: 0, lon: 1.25, lat: 43.25, zoom: 8 },
        // Just inside and just outside the zone's western edge, at a scale where a few hundred metres show.
        { layer: 0, lon: 2.01, lat: 48.6, zoom: 12 },
        { layer: 0, lon: 1.99, lat: 48.6, zoom: 12 },
      ],
    );
    expect(out.loaded).toEqual([{ geometryType: "polygon", isTable: false, count: 2, values: ["Île", "Sud"] }]);
    expect(out.hits).toEqual(["Île", null, null, "Sud", "Île", null]);
  });

  it("a GeoPackage: its points and lines hit, its attribute table loaded as a table and counted", async () => {
    const service = (await getJson(hosted.network.serviceUrl)) as {
      layers: { id: number; name: string }[];
      tables: { id: number; name: string }[];
    };
    const id = (name: string) => [...service.layers, ...service.tables].find((l) => l.name === name)?.id ?? Number.NaN;
    const out = await drawAndHit(
      [
        { url: `${hosted.network.serviceUrl}/${id("stations")}`, field: "code" },
        { url: `${hosted.network.serviceUrl}/${id("routes")}`, field: "route" },
        { url: `${hosted.network.serviceUrl}/${id("readings")}`, field: "station" },
      ],
      [
        { layer: 0, lon: 6, lat: 46, zoom: 9 },
        { layer: 0, lon: 6.5, lat: 46.5, zoom: 9 },
        { layer: 1, lon: 6, lat: 44, zoom: 9 },
        { layer: 1, lon: 8, lat: 45, zoom: 9 },
        { layer: 1, lon: 6, lat: 44.5, zoom: 9 },
      ],
    );
    expect(out.loaded).toEqual([
      { geometryType: "point", isTable: false, count: 3, values: ["S1", "S2", "S3"] },
      { geometryType: "polyline", isTable: false, count: 2, values: ["R1", "R2"] },
      { geometryType: null, isTable: true, count: 4, values: ["S1", "S2", "S1", "S3"] },
    ]);
    expect(out.hits).toEqual(["S2", null, "R1", "R2", null]);
  });

  it("asked mapgate nothing that failed, and nothing outside the machine", () => {
    expect(failedRequests(p.engineRequests)).toEqual([]);
    expect(p.blocked).toEqual([]);
  });
});
