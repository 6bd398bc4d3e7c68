// Feature layers that answer, through the real engine: the demo GeoPackage bulk-published at first start, its
// layers' JSON, `query` in each output format checked against the file itself (read here with node:sqlite), and
// the clients GIS people use: GDAL, ArcGIS REST JS and an independent PBF decoder.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { demoOrganization, demoServicePath, startWithDemoSource } from "./helpers/admin.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { call, jsonCalls } from "./helpers/http.ts";

let engine: RunningEngine;
let datastoreId: string;
let source: DatabaseSync;

/** A demo layer's FeatureServer URL on the plain-HTTP loopback origin (GDAL and fetch need no certificate). */
const layerUrl = (table: string) => `${engine.ready.http}${demoServicePath(datastoreId, table)}`;

const { getJson } = jsonCalls();
const query = (table: string, params: Record<string, string>) =>
  getJson(`${layerUrl(table)}/0/query?${new URLSearchParams({ f: "json", ...params })}`);

beforeAll(async () => {
  ({ engine, datastoreId, source } = await startWithDemoSource());
});
afterAll(async () => {
  source?.close();
  await engine?.stop();
});

const count = (sql: string, ...params: (string | number)[]) =>
  Number((source.prepare(sql).get(...params) as { n: number }).n);

describe("the service and its layer", () => {
  it("FeatureServer lists its one layer; a table is listed under tables", async () => {
    const places = await getJson(`${layerUrl("places")}?f=json`);
    expect(places).toMatchObject({
      capabilities: "Query",
      maxRecordCount: 2000,
      supportedQueryFormats: "JSON, geoJSON, PBF",
      spatialReference: { wkid: 4326, latestWkid: 4326 },
      layers: [{ id: 0, name: "places", type: "Feature Layer", geometryType: "esriGeometryPoint" }],
      tables: [],
    });
    const attribution = await getJson(`${layerUrl("attribution")}?f=json`);
    expect(attribution).toMatchObject({ layers: [], tables: [{ id: 0, name: "attribution", type: "Table" }] });
    const layers = await getJson(`${layerUrl("countries")}/layers?f=json`);
    expect((layers.layers as { geometryType: string }[])[0]?.geometryType).toBe("esriGeometryPolygon");
  });

  it("the layer: fields from the table, its integer key as object id, the extent from the index", async () => {
    const layer = await getJson(`${layerUrl("places")}/0?f=json`);
    expect(layer).toMatchObject({
      id: 0,
      name: "places",
      type: "Feature Layer",
      geometryType: "esriGeometryPoint",
      objectIdField: "fid",
      uniqueIdField: { name: "fid", isSystemMaintained: true },
      displayField: "name",
      useStandardizedQueries: true,
      advancedQueryCapabilities: { supportsPagination: true, supportsOrderBy: true, supportsStatistics: true },
    });
    const fields = layer.fields as { name: string; type: string }[];
    expect(fields[0]).toMatchObject({ name: "fid", type: "esriFieldTypeOID" });
    expect(fields.map((f) => f.name)).toContain("country");
    const e = layer.extent as { xmin: number; ymax: number };
    const x = count("SELECT min(minx) AS n FROM rtree_places_geom");
    expect(e.xmin).toBeCloseTo(x, 3);
  });
});

describe("query", () => {
  it("counts, ids and a where clause, as the file holds them", async () => {
    expect(await query("places", { where: "1=1", returnCountOnly: "true" })).toEqual({
      count: count("SELECT count(*) AS n FROM places"),
    });
    expect(await query("places", { where: "country = 'FR' AND name LIKE 'Par%'", returnCountOnly: "true" })).toEqual({
      count: count("SELECT count(*) AS n FROM places WHERE country = 'FR' AND name LIKE 'Par%'"),
    });
    const ids = await query("countries", { where: "name IN ('France', 'Japan')", returnIdsOnly: "true" });
    expect(ids).toEqual({
      objectIdFieldName: "fid",
      objectIds: (
        source.prepare("SELECT fid FROM countries WHERE name IN ('France', 'Japan') ORDER BY fid").all() as {
          fid: number;
        }[]
      ).map((r) => r.fid),
    });
  });

  it("features with geometry, paged with exceededTransferLimit true exactly while more rows exist", async () => {
    const total = count("SELECT count(*) AS n FROM places WHERE country = 'IS'");
    expect(total).toBeGreaterThan(3);
    const seen: number[] = [];
    for (let offset = 0; ; offset += 3) {
      const page = await query("places", {
        where: "country = 'IS'",
        outFields: "fid,name",
        resultOffset: String(offset),
        resultRecordCount: "3",
      });
      const features = page.features as { attributes: { fid: number }; geometry: { x: number; y: number } }[];
      seen.push(...features.map((f) => f.attributes.fid));
      expect(page.exceededTransferLimit).toBe(seen.length < total);
      if (!page.exceededTransferLimit) break;
    }
    expect(seen).toEqual(
      (source.prepare("SELECT fid FROM places WHERE country = 'IS' ORDER BY fid").all() as { fid: number }[]).map(
        (r) => r.fid,
      ),
    );
    const one = await query("places", { where: `fid = ${seen[0]}`, outFields: "*" });
    const row = source.prepare("SELECT lat, lng FROM places WHERE fid = ?").get(seen[0] ?? 0) as {
      lat: number;
      lng: number;
    };
    expect((one.features as { geometry: { x: number; y: number } }[])[0]?.geometry).toEqual({
      x: row.lng,
      y: row.lat,
    });
    expect(one).toMatchObject({ objectIdFieldName: "fid", geometryType: "esriGeometryPoint" });
  });

  it("an envelope in Web Mercator narrows by the index and tests exactly", async () => {
    // Around Paris: 2.0..2.7 E, 48.6..49.1 N.
    const [x0, y0] = [222638.98, 6207260.0];
    const [x1, y1] = [300562.63, 6291850.0];
    const answer = await query("places", {
      geometry: `${x0},${y0},${x1},${y1}`,
      geometryType: "esriGeometryEnvelope",
      inSR: "102100",
      spatialRel: "esriSpatialRelIntersects",
      returnCountOnly: "true",
    });
    const lon = (x: number) => (x / 6378137) * (180 / Math.PI);
    const lat = (y: number) => (Math.atan(Math.exp(y / 6378137)) * 2 - Math.PI / 2) * (180 / Math.PI);
    expect(answer.count).toBe(
      count(
        "SELECT count(*) AS n FROM places WHERE lng BETWEEN ? AND ? AND lat BETWEEN ? AND ?",
        lon(x0),
        lon(x1),
        lat(y0),
        lat(y1),
      ),
    );
    expect(answer.count).toBeGreaterThan(10);
  });

  it("f=geojson is a FeatureCollection in WGS 84 with exceededTransferLimit in its properties", async () => {
    const res = await call(
      `${layerUrl("places")}/0/query?${new URLSearchParams({ f: "geojson", where: "country = 'IS'", outFields: "name", resultRecordCount: "2" })}`,
    );
    expect(res.headers["content-type"]).toContain("application/geo+json");
    const fc = res.json<{ type: string; features: { geometry: { type: string } }[]; properties: object }>();
    expect(fc.type).toBe("FeatureCollection");
    expect(fc.features).toHaveLength(2);
    expect(fc.features[0]?.geometry.type).toBe("Point");
    expect(fc.properties).toEqual({ exceededTransferLimit: true });
  });

  it("f=pbf decodes (arcgis-pbf-parser) to the features f=json answers, in fewer bytes", async () => {
    const params = { where: "country = 'FR'", outFields: "fid,name", orderByFields: "name DESC" };
    const json = await query("places", params);
    const res = await call(`${layerUrl("places")}/0/query?${new URLSearchParams({ ...params, f: "pbf" })}`);
    expect(res.headers["content-type"]).toBe("application/x-protobuf");
    const { default: decode } = await import("arcgis-pbf-parser");
    const decoded = decode(new Uint8Array(res.body)).featureCollection.features;
    const features = json.features as { attributes: object; geometry: { x: number; y: number } }[];
    expect(decoded.map((f) => f.properties)).toEqual(features.map((f) => f.attributes));
    // On WGS 84's default grid (1e-9 degree) a point lies within half a step of its exact value, far inside the
    // XY tolerance ArcGIS clients compare with (8.98e-9 degree).
    decoded.forEach((f, i) => {
      if (f.geometry?.type !== "Point") throw new Error("a point layer decoded to something else");
      const [x, y] = f.geometry.coordinates as [number, number];
      expect(Math.abs(x - (features[i]?.geometry.x ?? NaN))).toBeLessThanOrEqual(5e-10);
      expect(Math.abs(y - (features[i]?.geometry.y ?? NaN))).toBeLessThanOrEqual(5e-10);
    });
    // The bench measures the ratio on its own page; here, a page of names and points: well under half.
    expect(res.body.length).toBeLessThan(JSON.stringify(json).length / 2);
  });

  it("an SDK tile (resultType=tile, quantizationParameters in view mode) lands where the map draws it", async () => {
    const layer = await getJson(`${layerUrl("countries")}/0?f=json`);
    expect(layer).toMatchObject({
      supportsCoordinatesQuantization: true,
      tileMaxRecordCount: 4000,
      standardMaxRecordCount: 4000,
      advancedQueryCapabilities: { supportsQueryWithResultType: true, supportsMaxRecordCountFactor: true },
    });
    // The request FeatureLayerView2D sends for a 512-pixel tile over France, word for word but the token.
    const tile = {
      xmin: -1252344.2714243282,
      ymin: 5009377.085697312,
      xmax: 1252344.2714243282,
      ymax: 7514065.628545968,
    };
    const sr = { wkid: 102100 };
    const tolerance = (tile.xmax - tile.xmin) / 512;
    const where = "name = 'France'";
    const params = new URLSearchParams({
      f: "pbf",
      geometry: JSON.stringify({ ...tile, spatialReference: sr }),
      maxRecordCountFactor: "3",
      resultType: "tile",
      returnExceededLimitFeatures: "false",
      spatialRel: "esriSpatialRelIntersects",
      where,
      geometryType: "esriGeometryEnvelope",
      inSR: "102100",
      outFields: "fid",
      outSR: "102100",
      quantizationParameters: JSON.stringify({
        extent: { spatialReference: sr, ...tile },
        mode: "view",
        originPosition: "upperLeft",
        tolerance,
      }),
    });
    const res = await call(`${layerUrl("countries")}/0/query?${params}`);
    expect(res.headers["content-type"]).toBe("application/x-protobuf");
    const { default: decode } = await import("arcgis-pbf-parser");
    const decoded = decode(new Uint8Array(res.body));
    expect(decoded.exceededTransferLimit).toBe(false);
    const feature = decoded.featureCollection.features[0];
    if (feature?.geometry?.type !== "MultiPolygon" && feature?.geometry?.type !== "Polygon")
      throw new Error("France decoded to no polygon");
    // The decoder applied the answer's transform; the SDK reads the integers against the tile it asked for. Both
    // read the same place only if the transform is the tile's corner and the tolerance: each decoded vertex is
    // then within one tolerance of France as the full-resolution JSON answer has it.
    const exact = await query("countries", { where, outSR: "102100", outFields: "fid" });
    const rings = (exact.features as { geometry: { rings: number[][][] } }[])[0]?.geometry.rings ?? [];
    const vertices = rings.flat();
    const positions = (JSON.stringify(feature.geometry.coordinates).match(/-?[\d.e+-]+/g) ?? []).map(Number);
    expect(positions.length / 2).toBeGreaterThan(50);
    expect(positions.length / 2).toBeLessThan(vertices.length);
    for (let i = 0; i < positions.length; i += 2) {
      const [x = NaN, y = NaN] = [positions[i], positions[i + 1]];
      // As the SDK reads a pixel: from the tile's upper left.
      const px = Math.round((x - tile.xmin) / tolerance);
      const py = Math.round((tile.ymax - y) / tolerance);
      const sdk = [tile.xmin + px * tolerance, tile.ymax - py * tolerance];
      expect(Math.abs((sdk[0] ?? NaN) - x) + Math.abs((sdk[1] ?? NaN) - y)).toBeLessThan(1e-6);
      expect(vertices.some(([vx = NaN, vy = NaN]) => Math.hypot(vx - x, vy - y) <= tolerance)).toBe(true);
    }
  });

  it("statistics grouped, with having", async () => {
    const stats = await query("places", {
      where: "country IN ('IS', 'FO')",
      outStatistics: JSON.stringify([
        { statisticType: "count", onStatisticField: "fid", outStatisticFieldName: "n" },
        { statisticType: "max", onStatisticField: "lat", outStatisticFieldName: "north" },
      ]),
      groupByFieldsForStatistics: "country",
      having: "COUNT(fid) > 20",
      orderByFields: "country",
    });
    const expected = source
      .prepare(
        "SELECT country, count(*) AS n, max(lat) AS north FROM places WHERE country IN ('IS', 'FO') GROUP BY country HAVING count(fid) > 20 ORDER BY country",
      )
      .all();
    expect((stats.features as { attributes: object }[]).map((f) => f.attributes)).toEqual(
      expected.map((r) => ({ ...r })),
    );
  });

  it("bad input is a 400 naming the parameter; SQL never leaks", async () => {
    const bad = await query("places", { where: "name = 'x' OR 1=1; DROP TABLE places --" });
    expect(bad).toMatchObject({ error: { code: 400, message: "Unable to complete operation." } });
    expect((bad.error as { details: string[] }).details[0]).toBe("'where' parameter is invalid");
    expect(JSON.stringify(bad)).not.toMatch(/SELECT|sqlite/i);
    const field = await query("places", { where: "no_such_field = 1" });
    expect((field.error as { details: string[] }).details.join(" ")).toContain("no_such_field");
    const geometry = await query("places", { geometry: "{", geometryType: "esriGeometryEnvelope" });
    expect((geometry.error as { details: string[] }).details[0]).toBe("'geometry' parameter is invalid");
    const pbfExtent = await call(
      `${layerUrl("places")}/0/query?${new URLSearchParams({ f: "pbf", where: "1=1", returnExtentOnly: "true" })}`,
    );
    expect(pbfExtent.json()).toMatchObject({ error: { code: 400 } });
    expect(count("SELECT count(*) AS n FROM places")).toBeGreaterThan(100_000);
  });

  it("editing is refused as ArcGIS refuses it on a layer without editing: the operation is not supported", async () => {
    const before = count("SELECT count(*) AS n FROM places");
    const edits = JSON.stringify([{ attributes: { name: "Nowhere" }, geometry: { x: 0, y: 0 } }]);
    const attempts: [string, Record<string, string>][] = [
      ["0/applyEdits", { adds: edits }],
      ["0/addFeatures", { features: edits }],
      ["0/updateFeatures", { features: edits }],
      ["0/deleteFeatures", { where: "1=1" }],
      ["applyEdits", { edits: JSON.stringify([{ id: 0, adds: JSON.parse(edits) as unknown }]) }],
    ];
    for (const [path, fields] of attempts) {
      const res = await call(`${layerUrl("places")}/${path}`, {
        body: new URLSearchParams({ f: "json", ...fields }).toString(),
      });
      expect([path, res.status]).toEqual([path, 200]);
      const operation = path.split("/").at(-1);
      expect([path, res.json()]).toEqual([
        path,
        {
          error: {
            code: 400,
            message: "Requested operation is not supported by this service.",
            details: [
              "The requested capability is not supported.",
              `Its layers are read-only (capabilities: Query): '${operation}' is not supported.`,
            ],
          },
        },
      ]);
    }
    expect(count("SELECT count(*) AS n FROM places")).toBe(before);
  });
});

describe("a cloud store's GeoPackage", () => {
  it("is bulk-published and queried through the S3 API (copied once per version into temporary storage)", async () => {
    const rest = `${engine.ready.https}/portal/sharing/rest`;
    const token = (
      await call(`${rest}/generateToken`, {
        ca: engine.ca,
        body: new URLSearchParams({ f: "json", username: "publisher", password: PASSWORDS.publisher }).toString(),
      })
    ).json<{ token: string }>().token;
    const { cloudStore, serverId } = demoOrganization(engine.dataDir);
    const started = (
      await call(`${rest}/portals/self/datastores/allDatasets/publishLayers`, {
        ca: engine.ca,
        body: new URLSearchParams({
          f: "json",
          token,
          datastoreId: cloudStore,
          serverId,
          serverFolder: "Cloud",
        }).toString(),
      })
    ).json<{ jobId: string; key: string }>();
    let job: Record<string, unknown> = {};
    for (let i = 0; i < 400 && job.status !== "completed" && job.status !== "failed"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      job = (
        await call(
          `${rest}/portals/self/jobs/${started.jobId}?f=json&token=${token}&key=${encodeURIComponent(started.key)}`,
          {
            ca: engine.ca,
          },
        )
      ).json();
    }
    expect(job).toMatchObject({ status: "completed", result: { published: 3 } });
    const layers = (
      await call(`${rest}/portals/self/datastores/getLayers?f=json&datastoreId=${cloudStore}&token=${token}`, {
        ca: engine.ca,
      })
    ).json<{ layerAndDatasets: { layer: { url: string }; dataset: { path: string } }[] }>().layerAndDatasets;
    const places = layers.find((p) => p.dataset.path === `${DEMO_GEOPACKAGE_PATH}/places`);
    const answer = (
      await call(`${places?.layer.url}/0/query?f=json&where=country%3D'IS'&returnCountOnly=true&token=${token}`, {
        ca: engine.ca,
      })
    ).json();
    expect(answer).toEqual({ count: count("SELECT count(*) AS n FROM places WHERE country = 'IS'") });
  });
});

describe("the URLs mapgate hands out", () => {
  it("each layer getLayers lists answers at its url, and its item's url is the same service", async () => {
    const rest = `${engine.ready.https}/portal/sharing/rest`;
    const signIn = await call(`${rest}/generateToken`, {
      ca: engine.ca,
      body: new URLSearchParams({ f: "json", username: "publisher", password: PASSWORDS.publisher }).toString(),
    });
    const token = signIn.json<{ token: string }>().token;
    const listed = await call(
      `${rest}/portals/self/datastores/getLayers?f=json&datastoreId=${datastoreId}&token=${token}`,
      { ca: engine.ca },
    );
    const pairs = listed.json<{ layerAndDatasets: { layer: { id: string; url: string } }[] }>().layerAndDatasets;
    expect(pairs).toHaveLength(3);
    for (const { layer } of pairs) {
      const service = (await call(`${layer.url}?f=json`, { ca: engine.ca })).json();
      expect(service).toMatchObject({ capabilities: "Query", serviceItemId: layer.id });
      const item = (await call(`${rest}/content/items/${layer.id}?f=json`, { ca: engine.ca })).json<{
        url: string;
        access: string;
      }>();
      expect(item.access).toBe("public");
      expect(new URL(item.url).pathname).toBe(new URL(layer.url).pathname);
    }
  });
});

const gdal = existsSync("/usr/bin/ogr2ogr");
describe.skipIf(!gdal)("GDAL reads the layers as ArcGIS feature layers", () => {
  it("ogr2ogr copies a whole layer through its paging, and with -where, equal to the source", () => {
    const out = mkdtempSync(join(tmpdir(), "mapgate-gdal-"));
    const url = `${layerUrl("countries")}/0/query?where=1%3D1&outFields=*&f=json&resultRecordCount=50`;
    execFileSync("ogr2ogr", ["-f", "GeoJSON", join(out, "all.geojson"), url], {
      env: { ...process.env, GDAL_HTTP_TIMEOUT: "30" },
      stdio: "pipe",
    });
    const all = JSON.parse(readFileSync(join(out, "all.geojson"), "utf8")) as {
      features: { properties: { name: string } }[];
    };
    expect(all.features).toHaveLength(count("SELECT count(*) AS n FROM countries"));
    expect(all.features.map((f) => f.properties.name).sort()).toEqual(
      (source.prepare("SELECT name FROM countries").all() as { name: string }[]).map((r) => r.name).sort(),
    );
    const info = spawnSync("ogrinfo", ["-ro", "-al", "-so", "-where", "name LIKE 'F%'", url], { encoding: "utf8" });
    expect(info.stdout).toContain(
      `Feature Count: ${count("SELECT count(*) AS n FROM countries WHERE name LIKE 'F%'")}`,
    );
  });
});
