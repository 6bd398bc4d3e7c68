// The home page, the health check, the short addresses, and the map viewer in a real headless Chromium against the
// local engine with the demo data: each kind of service drawn (cached tiles, vector tiles with their own style, a
// feature layer queried by extent, a scene layer's footprint) with non-blank pixels where the map is, a clicked
// feature's attributes shown, and what cannot be read said in words; anonymously and signed in with the cookie.
// Screenshots go to test-artifacts/.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clickAFeature, startEngineAndBrowser, stopBrowserAndEngine, viewerSays } from "./helpers/browser.ts";
import { type DemoOrganization, demoOrganization } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";
import { CHROMIUM_ARGS, countNonBackground } from "./helpers/map-render.ts";
import { publish, share } from "./helpers/publish.ts";

const ARTIFACTS = join(ROOT, "test-artifacts");
const REST = "/portal/sharing/rest";
/** The viewer's map background (shared/viewer/viewer.js): what an empty map shows, the sea under the basemap. */
const BACKGROUND: [number, number, number] = [0xee, 0xf1, 0xf4];
/** The basemap's land and borders (shared/viewer/viewer.js). */
const LAND: [number, number, number] = [0xdd, 0xe3, 0xd6];
const BORDER: [number, number, number] = [0xb9, 0xc1, 0xb0];
type Rgb = readonly [number, number, number];

let engine: RunningEngine;
let browser: Browser;
let org: DemoOrganization;
const contexts: BrowserContext[] = [];
/** Published here: a vector tile service shared with everyone, and a scene service left private. */
let vectorUrl: string;
let sceneUrl: string;
let sceneItemId: string;
let publisherToken: string;
/** The demo's public countries layer (bulk-published into World under a generated name). */
let countriesUrl: string;
/** The demo's public places service (points), as the directory and the home page link it: the service itself. */
let placesUrl: string;

const https = (path: string) => `${engine.ready.https}${path}`;
const viewer = (url: string) => `/viewer/map?url=${encodeURIComponent(new URL(url, engine.ready.https).pathname)}`;

async function token(username: string, password: string): Promise<string> {
  const res = await call(https(`${REST}/generateToken`), {
    ca: engine.ca,
    body: form({ f: "json", username, password }),
  });
  return res.json<{ token: string }>().token;
}

interface Seen {
  readonly page: Page;
  /** Console errors, page errors (CSP violations among them) and failed requests. */
  readonly errors: string[];
}

async function newPage(signedIn: boolean): Promise<Seen> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" && !/^Failed to load resource: .* 404/.test(m.text())) errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("requestfailed", (r) => {
    if (r.failure()?.errorText !== "net::ERR_ABORTED") errors.push(`${r.url()} ${r.failure()?.errorText}`);
  });
  if (signedIn) {
    await page.goto(https(`${REST}/oauth2/signin?redirect=/`));
    await page.getByLabel("Username").fill("publisher");
    await page.getByLabel("Password").fill(PASSWORDS.publisher);
    await Promise.all([page.waitForURL(https("/")), page.getByRole("button", { name: "Sign in" }).click()]);
  }
  return { page, errors };
}

/** Opens a viewer page and waits until it says it drew the map or could not (`data-viewer`). */
async function view(seen: Seen, url: string): Promise<string> {
  await seen.page.goto(https(viewer(url)));
  return viewerSays(seen.page);
}

/** Whether a colour lies (within a few levels) between two others: one of them, or their antialiased blend. */
function between(c: Rgb, a: Rgb, b: Rgb): boolean {
  const d: Rgb = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
  const len = d[0] ** 2 + d[1] ** 2 + d[2] ** 2;
  const along = (c[0] - a[0]) * d[0] + (c[1] - a[1]) * d[1] + (c[2] - a[2]) * d[2];
  const t = len === 0 ? 0 : Math.min(1, Math.max(0, along / len));
  return [0, 1, 2].every((i) => Math.abs((c[i] ?? 0) - ((a[i] ?? 0) + t * (d[i] ?? 0))) <= 8);
}

/** Whether a pixel is the basemap's (sea, land, border, or where they blend), not anything a service drew. */
const isBasemap = (c: Rgb) =>
  between(c, BACKGROUND, LAND) || between(c, LAND, BORDER) || between(c, BACKGROUND, BORDER);

function pixelsWhere(png: PNG, test: (c: Rgb) => boolean): number {
  let n = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    if (test([png.data[i] ?? 0, png.data[i + 1] ?? 0, png.data[i + 2] ?? 0])) n++;
  }
  return n;
}

/** The map's pixels that are neither its empty background nor its basemap, from a screenshot kept in test-artifacts. */
async function drawnPixels(page: Page, name: string): Promise<number> {
  const shot = PNG.sync.read(await page.locator("#map").screenshot());
  await page.screenshot({ path: join(ARTIFACTS, `viewer-${name}.png`), fullPage: true });
  expect(countNonBackground(shot, BACKGROUND)).toBeGreaterThanOrEqual(pixelsWhere(shot, (c) => !isBasemap(c)));
  return pixelsWhere(shot, (c) => !isBasemap(c));
}

/**
 * The colour of the map at a longitude and latitude, for a view given as `#zoom/latitude/longitude` (the
 * address's hash, which the viewer follows): Web Mercator with maplibre's 512-pixel world at zoom 0.
 */
function colourAt(png: PNG, view: { zoom: number; lat: number; lon: number }, lon: number, lat: number): Rgb {
  const world = 512 * 2 ** view.zoom;
  const x = (l: number) => ((l + 180) / 360) * world;
  const y = (l: number) => (0.5 - Math.log(Math.tan(Math.PI / 4 + (l * Math.PI) / 360)) / (2 * Math.PI)) * world;
  let dx = x(lon) - x(view.lon);
  // The map repeats the world sideways: the copy nearest the centre.
  dx -= Math.round(dx / world) * world;
  const px = Math.round(png.width / 2 + dx);
  const py = Math.round(png.height / 2 + y(lat) - y(view.lat));
  if (px < 0 || py < 0 || px >= png.width || py >= png.height) throw new Error(`${lon},${lat} is not in view`);
  const i = (py * png.width + px) * 4;
  return [png.data[i] ?? 0, png.data[i + 1] ?? 0, png.data[i + 2] ?? 0];
}

/** The countries layer's fill (#0070ff at 35 %) over land or sea: blue well above red. */
const isCountryFill = (c: Rgb) => c[2] - c[0] > 40;
const isSea = (c: Rgb) => c.every((v, i) => Math.abs(v - (BACKGROUND[i] ?? 0)) <= 8);

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ engine, browser } = await startEngineAndBrowser(CHROMIUM_ARGS));
  org = demoOrganization(engine.dataDir);
  const publisher = await token("publisher", PASSWORDS.publisher);
  publisherToken = publisher;
  const common = { token: publisher, serverId: org.serverId, store: org.folderStore };
  const [vector, scene] = await Promise.all([
    publish(engine, {
      ...common,
      type: "VectorTileServer",
      serviceName: "Viewer_Streets",
      path: "/caches/vectortiles/Streets",
    }),
    publish(engine, {
      ...common,
      type: "SceneServer",
      serviceName: "Viewer_Buildings",
      path: "/caches/scene/Buildings3D",
    }),
  ]);
  expect(await share(engine, publisher, vector.serviceItemId, { everyone: "true" })).toMatchObject({
    notSharedWith: [],
  });
  vectorUrl = vector.serviceUrl;
  sceneUrl = scene.serviceUrl;
  sceneItemId = scene.serviceItemId;
  const world = await call(https("/arcgis/rest/services/World?f=json"), { ca: engine.ca });
  const countries = world
    .json<{ services: { name: string; type: string }[] }>()
    .services.find((s) => s.name.startsWith("World/countries"));
  countriesUrl = `/arcgis/rest/services/${countries?.name}/FeatureServer/0`;
  const places = world.json<{ services: { name: string }[] }>().services.find((s) => s.name.startsWith("World/places"));
  placesUrl = `/arcgis/rest/services/${places?.name}/FeatureServer`;
}, 120_000);

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

describe("the home page, the health check and the short addresses", () => {
  it("answers / with what this is, sign-in, the directories and the services with View links", async () => {
    const res = await call(https("/"), { ca: engine.ca });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.text).toContain(`href="${REST}/oauth2/signin?redirect=%2F"`);
    expect(res.text).toContain(`href="${REST}?f=html"`);
    expect(res.text).toContain('href="/arcgis/rest/services?f=html"');
    expect(res.text).toContain(
      `href="/viewer/map?url=${encodeURIComponent("/arcgis/rest/services/World_Basemap/MapServer")}"`,
    );
    // The vector tile service is public; the scene service is not, so anonymously it is not listed.
    expect(res.text).toContain("Viewer_Streets");
    expect(res.text).not.toContain("Viewer_Buildings");
    const json = (await call(https("/?f=json"), { ca: engine.ca })).json<{
      signedIn: string | null;
      servers: { name: string; directory: string; services: { name: string; type: string; viewer: string }[] }[];
    }>();
    expect(json.signedIn).toBeNull();
    expect(json.servers.map((s) => [s.name, s.directory])).toEqual([["arcgis", "/arcgis/rest/services"]]);
    expect(json.servers[0]?.services).toContainEqual(
      expect.objectContaining({ name: "World_Basemap", type: "MapServer" }),
    );
    // Plain HTTP answers too, and says signing in needs HTTPS.
    const plain = await call(`${engine.ready.http}/`);
    expect(plain.status).toBe(200);
    expect(plain.text).toContain("plain HTTP");
  });

  it("sends /portal/home, /<server>, /<server>/rest and /viewer where they lead, and answers other paths with a 404", async () => {
    for (const [path, to] of [
      ["/portal/home", "/"],
      ["/portal", "/"],
      ["/arcgis", "/arcgis/rest/services"],
      ["/arcgis/rest", "/arcgis/rest/services"],
      ["/arcgis/rest/", "/arcgis/rest/services"],
      ["/viewer?url=%2Fa", "/viewer/map?url=%2Fa"],
    ] as const) {
      const res = await call(https(path), { ca: engine.ca });
      expect([path, res.status, res.headers.location]).toEqual([path, 303, to]);
    }
    const missing = await call(https("/nowhere/rest?f=json"), { ca: engine.ca });
    expect(missing.json()).toMatchObject({ error: { code: 404 } });
  });

  it("says the engine and its store answer at /health, as JSON and as a page", async () => {
    const json = (await call(https("/health?f=json"), { ca: engine.ca })).json();
    expect(json).toEqual({ status: "ok", engine: "answering", store: "answering", time: expect.any(String) });
    const page = await call(https("/health"), { ca: engine.ca });
    expect(page.text).toContain("Health: ok");
  });
});

describe("the viewer's files", () => {
  it("are served by mapgate itself, compressed, for any cache to keep; nothing else is", async () => {
    const lib = await call(https("/viewer/maplibre-gl.js"), { ca: engine.ca, headers: { "accept-encoding": "gzip" } });
    expect(lib.status).toBe(200);
    expect(lib.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(lib.headers["content-encoding"]).toBe("gzip");
    expect(lib.headers["cache-control"]).toBe("public, max-age=86400");
    const again = await call(https("/viewer/maplibre-gl.js"), {
      ca: engine.ca,
      headers: { "accept-encoding": "gzip", "if-none-match": String(lib.headers.etag) },
    });
    expect(again.status).toBe(304);
    const css = await call(https("/viewer/viewer.css"), { ca: engine.ca });
    expect([css.status, css.headers["content-type"], css.headers["content-encoding"]]).toEqual([
      200,
      "text/css; charset=utf-8",
      undefined,
    ]);
    for (const name of ["nothing.js", "..%2Fpackage.json", "assets.ts"]) {
      const res = await call(https(`/viewer/${name}`), { ca: engine.ca });
      expect(res.json(), name).toMatchObject({ error: { code: 404 } });
    }
    // Without a url, the page asks for one; the JSON says what a page would draw.
    expect((await call(https("/viewer/map?f=json"), { ca: engine.ca })).json()).toMatchObject({ error: { code: 400 } });
    expect(
      (
        await call(https(`${viewer("/arcgis/rest/services/World_Basemap/MapServer")}&f=json`), { ca: engine.ca })
      ).json(),
    ).toMatchObject({ kind: "tiles", tiles: { minzoom: 0, maxzoom: 2, tileSize: 256 } });
  });
});

describe("the map viewer, anonymously", () => {
  let seen: Seen;
  beforeAll(async () => {
    seen = await newPage(false);
  });

  it("draws a cached tile service, with a strict policy (own scripts, no inline script, no eval)", async () => {
    const answer = await seen.page.goto(https(viewer("/arcgis/rest/services/World_Basemap/MapServer")));
    const csp = answer?.headers()["content-security-policy"] ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-eval|unsafe-inline/);
    expect(await view(seen, "/arcgis/rest/services/World_Basemap/MapServer")).toBe("drawn");
    expect(await drawnPixels(seen.page, "tiles")).toBeGreaterThan(10_000);
  });

  it("draws a vector tile service with its own style", async () => {
    expect(await view(seen, vectorUrl)).toBe("drawn");
    expect(await drawnPixels(seen.page, "vector-tiles")).toBeGreaterThan(10_000);
  });

  it("draws a feature layer from query and shows a clicked feature's attributes", async () => {
    expect(await view(seen, countriesUrl)).toBe("drawn");
    expect(await drawnPixels(seen.page, "features")).toBeGreaterThan(10_000);
    // The status follows the drawing: on a busy machine it may say so a moment after the pixels are there.
    await expect
      .poll(() => seen.page.locator("#viewer-status").textContent(), { timeout: 20_000 })
      .toMatch(/\d+ features?/);
    // A click in the middle of the map lands on a country (the map shows the layer's whole extent).
    expect(await clickAFeature(seen.page)).toMatch(/^\d+$/);
    await expect(seen.page.locator("#viewer-details th").first().textContent()).resolves.toBeTruthy();
    await seen.page.screenshot({ path: join(ARTIFACTS, "viewer-feature-attributes.png"), fullPage: true });
  });

  it("draws polygons that cross the antimeridian in place, never as stripes across the world", async () => {
    // Natural Earth's Russia, Fiji and Antarctica cross it; drawn the long way round, each ring that steps from
    // 179.9° to -179.9° becomes a band across every longitude: the sea samples here would be filled.
    const views: {
      name: string;
      zoom: number;
      lat: number;
      lon: number;
      sea: [number, number][];
      filled: [number, number][];
    }[] = [
      {
        // Russia's band would run from 65° to 69° north, over the Norwegian Sea and Foxe Basin.
        name: "north-atlantic",
        zoom: 1.5,
        lat: 55,
        lon: -20,
        sea: [
          [0, 67],
          [-10, 67.5],
          [-30, 0],
          [-40, 30],
        ],
        filled: [
          [60, 60],
          [-100, 60],
        ],
      },
      {
        // Across the antimeridian itself: Russia and Alaska drawn, the Pacific and the Chukchi Sea empty.
        name: "pacific",
        zoom: 2,
        lat: 40,
        lon: 180,
        sea: [
          [-140, 20],
          [-160, 35],
          [170, 30],
          [180, 10],
          [-172, 69],
        ],
        filled: [
          [170, 63],
          [-150, 65],
        ],
      },
      {
        // Fiji's islands at 180°: a thin band at 16.5° south would cross the sea west of them.
        name: "fiji",
        zoom: 6,
        lat: -16.5,
        lon: 179.5,
        sea: [
          [176, -16.515],
          [176.5, -16.52],
        ],
        filled: [[178, -17.8]],
      },
      {
        // Antarctica goes round the pole: drawn down to the pole, with the Southern Ocean empty.
        name: "antarctica",
        zoom: 1,
        lat: -60,
        lon: 0,
        sea: [
          [0, -60],
          [-120, -60],
          [100, -55],
        ],
        filled: [
          [0, -80],
          [0, -84.8],
          [-120, -84.8],
          [120, -84.8],
        ],
      },
    ];
    for (const v of views) {
      await seen.page.goto("about:blank");
      await seen.page.goto(https(`${viewer(countriesUrl)}#${v.zoom}/${v.lat}/${v.lon}`));
      await seen.page.waitForFunction(
        () =>
          (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset
            .viewer === "drawn",
        undefined,
        { timeout: 20_000 },
      );
      const shot = PNG.sync.read(
        await seen.page.locator("#map").screenshot({ path: join(ARTIFACTS, `viewer-antimeridian-${v.name}.png`) }),
      );
      for (const [lon, lat] of v.sea) {
        const c = colourAt(shot, v, lon, lat);
        expect(isSea(c), `${v.name}: ${lon},${lat} is sea, drawn ${c.join(",")}`).toBe(true);
      }
      for (const [lon, lat] of v.filled) {
        const c = colourAt(shot, v, lon, lat);
        expect(isCountryFill(c), `${v.name}: ${lon},${lat} is a country, drawn ${c.join(",")}`).toBe(true);
      }
    }
  });

  it("draws a basemap under a feature layer, served by mapgate: the page asks no other site for anything", async () => {
    const asked: string[] = [];
    const listen = (r: { url(): string }) => asked.push(r.url());
    seen.page.on("request", listen);
    try {
      expect(await view(seen, placesUrl)).toBe("drawn");
    } finally {
      seen.page.off("request", listen);
    }
    const shot = PNG.sync.read(await seen.page.locator("#map").screenshot());
    await seen.page.screenshot({ path: join(ARTIFACTS, "viewer-basemap.png"), fullPage: true });
    // Land, drawn in the basemap's colour (the places are small points over it).
    const land = pixelsWhere(shot, (c) => c.every((v, i) => Math.abs(v - (LAND[i] ?? 0)) <= 4));
    expect(land).toBeGreaterThan(20_000);
    // Both the basemap's world and its reader came from this site, as everything the page asked for did.
    const own = new URL(engine.ready.https).origin;
    expect(asked.filter((u) => /\/viewer\/(world-110m\.json|topojson-client\.js)$/.test(u))).toHaveLength(2);
    expect(asked.filter((u) => !u.startsWith("data:") && !u.startsWith("blob:") && new URL(u).origin !== own)).toEqual(
      [],
    );
  });

  it("draws every layer of a feature service linked as a whole (points here)", async () => {
    expect(await view(seen, placesUrl)).toBe("drawn");
    await expect(seen.page.locator("#viewer-status").textContent()).resolves.toMatch(/^places: \d+ features/);
    expect(await drawnPixels(seen.page, "feature-service")).toBeGreaterThan(500);
  });

  it("says so in words when a layer cannot be read, and asks to sign in for a service not shared with everyone", async () => {
    const missingLayer = countriesUrl.replace(/\/0$/, "/99");
    expect(await view(seen, missingLayer)).toBe("failed");
    await expect(seen.page.locator("#viewer-status").textContent()).resolves.toMatch(/could not be read: Invalid URL$/);
    // No empty map box is left where the map would have been.
    expect(await seen.page.locator("#map").isHidden()).toBe(true);
    await seen.page.screenshot({ path: join(ARTIFACTS, "viewer-unreadable.png"), fullPage: true });
    await seen.page.goto(https(viewer(sceneUrl)));
    await expect(seen.page.locator("#viewer-status").textContent()).resolves.toMatch(/sign in to view it/);
    expect(await seen.page.getByRole("link", { name: "Sign in" }).getAttribute("href")).toContain("oauth2/signin");
    expect(await seen.page.locator("#map").count()).toBe(0);
    expect(seen.errors.filter((e) => !/\/FeatureServer\/99/.test(e))).toEqual([]);
  });
});

describe("the map viewer, signed in with the sign-in cookie", () => {
  let seen: Seen;
  beforeAll(async () => {
    seen = await newPage(true);
  });

  it("draws a private scene service's footprint for its owner", async () => {
    expect(await view(seen, sceneUrl)).toBe("drawn");
    await expect(seen.page.getByText("Signed in as publisher")).toBeTruthy();
    expect(await drawnPixels(seen.page, "scene-footprint")).toBeGreaterThan(10_000);
  });

  it("says a listed-only service has nothing to draw", async () => {
    await seen.page.goto(https(viewer("/arcgis/rest/services/Utilities/Hydrant_Inspections/FeatureServer")));
    await expect(seen.page.locator("#viewer-status").textContent()).resolves.toMatch(/listed only/);
    expect(seen.errors).toEqual([]);
  });

  it("is linked from the directory, the service page and the home page", async () => {
    await seen.page.goto(https("/arcgis/rest/services?f=html"));
    expect(await seen.page.getByRole("link", { name: "View", exact: true }).count()).toBeGreaterThan(1);
    await seen.page.goto(https(`${new URL(sceneUrl).pathname}?f=html`));
    expect(await seen.page.getByRole("link", { name: "View", exact: true }).getAttribute("href")).toBe(
      viewer(sceneUrl),
    );
    await seen.page.goto(https("/"));
    expect(await seen.page.locator(`a[href="${viewer(sceneUrl)}"]`).count()).toBe(1);
    await seen.page.screenshot({ path: join(ARTIFACTS, "home-signed-in.png"), fullPage: true });
    await seen.page.goto(https(`${REST}/content/items/${sceneItemId}?f=html`));
    expect(await seen.page.getByRole("link", { name: "View", exact: true }).getAttribute("href")).toBe(
      viewer(sceneUrl),
    );
    // getLayers lists the world store's layers, each with its map.
    const layers = await call(
      https(`${REST}/portals/self/datastores/getLayers?f=html&datastoreId=${org.worldStore}&token=${publisherToken}`),
      { ca: engine.ca },
    );
    expect(layers.text).toContain(`href="${viewer(countriesUrl.replace(/\/0$/, ""))}"`);
  });
});
