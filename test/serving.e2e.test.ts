// What is published, served: the REST services directory, each service at its serviceUrl, and its content read
// by reference from folder and cloud data stores, through the real local engine — read by clients no one here
// wrote (ArcGIS REST JS, loaders.gl's I3S reader, Mapbox's vector tile decoder, maplibre-gl in Chromium).
import { appendFileSync, mkdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "@esri/arcgis-rest-request";
import { VectorTile } from "@mapbox/vector-tile";
import { PbfReader } from "pbf";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeBundle } from "#shared/caches/bundle.ts";
import { writeTileCache } from "#infra/local/demo/tile-cache.ts";
import { launchChromium } from "./helpers/browser.ts";
import { loadSceneLayer } from "./clients/i3s-loaders.ts";
import { type DemoOrganization, demoOrganization, registerFolderStore } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form, jsonCalls } from "./helpers/http.ts";
import {
  type Published,
  publish as publishService,
  share,
  startPublish as startPublishing,
} from "./helpers/publish.ts";
import { renderMaps } from "./helpers/map-render.ts";

let engine: RunningEngine;
let org: DemoOrganization;
let serverId: string;
let folderStore: string;
let cloudStore: string;
const tokens: Record<string, string> = {};
const ARTIFACTS = join(ROOT, "test-artifacts");

const rest = () => `${engine.ready.https}/portal/sharing/rest`;
/** Plain HTTP (the demo organization allows it): what a map library on this machine would use. */
const services = () => `${engine.ready.http}/arcgis/rest/services`;

async function signIn(username: string, password: string): Promise<string> {
  const res = await call(`${rest()}/generateToken`, { ca: engine.ca, body: form({ f: "json", username, password }) });
  return res.json<{ token: string }>().token;
}

const { getJson } = jsonCalls();

/** The publish operation's own answer (the job it started, or the error). */
const startPublish = (type: string, serviceName: string, path: string, store: string, folder: string) =>
  startPublishing(engine, { token: tokens.publisher ?? "", serverId, type, serviceName, path, store, folder });

/**
 * Publishes a cache as a service (through the REST operation and its job) and shares it with the organization
 * (a new item is private), as a publisher does before others use it; answers its serviceUrl.
 */
async function publish(
  type: string,
  serviceName: string,
  path: string,
  store = folderStore,
  folder = "Published",
): Promise<Published> {
  const token = tokens.publisher ?? "";
  const service = await publishService(engine, { token, serverId, type, serviceName, path, store, folder });
  expect(await share(engine, token, service.serviceItemId, { org: "true" })).toEqual({
    notSharedWith: [],
    itemId: service.serviceItemId,
  });
  return service;
}

/** The same service URL on plain HTTP (the job answers the HTTPS one). */
const overHttp = (url: string) => url.replace(engine.ready.https, engine.ready.http);

const published: Record<string, string> = {};

beforeAll(async () => {
  engine = await startEngine();
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
  org = demoOrganization(engine.dataDir);
  ({ serverId, folderStore, cloudStore } = org);
  published.scene = overHttp((await publish("SceneServer", "Buildings", "/caches/scene/Buildings3D")).serviceUrl);
  published.map = overHttp((await publish("MapServer", "Basemap", "/caches/tiles/Basemap")).serviceUrl);
  published.vector = overHttp((await publish("VectorTileServer", "Streets", "/caches/vectortiles/Streets")).serviceUrl);
  published.image = overHttp((await publish("ImageServer", "Ortho", "/caches/imagery/Ortho2024")).serviceUrl);
  published.cloudMap = overHttp(
    (await publish("MapServer", "CloudBasemap", "/caches/tiles/Basemap", cloudStore, "Cloud")).serviceUrl,
  );
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("the REST services directory", () => {
  it("lists the root's folders and the services an anonymous caller may see, exactly as ArcGIS answers", async () => {
    expect(await getJson(services())).toEqual({
      currentVersion: 10.81,
      folders: ["Cloud", "Imagery", "Published", "Staging", "Utilities", "World"],
      services: [{ name: "World_Basemap", type: "MapServer" }],
    });
  });

  it("shows members the organization's services, extensions included, and a folder's services by folder/name", async () => {
    expect(await getJson(services(), tokens.user)).toEqual({
      currentVersion: 10.81,
      folders: ["Cloud", "Imagery", "Published", "Staging", "Utilities", "World"],
      services: [
        { name: "Parcels", type: "MapServer" },
        { name: "Parcels", type: "FeatureServer" },
        { name: "World_Basemap", type: "MapServer" },
      ],
    });
    expect(await getJson(`${services()}/Published`, tokens.user)).toEqual({
      currentVersion: 10.81,
      folders: [],
      services: [
        { name: "Published/Basemap", type: "MapServer" },
        { name: "Published/Buildings", type: "SceneServer" },
        { name: "Published/Ortho", type: "ImageServer" },
        { name: "Published/Streets", type: "VectorTileServer" },
      ],
    });
    // Private services: their owner and administrators only (the same rule as the SOAP catalog).
    const utilities = (t?: string) => getJson(`${services()}/utilities`, t).then((d) => d.services);
    expect(await utilities(tokens.user)).toEqual([{ name: "Utilities/Water_Network", type: "MapServer" }]);
    expect(await utilities(tokens.publisher)).toEqual([
      { name: "Utilities/Hydrant_Inspections", type: "FeatureServer" },
      { name: "Utilities/Water_Network", type: "MapServer" },
    ]);
    expect(await utilities(tokens.admin)).toEqual(await utilities(tokens.publisher));
  });

  it("answers an unknown folder with an error, pjson pretty-printed and html as a page of links", async () => {
    expect(await getJson(`${services()}/Nope`)).toEqual({
      error: { code: 404, message: "Folder not found.", details: ["Folder 'Nope' does not exist."] },
    });
    const pjson = await fetch(`${services()}?f=pjson`).then((r) => r.text());
    expect(pjson).toContain('\n  "currentVersion": 10.81');
    const html = await fetch(`${services()}/Published?f=html&token=${tokens.user}`).then((r) => r.text());
    expect(html).toContain('href="/arcgis/rest/services/Published/Streets/VectorTileServer?f=html"');
  });

  it("is a page a person can browse in a real browser: folders, then a service, then its tiles", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
      await page.goto(`${services()}?f=html`);
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Folder: /");
      await page.getByRole("link", { name: "Imagery", exact: true }).click();
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Folder: Imagery");
      await page.getByRole("link", { name: "Imagery/Ortho_2024 (ImageServer)" }).click();
      expect(page.url()).toBe(`${services()}/Imagery/Ortho_2024/ImageServer?f=html`);
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Imagery/Ortho_2024 (ImageServer)");
      expect(await page.locator("body").textContent()).toContain("esriImageServiceDataTypeRGB");
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, "services-directory.png") });
      const tile = await page.goto(`${services()}/Imagery/Ortho_2024/ImageServer/tile/0/0/0`);
      expect(tile?.headers()["content-type"]).toBe("image/jpeg");
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("agrees with the SOAP catalog (one source of truth)", async () => {
    const body = `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><t:GetServiceDescriptionsEx xmlns:t="http://www.esri.com/schemas/ArcGIS/10.8"><FolderName>Published</FolderName></t:GetServiceDescriptionsEx></s:Body></s:Envelope>`;
    const soap = await call(`${engine.ready.https}/arcgis/services?token=${tokens.user}`, {
      ca: engine.ca,
      body,
      headers: { "content-type": "text/xml" },
    });
    const names = [...soap.text.matchAll(/<Name>([^<]+)<\/Name><Type>([^<]+)<\/Type>/g)].map((m) => ({
      name: m[1],
      type: m[2],
    }));
    expect(names).toEqual((await getJson(`${services()}/Published`, tokens.user)).services);
  });
});

describe("each published service at its serviceUrl", () => {
  it("is read by ArcGIS REST JS: every service JSON", async () => {
    const read = (url: string) => request(url, { params: { token: tokens.user }, httpMethod: "GET" });
    const map = await read(published.map ?? "");
    expect(map).toMatchObject({
      singleFusedMapCache: true,
      capabilities: "Map,TilesOnly",
      spatialReference: { wkid: 102100, latestWkid: 3857 },
      tileInfo: {
        rows: 256,
        cols: 256,
        format: "PNG",
        origin: { x: -20037508.342787, y: 20037508.342787 },
        lods: [
          { level: 0, resolution: 156543.03392800014, scale: 591657527.591555 },
          expect.anything(),
          expect.anything(),
        ],
      },
      fullExtent: { xmin: -20037508.342787, spatialReference: { wkid: 102100 } },
      initialExtent: expect.any(Object),
    });
    expect(await read(published.image ?? "")).toMatchObject({
      singleFusedMapCache: true,
      serviceDataType: "esriImageServiceDataTypeRGB",
      tileInfo: { format: "JPEG" },
    });
    expect(await read(published.vector ?? "")).toMatchObject({
      tiles: ["tile/{z}/{y}/{x}.pbf"],
      defaultStyles: "resources/styles",
      tileInfo: { format: "pbf" },
    });
    const scene = await read(published.scene ?? "");
    expect(scene).toMatchObject({ serviceName: "Buildings", layers: [{ id: 0, href: "./layers/0" }] });
    expect(await read(published.cloudMap ?? "")).toMatchObject({ singleFusedMapCache: true });
  });

  it("serves map tiles from Compact Cache V2 bundles (folder and cloud stores alike), with ETag, caching and 304", async () => {
    for (const base of [published.map, published.cloudMap]) {
      const url = `${base}/tile/1/0/1?token=${tokens.user}`;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      expect(res.headers.get("cache-control")).toBe("private, max-age=3600");
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      const etag = res.headers.get("etag") ?? "";
      expect(etag).toMatch(/^"[\w-]{27}"$/);
      const png = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
      expect([png.width, png.height]).toEqual([256, 256]);
      const again = await fetch(url, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
    }
    // The two stores hold the same cache: the same tile, byte for byte.
    const a = await fetch(`${published.map}/tile/2/1/2?token=${tokens.user}`).then((r) => r.arrayBuffer());
    const b = await fetch(`${published.cloudMap}/tile/2/1/2?token=${tokens.user}`).then((r) => r.arrayBuffer());
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  it("answers a missing tile as ArcGIS does (an empty 404, no error page) and refuses malformed addresses", async () => {
    for (const address of ["9/0/0", "1/5/5", "2/99999999/0", "30/2147483647/2147483647", "1/0/99999999999999"]) {
      const res = await fetch(`${published.image}/tile/${address}?token=${tokens.user}`);
      expect([address, res.status]).toEqual([address, 404]);
      expect(await res.text()).toBe("");
    }
    expect(await getJson(`${published.map}/tile/1/x/0`, tokens.user)).toMatchObject({ error: { code: 400 } });
    expect(await getJson(`${published.map}/tile/-1/0/0`, tokens.user)).toMatchObject({ error: { code: 400 } });
  });

  it("answers a map or image service's dynamic operations with ArcGIS's envelope: not supported (tiles only)", async () => {
    const unsupported = (type: string, operation: string) => ({
      error: {
        code: 400,
        message: "Requested operation is not supported by this service.",
        details: [
          "The requested capability is not supported.",
          `This ${type} serves the tiles of its cache only (tile/<level>/<row>/<column>), not '${operation}'.`,
        ],
      },
    });
    const bbox = "bbox=-180,-90,180,90&size=256,256";
    for (const operation of ["export", "legend", "identify", "find"]) {
      const url = `${published.map}/${operation}?${bbox}&geometry=0,0&tolerance=1&imageDisplay=256,256,96&mapExtent=-180,-90,180,90`;
      const res = await fetch(`${url}&f=json&token=${tokens.user}`);
      expect([operation, res.status]).toEqual([operation, 200]);
      expect(await res.json()).toEqual(unsupported("MapServer", operation));
    }
    expect(await getJson(`${published.image}/exportImage?${bbox}`, tokens.user)).toEqual(
      unsupported("ImageServer", "exportImage"),
    );
    // Without f, as ArcGIS: a page saying so (never an empty body).
    const page = await fetch(`${published.map}/export?${bbox}&token=${tokens.user}`);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain("Requested operation is not supported by this service.");
  });

  it("serves vector tiles that Mapbox's decoder reads, and a style whose sources point back at the service", async () => {
    const res = await fetch(`${published.vector}/tile/1/0/1.pbf?token=${tokens.user}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
    const tile = new VectorTile(new PbfReader(new Uint8Array(await res.arrayBuffer())));
    expect(Object.keys(tile.layers).length).toBeGreaterThan(0);
    const style = (await fetch(`${published.vector}/resources/styles/root.json?token=${tokens.user}`).then((r) =>
      r.json(),
    )) as { sources: Record<string, { tiles?: string[]; url?: string }>; sprite: string; glyphs: string };
    const source = Object.values(style.sources)[0];
    expect(source?.tiles?.[0]).toBe(`${published.vector}/tile/{z}/{y}/{x}.pbf?token=${tokens.user}`);
    // ArcGIS clients read the service's extent and tiling scheme from the source's url: the service JSON.
    expect(source?.url).toBe(`${published.vector}?f=json&token=${tokens.user}`);
    const described = (await fetch(source?.url ?? "").then((r) => r.json())) as Record<string, unknown>;
    expect(described).toMatchObject({ fullExtent: { xmin: expect.any(Number) }, tileInfo: expect.any(Object) });
    expect(style.sprite.startsWith(`${published.vector}/resources/sprites/sprite`)).toBe(true);
    const sprite = await fetch(`${published.vector}/resources/sprites/sprite.json?token=${tokens.user}`);
    expect(sprite.status).toBe(200);
  });

  it("serves the scene layer that loaders.gl's I3S reader loads, with a node's geometry", async () => {
    const layer = await loadSceneLayer(`${published.scene}/layers/0`, tokens.user);
    expect(layer).toMatchObject({
      layerType: "3DObject",
      nodeCount: 3,
      firstNodeVertexCount: 90,
      featureIds: [1, 2, 3],
      firstFeature: { OBJECTID: "1", NAME: "Aile Richelieu", HEIGHT: "28" },
    });
    expect(layer.requested.map((u) => new URL(u).pathname.replace(/^.*\/SceneServer\//, ""))).toEqual([
      "layers/0",
      "layers/0/nodepages/0",
      "layers/0/nodes/1/geometries/0",
      "layers/0/nodes/1/attributes/f_0/0",
      "layers/0/nodes/1/attributes/f_1/0",
      "layers/0/nodes/1/attributes/f_2/0",
    ]);
  });

  it("passes stored gzip through to clients that take it, and inflates it for those that do not", async () => {
    const url = `${published.scene}/layers/0/nodepages/0?token=${tokens.user}`;
    const gz = await call(url, { headers: { "accept-encoding": "gzip" } });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    const plain = await call(url, { headers: { "accept-encoding": "identity" } });
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(plain.text)).toMatchObject({ nodes: expect.any(Array) });
  });

  it("renders the map-tile and vector-tile services in a real map (maplibre-gl in headless Chromium)", async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    // The browser reaches the engine on 127.0.0.1: a token bound to that address, as a web app would get one.
    const browserToken = await call(`${rest()}/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: "user", password: PASSWORDS.user, client: "ip", ip: "127.0.0.1" }),
    }).then((r) => r.json<{ token: string }>().token);
    const style = (await fetch(`${published.vector}/resources/styles/root.json?token=${browserToken}`).then((r) =>
      r.json(),
    )) as object;
    const results = await renderMaps({
      artifactsDir: ARTIFACTS,
      styles: [
        {
          name: "map-tile-service",
          style: {
            version: 8,
            sources: {
              t: { type: "raster", tiles: [`${published.map}/tile/{z}/{y}/{x}?token=${browserToken}`], tileSize: 256 },
            },
            layers: [
              { id: "bg", type: "background", paint: { "background-color": "#ffffff" } },
              { id: "t", type: "raster", source: "t" },
            ],
          },
        },
        { name: "vector-tile-service", style },
      ],
    });
    for (const r of results) {
      expect([r.name, r.errors]).toEqual([r.name, []]);
      expect(r.nonBackgroundPixels, r.name).toBeGreaterThan(1000);
    }
  });
});

describe("who may read a service", () => {
  it("asks anonymous callers for a token, and hides services from those who may not see them", async () => {
    expect(await getJson(published.map ?? "")).toMatchObject({ error: { code: 499 } });
    expect((await fetch(`${published.map}/tile/1/0/1`)).status).toBe(200); // an error envelope, not a tile
    expect(await fetch(`${published.map}/tile/1/0/1`).then((r) => r.json())).toMatchObject({ error: { code: 499 } });
    // The demo's public basemap serves anyone, with caching a CDN may share.
    const open = await fetch(`${services()}/World_Basemap/MapServer/tile/0/0/0`);
    expect(open.headers.get("cache-control")).toBe("public, max-age=3600");
    // A private service: its owner yes, another member no (as if it did not exist).
    expect(await getJson(`${services()}/Utilities/Hydrant_Inspections/FeatureServer`, tokens.publisher)).toMatchObject({
      capabilities: "Query,Create,Update",
    });
    expect(await getJson(`${services()}/Utilities/Hydrant_Inspections/FeatureServer`, tokens.user)).toEqual(
      await getJson(`${services()}/Utilities/No_Such_Service/FeatureServer`, tokens.user),
    );
  });

  it("accepts the token as a header too, as every operation does", async () => {
    const res = await fetch(`${published.map}/tile/0/0/0`, {
      headers: { "x-esri-authorization": `Bearer ${tokens.user}` },
    });
    expect(res.headers.get("content-type")).toBe("image/png");
  });
});

describe("bad input never reads outside the data store and never answers 500", () => {
  it("refuses dot segments, encoded slashes and absolute paths in service URLs", async () => {
    for (const path of [
      "/Published/../Published/Basemap/MapServer",
      "/Published/Basemap/MapServer/tile/..%2f..%2f..%2fetc/passwd",
      "/Published%2FBasemap/MapServer",
      "//etc/passwd/MapServer",
      "/Published/Streets/VectorTileServer/resources/..%2F..%2F..%2Fconf.xml",
      "/Published/Streets/VectorTileServer/resources/styles/..%2f..%2froot.json",
      "/Published/Buildings/SceneServer/layers/0/nodes/..%2F..%2F3dSceneLayer.json",
    ]) {
      const res = await call(`${services()}${path}?f=json&token=${tokens.user}`, {
        headers: { "accept-encoding": "identity" },
      });
      expect([path, res.status === 200 || res.status === 404]).toEqual([path, true]);
      expect(res.text, path).not.toMatch(/root:|"code":500/);
    }
  });

  it("refuses publishing paths that leave the store, and serves nothing a symlink points at outside it", async () => {
    const outside = join(engine.dataDir, "outside");
    const storeDir = join(engine.dataDir, "evil-store");
    mkdirSync(outside, { recursive: true });
    mkdirSync(storeDir, { recursive: true });
    await writeTileCache(join(outside, "Secret"), {
      format: "PNG",
      maxLevel: 0,
      extent: { xmin: -1e6, ymin: -1e6, xmax: 1e6, ymax: 1e6 },
      paint: "basemap",
    });
    symlinkSync(join(outside, "Secret"), join(storeDir, "Linked"));
    const store = registerFolderStore(engine.dataDir, org, "Evil", storeDir);
    for (const path of ["/Linked", "/../outside/Secret", "/Linked/../../outside/Secret"]) {
      const res = await startPublish("MapServer", `Evil_${path.length}`, path, store, "");
      expect(res.error?.code, path).toBe(400);
    }
  });

  it("answers a truncated bundle, a corrupt index and a corrupt conf.xml clearly", async () => {
    const storeDir = join(engine.dataDir, "broken-store");
    await writeTileCache(join(storeDir, "Truncated"), {
      format: "PNG",
      maxLevel: 1,
      extent: { xmin: -2e7, ymin: -2e7, xmax: 2e7, ymax: 2e7 },
      paint: "basemap",
    });
    const store = registerFolderStore(engine.dataDir, org, "Broken", storeDir);
    const url = overHttp((await publish("MapServer", "Broken", "/Truncated", store, "Broken")).serviceUrl);
    const bundle = join(storeDir, "Truncated/_alllayers/L01/R0000C0000.bundle");
    // Cut the file in the middle of its tiles: the last tile's record now points past the end.
    const size = readFileSync(bundle).length;
    truncateSync(bundle, size - 100);
    const cut = await fetch(`${url}/tile/1/1/1?token=${tokens.user}`);
    expect(cut.status).toBe(404);
    // An index record pointing far outside the file.
    const l0 = join(storeDir, "Truncated/_alllayers/L00/R0000C0000.bundle");
    const bytes = readFileSync(l0);
    bytes.writeBigUInt64LE((100n << 40n) | 0xff_ffff_ffn, 64);
    writeFileSync(l0, bytes);
    expect((await fetch(`${url}/tile/0/0/0?token=${tokens.user}`)).status).toBe(404);
    // A bundle that is all header: a short index.
    writeFileSync(l0, writeBundle([]).subarray(0, 80));
    expect((await fetch(`${url}/tile/0/0/0?token=${tokens.user}`)).status).toBe(404);
    // An exploded cache (one file per tile) is served too.
    await writeTileCache(join(storeDir, "Exploded"), {
      format: "PNG",
      maxLevel: 1,
      extent: { xmin: -2e7, ymin: -2e7, xmax: 2e7, ymax: 2e7 },
      paint: "basemap",
      storage: "exploded",
    });
    const exploded = overHttp((await publish("MapServer", "Exploded", "/Exploded", store, "Broken")).serviceUrl);
    const tile = await fetch(`${exploded}/tile/1/1/0?token=${tokens.user}`);
    expect([tile.status, tile.headers.get("content-type")]).toEqual([200, "image/png"]);
    expect((await fetch(`${exploded}/tile/1/2/0?token=${tokens.user}`)).status).toBe(404);
    // Still serving the tiles that are whole.
    expect((await fetch(`${url}/tile/1/0/0?token=${tokens.user}`)).status).toBe(200);
    // A cache whose conf.xml is not XML is refused at publishing, with the reason.
    await writeTileCache(join(storeDir, "BadConf"), {
      format: "PNG",
      maxLevel: 0,
      extent: { xmin: -1e6, ymin: -1e6, xmax: 1e6, ymax: 1e6 },
      paint: "basemap",
    });
    appendFileSync(join(storeDir, "BadConf/conf.xml"), "<unclosed");
    const refused = await startPublish("MapServer", "BadConf", "/BadConf", store, "");
    expect(refused.error?.details).toEqual([
      "The cache at '/BadConf' cannot be served: conf.xml is not well-formed XML.",
    ]);
  });
});

describe("describe lists what is really in the store", () => {
  it("recognises each kind of cache by its own files, one level at a time, in folder and cloud stores", async () => {
    const describe = async (store: string, path: string) => {
      const started = await call(`${rest()}/portals/self/datastores/describe`, {
        ca: engine.ca,
        body: form({
          f: "json",
          token: tokens.publisher ?? "",
          datastoreId: store,
          serverId,
          path,
          type: path === "/" ? "datastore" : "folder",
        }),
      }).then((r) => r.json<{ jobId: string; key: string }>());
      for (let i = 0; i < 200; i++) {
        const job = await call(
          `${rest()}/portals/self/jobs/${started.jobId}?f=json&key=${encodeURIComponent(started.key)}&token=${tokens.publisher}`,
          { ca: engine.ca },
        ).then((r) =>
          r.json<{ status: string; result: { children: { name: string; type: string; path: string }[] } }>(),
        );
        if (job.status !== "processing") return job.result.children.map((c) => `${c.type} ${c.path}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error("describe still processing");
    };
    for (const store of [folderStore, cloudStore]) {
      expect(await describe(store, "/caches")).toEqual([
        "folder /caches/imagery",
        "folder /caches/scene",
        "folder /caches/tiles",
        "folder /caches/vectortiles",
      ]);
      expect(await describe(store, "/caches/tiles")).toEqual(["tileCache /caches/tiles/Basemap"]);
      expect(await describe(store, "/caches/imagery")).toEqual(["imageCache /caches/imagery/Ortho2024"]);
      expect(await describe(store, "/caches/vectortiles")).toEqual(["vectorTileCache /caches/vectortiles/Streets"]);
      expect(await describe(store, "/caches/scene")).toEqual(["sceneLayerCache /caches/scene/Buildings3D"]);
    }
  });
});
