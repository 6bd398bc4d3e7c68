// The draw-path bench (bench/draw.ts) measures what it says: the recorded queries (bench/draw-queries.json) are the
// ArcGIS Maps SDK's tile queries for the views named, with the parameters the SDK sends in view mode (512-pixel
// Web Mercator tiles, the tolerance of the view's level, the renderer's fields), and the floor it is compared with
// answers the same bytes as mapgate's local engine, which decode to the same features.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import decode from "arcgis-pbf-parser";
import { DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DrawFloorTile } from "../bench/draw-floor.ts";
import { drawViews, readFixture } from "../bench/draw.ts";
import { DRAW_VIEWS, viewName } from "../bench/draw-views.ts";
import { serve } from "../bench/features.ts";
import { type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call } from "./helpers/http.ts";

/** Web Mercator's half circumference, and a level's resolution for 256-pixel levels (the SDK's LODs). */
const HALF = 20037508.342789244;
const resolution = (zoom: number) => (2 * HALF) / 256 / 2 ** zoom;

const fixture = readFixture();
const views = drawViews(fixture);

interface Envelope {
  xmin: number;
  ymin: number;
  xmax: number;
  ymax: number;
}

describe("the recorded tile queries", () => {
  it("hold every tile view of the bench, recorded from the SDK in the view's size", () => {
    expect(fixture.sdk).toMatch(/^5\./);
    expect(fixture.viewport).toEqual({ width: 1280, height: 800 });
    expect(views.map((v) => viewName(v))).toEqual(DRAW_VIEWS.filter((v) => v.mode === "tile").map((v) => viewName(v)));
    for (const v of views) expect(v.tiles.length, viewName(v)).toBeGreaterThan(0);
  });

  it("are view-mode tile queries on 512-pixel tiles at the view's level, asking for the renderer's fields", () => {
    for (const v of views)
      for (const q of v.tiles) {
        const p = new URLSearchParams(q);
        const rest = ["geometry", "quantizationParameters", "returnExceededLimitFeatures"];
        // Sent with tiles of the drill-down (a tile holding more than a page is asked for again in quarters).
        expect(p.get("returnExceededLimitFeatures") ?? "false").toBe("false");
        expect(Object.fromEntries([...p].filter(([k]) => !rest.includes(k)))).toEqual({
          f: "pbf",
          resultType: "tile",
          where: "1=1",
          spatialRel: "esriSpatialRelIntersects",
          geometryType: "esriGeometryEnvelope",
          inSR: "3857",
          outSR: "3857",
          outFields: v.layer === "countries" ? "fid,name" : "fid",
          orderByFields: "fid ASC",
          maxRecordCountFactor: "4",
          // Polygons: the centroid the SDK places labels and hit areas at when the service says nothing of it.
          ...(v.layer === "countries" ? { returnCentroid: "true" } : {}),
        });
        const quantization = JSON.parse(p.get("quantizationParameters") ?? "") as {
          extent: Envelope & { spatialReference: { wkid: number } };
          mode: string;
          originPosition: string;
          tolerance: number;
        };
        expect(quantization).toMatchObject({ mode: "view", originPosition: "upperLeft" });
        expect(quantization.extent.spatialReference).toEqual({ wkid: 3857 });
        // One pixel of the view's level is a cell of the grid.
        expect(quantization.tolerance / resolution(v.zoom)).toBeCloseTo(1, 9);
        // The grid's extent is a 512-pixel tile of the level, on the level's tile grid.
        const e = quantization.extent;
        const size = 512 * quantization.tolerance;
        expect((e.xmax - e.xmin) / size).toBeCloseTo(1, 6);
        expect((e.ymax - e.ymin) / size).toBeCloseTo(1, 6);
        expect((e.xmin + HALF) / size - Math.round((e.xmin + HALF) / size)).toBeCloseTo(0, 6);
        expect((HALF - e.ymax) / size - Math.round((HALF - e.ymax) / size)).toBeCloseTo(0, 6);
        // The query envelope: the tile itself, or (where a tile held more than a page) a quarter of a quarter…
        // of it, as the SDK drills down, on the tile's grid.
        const g = JSON.parse(p.get("geometry") ?? "") as Envelope;
        const split = Math.log2(size / (g.xmax - g.xmin));
        expect(split - Math.round(split)).toBeCloseTo(0, 6);
        expect((g.ymax - g.ymin) / (g.xmax - g.xmin)).toBeCloseTo(1, 6);
        expect(g.xmin).toBeGreaterThanOrEqual(e.xmin - 1e-3);
        expect(g.xmax).toBeLessThanOrEqual(e.xmax + 1e-3);
        expect(g.ymin).toBeGreaterThanOrEqual(e.ymin - 1e-3);
        expect(g.ymax).toBeLessThanOrEqual(e.ymax + 1e-3);
      }
  });

  it("cover the view: the city view's tiles hold Paris, the world view's the whole width of the world", () => {
    const paris = [261845.7, 6250566.7]; // 2.3522°E 48.8566°N in Web Mercator
    for (const v of views) {
      const tiles = v.tiles.map((q) => JSON.parse(new URLSearchParams(q).get("geometry") ?? "") as Envelope);
      if (v.view === "city") {
        const [x, y] = paris as [number, number];
        expect(tiles.some((t) => t.xmin <= x && x <= t.xmax && t.ymin <= y && y <= t.ymax)).toBe(true);
        // A 1280×800 view at level 12 spans three by two 512-pixel tiles at least.
        expect(tiles.length).toBeGreaterThanOrEqual(6);
      } else {
        expect(Math.min(...tiles.map((t) => t.xmin))).toBeCloseTo(-HALF, 0);
        expect(Math.max(...tiles.map((t) => t.xmax))).toBeCloseTo(HALF, 0);
      }
    }
  });

  it("show the SDK's own choice for the demo's places: a count, then the whole layer in pages of 8,000", () => {
    const snapshot = fixture.views.find((v) => v.mode === "snapshot");
    const queries = (snapshot?.queries ?? []).map((q) => new URLSearchParams(q));
    expect(queries[0]?.get("returnCountOnly")).toBe("true");
    const pages = queries.slice(1);
    for (const p of pages) {
      expect(p.get("f")).toBe("pbf");
      expect(p.get("resultRecordCount")).toBe("8000");
      expect(p.get("quantizationParameters")).toBeNull();
      expect(p.get("geometry")).toBeNull();
    }
    const offsets = pages.map((p) => Number(p.get("resultOffset"))).sort((a, b) => a - b);
    expect(offsets).toEqual(Array.from({ length: Math.ceil(171_075 / 8000) }, (_, i) => i * 8000));
  });
});

describe("the floor", () => {
  let engine: RunningEngine;
  let dir: string;
  let stopFloor: (() => void) | undefined;
  let floorUrl: string;
  /** A countries tile over Paris (polygons cut by the tile) and a places tile of the city view (points). */
  const picked: DrawFloorTile[] = [];

  beforeAll(async () => {
    engine = await startEngine();
    dir = mkdtempSync(join(tmpdir(), "mapgate-draw-test-"));
    for (const layer of ["countries", "places"] as const) {
      const view = views.find((v) => v.layer === layer && v.view === "city");
      const query = view?.tiles[0];
      if (query) picked.push({ table: layer, query });
    }
    writeFileSync(join(dir, "tiles.json"), JSON.stringify(picked));
    const file = join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH);
    const floor = await serve("draw-floor.ts", [file, join(dir, "tiles.json")], "floor");
    stopFloor = () => floor.child.kill();
    floorUrl = floor.url;
  }, 120_000);

  afterAll(async () => {
    stopFloor?.();
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers two recorded tiles with mapgate's bytes, which decode to the same features", async () => {
    expect(picked.map((t) => t.table)).toEqual(["countries", "places"]);
    const world = (await call(`${engine.ready.http}/arcgis/rest/services/World?f=json`)).json<{
      services: { name: string }[];
    }>();
    for (const [i, tile] of picked.entries()) {
      const service = world.services.find((s) => s.name.startsWith(`World/${tile.table}_`))?.name;
      const mine = await call(
        `${engine.ready.http}/arcgis/rest/services/${service}/FeatureServer/0/query${tile.query}`,
      );
      const theirs = await call(`${floorUrl}/${i}`);
      expect(mine.status).toBe(200);
      expect(mine.headers["content-type"]).toBe("application/x-protobuf");
      const a = decode(new Uint8Array(mine.body)).featureCollection;
      const b = decode(new Uint8Array(theirs.body)).featureCollection;
      expect(a.features.length, tile.table).toBeGreaterThan(0);
      expect(b.features).toEqual(a.features);
      expect(Buffer.compare(theirs.body, mine.body)).toBe(0);
      // Countries are answered with their name, places with the id alone: what the renderer asked for.
      expect(Object.keys(a.features[0]?.properties ?? {})).toEqual(
        tile.table === "countries" ? ["fid", "name"] : ["fid"],
      );
    }
  }, 60_000);

  it("writes one metric line for each query its worker threads answered, as they answer them", async () => {
    // A worker sends its invocation's metric lines with its result (infra/local/function-worker.ts): none lost, none
    // doubled, whether the queries come one at a time or together.
    const world = (await call(`${engine.ready.http}/arcgis/rest/services/World?f=json`)).json<{
      services: { name: string }[];
    }>();
    const service = world.services.find((s) => s.name.startsWith("World/places_"))?.name;
    const url = `${engine.ready.http}/arcgis/rest/services/${service}/FeatureServer/0/query${picked[1]?.query}`;
    const queryLines = () =>
      engine.lines.filter((l) => l.includes('"Resource":"query"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    await new Promise((r) => setTimeout(r, 400)); // the engine writes its metric lines every 100 ms
    const before = queryLines().length;
    for (let i = 0; i < 3; i++) expect((await call(url)).status).toBe(200);
    const together = await Promise.all(Array.from({ length: 8 }, () => call(url)));
    expect(together.map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 200));
    // A refused query is a request like the others.
    const refused = await call(`${url}&quantizationParameters=nonsense`);
    expect(refused.json<{ error: { code: number } }>().error.code).toBe(400);
    await new Promise((r) => setTimeout(r, 400));
    const lines = queryLines().slice(before);
    expect(lines.filter((l) => l.Outcome === "ok")).toHaveLength(11);
    expect(new Set(lines.map((l) => l.requestId)).size).toBe(lines.length);
    const refusedLines = engine.lines.filter((l) => l.includes('"CloudWatchMetrics"') && l.includes('"code":400'));
    expect(refusedLines, engine.lines.slice(-5).join("\n")).toHaveLength(1);
  }, 60_000);
});
