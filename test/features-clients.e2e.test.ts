// Real clients reading the demo feature layers from the real engine, each answer checked against the GeoPackage
// itself (read here with node:sqlite and a WKB reader of this file's own): ArcGIS REST JS (getLayer,
// queryFeatures, queryAllFeatures and QGIS's ids-then-batches pattern), and an OpenLayers web map in headless
// Chromium loading both layers from `query` on another origin, as a web map does.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  getLayer,
  type IQueryFeaturesResponse,
  type IQueryResponse,
  queryAllFeatures,
  queryFeatures,
} from "@esri/arcgis-rest-feature-service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoServicePath, startWithDemoSource } from "./helpers/admin.ts";
import { ROOT, type RunningEngine } from "./helpers/engine.ts";
import { drawFeatureMaps } from "./helpers/feature-map.ts";

const ARTIFACTS = join(ROOT, "test-artifacts");

let engine: RunningEngine;
let datastoreId: string;
let source: DatabaseSync;

/** A demo layer's URL on the plain-HTTP loopback origin (what a client on this machine uses, no certificate). */
const layerUrl = (table: string) => `${engine.ready.http}${demoServicePath(datastoreId, table)}/0`;

beforeAll(async () => {
  ({ engine, datastoreId, source } = await startWithDemoSource());
});
afterAll(async () => {
  source?.close();
  await engine?.stop();
});

type Row = Record<string, string | number | null>;
const rows = (sql: string, ...params: (string | number)[]) => source.prepare(sql).all(...params) as Row[];

type Position = [number, number];
type Ring = Position[];

/**
 * A GeoPackage geometry blob read without mapgate's reader: the `GP` header (its envelope's size in the flags),
 * then WKB. Points come back as one position, polygons and multipolygons as their polygons' rings.
 */
function readGeometry(blob: Uint8Array): { point?: Position; polygons?: Ring[][] } {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  if (view.getUint8(0) !== 0x47 || view.getUint8(1) !== 0x50) throw new Error("not a GeoPackage geometry");
  let at = 8 + ([0, 32, 48, 48, 64][(view.getUint8(3) >> 1) & 7] ?? NaN);
  let little = true;
  const u32 = () => ((at += 4), view.getUint32(at - 4, little));
  const f64 = () => ((at += 8), view.getFloat64(at - 8, little));
  const header = () => {
    little = view.getUint8(at++) === 1;
    return u32();
  };
  const position = (): Position => [f64(), f64()];
  const polygon = () => Array.from({ length: u32() }, () => Array.from({ length: u32() }, position));
  const type = header();
  if (type === 1) return { point: position() };
  if (type === 3) return { polygons: [polygon()] };
  if (type === 6) return { polygons: Array.from({ length: u32() }, () => (header(), polygon())) };
  throw new Error(`WKB type ${type} is not read here`);
}

/** A ring turned counter-clockwise (Esri JSON turns outer rings clockwise; the file may store either way). */
function counterClockwise(ring: Ring): Ring {
  let area = 0;
  for (let i = 0; i < ring.length - 1; i++) {
    const [a, b] = [ring[i] as Position, ring[i + 1] as Position];
    area += a[0] * b[1] - b[0] * a[1];
  }
  return area < 0 ? [...ring].reverse() : ring;
}

interface Box {
  xmin: number;
  ymin: number;
  xmax: number;
  ymax: number;
}
const inBox = ([x, y]: Position, b: Box) => x >= b.xmin && x <= b.xmax && y >= b.ymin && y <= b.ymax;

/** Each place of the file (every column but the geometry, and its point), in the order the SQL gives. */
function places(where: string, orderBy: string, ...params: (string | number)[]) {
  return rows(
    `SELECT fid, name, country, admin1, admin1_name, admin2, lat, lng, geom FROM places WHERE ${where} ORDER BY ${orderBy}`,
    ...params,
  ).map(({ geom, ...attributes }) => ({
    attributes,
    point: readGeometry(geom as unknown as Uint8Array).point as Position,
  }));
}

/** The places whose point lies in one of the boxes, by fid: the file's R*Tree narrows, the point decides. */
function placesIn(boxes: readonly Box[]) {
  const min = (k: keyof Box) => Math.min(...boxes.map((b) => b[k]));
  const max = (k: keyof Box) => Math.max(...boxes.map((b) => b[k]));
  return places(
    "fid IN (SELECT id FROM rtree_places_geom WHERE minx <= ? AND maxx >= ? AND miny <= ? AND maxy >= ?)",
    "fid",
    max("xmax"),
    min("xmin"),
    max("ymax"),
    min("ymin"),
  ).filter((p) => boxes.some((b) => inBox(p.point, b)));
}

interface EsriFeature {
  attributes: Row;
  geometry?: { x?: number; y?: number; rings?: Ring[] };
}
const featuresOf = (answer: unknown) => (answer as IQueryFeaturesResponse).features as unknown as EsriFeature[];

describe("ArcGIS REST JS (@esri/arcgis-rest-feature-service)", () => {
  it("getLayer: each layer's fields, object id field and geometry type are those the file declares", async () => {
    const geometryTypes: Record<string, string> = { POINT: "esriGeometryPoint", MULTIPOLYGON: "esriGeometryPolygon" };
    // The GeoPackage column types of the demo file as ArcGIS field types.
    const fieldType = (declared: string) =>
      /^TEXT(\(\d+\))?$/.test(declared)
        ? "esriFieldTypeString"
        : ({ REAL: "esriFieldTypeDouble", BOOLEAN: "esriFieldTypeSmallInteger" } as Record<string, string>)[declared];
    const declaredLength = (declared: string) => {
      const n = /\((\d+)\)$/.exec(declared)?.[1];
      return n === undefined ? undefined : Number(n);
    };
    for (const table of ["countries", "places", "attribution"]) {
      const layer = await getLayer({ url: layerUrl(table) });
      const geometry = source
        .prepare("SELECT column_name AS c, geometry_type_name AS t FROM gpkg_geometry_columns WHERE table_name = ?")
        .get(table) as { c: string; t: string } | undefined;
      const columns = rows(`SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, table).filter(
        (c) => c.name !== geometry?.c,
      );
      const key = columns.find((c) => c.pk === 1);
      expect([table, layer.type, layer.geometryType, layer.objectIdField]).toEqual([
        table,
        geometry ? "Feature Layer" : "Table",
        geometry ? geometryTypes[geometry.t] : undefined,
        key?.name,
      ]);
      expect(
        layer.fields?.map((f) => ({ name: f.name, type: f.type, nullable: f.nullable, length: f.length })),
      ).toEqual(
        columns.map((c) => ({
          name: c.name,
          type: c === key ? "esriFieldTypeOID" : fieldType(String(c.type)),
          nullable: c !== key && c.notnull === 0,
          length: declaredLength(String(c.type)),
        })),
      );
    }
  });

  it("queryFeatures: where, outFields, an envelope and orderByFields answer the file's rows in its order", async () => {
    const box = { xmin: 1.9, ymin: 48.5, xmax: 2.8, ymax: 49.1 };
    const answer = await queryFeatures({
      url: layerUrl("places"),
      where: "country = 'FR' AND admin2 IS NOT NULL",
      outFields: ["fid", "name", "admin2"],
      geometry: { ...box, spatialReference: { wkid: 4326 } },
      geometryType: "esriGeometryEnvelope",
      spatialRel: "esriSpatialRelIntersects",
      orderByFields: "admin2 ASC, name DESC, fid",
    });
    const expected = places("country = 'FR' AND admin2 IS NOT NULL", "admin2 ASC, name DESC, fid")
      .filter((p) => inBox(p.point, box))
      .map(({ attributes: { fid, name, admin2 }, point: [x, y] }) => ({
        attributes: { fid, name, admin2 },
        geometry: { x, y },
      }));
    expect(expected.length).toBeGreaterThan(100);
    expect(answer).toMatchObject({
      objectIdFieldName: "fid",
      geometryType: "esriGeometryPoint",
      spatialReference: { wkid: 4326 },
      exceededTransferLimit: false,
    });
    expect(featuresOf(answer)).toEqual(expected);
  });

  it("queryFeatures: a page of one country in a window (its index walked in id order) is the file's first ids; counts match", async () => {
    // The features figures' page: the demo file's index on country is walked, each entry looked up in the R*Tree.
    const box = { xmin: -5, ymin: 42, xmax: 8, ymax: 51 };
    const query = {
      url: layerUrl("places"),
      where: "country = 'FR'",
      geometry: { ...box, spatialReference: { wkid: 4326 } },
      geometryType: "esriGeometryEnvelope" as const,
      spatialRel: "esriSpatialRelIntersects" as const,
    };
    const page = (await queryFeatures({
      ...query,
      outFields: ["fid", "country"],
      resultRecordCount: 1000,
    })) as IQueryFeaturesResponse & { exceededTransferLimit?: boolean };
    const inWindow = places("country = ?", "fid", "FR").filter((p) => inBox(p.point, box));
    expect(inWindow).toHaveLength(8878);
    expect(featuresOf(page).map((f) => f.attributes.fid)).toEqual(inWindow.slice(0, 1000).map((p) => p.attributes.fid));
    expect(page.exceededTransferLimit).toBe(true);
    const further = await queryFeatures({ ...query, outFields: ["fid"], resultOffset: 8500, resultRecordCount: 1000 });
    expect(featuresOf(further).map((f) => f.attributes.fid)).toEqual(inWindow.slice(8500).map((p) => p.attributes.fid));
    const counted = (await queryFeatures({ ...query, returnCountOnly: true })) as IQueryResponse & { count: number };
    expect(counted.count).toBe(8878);
    // A window alone is counted from the R*Tree, its edge's rows tested.
    const all = (await queryFeatures({ ...query, where: "1=1", returnCountOnly: true })) as IQueryResponse & {
      count: number;
    };
    expect(all.count).toBe(placesIn([box]).length);
  });

  it("queryFeatures: polygons, holes included, are the file's rings (Esri orientation aside)", async () => {
    const names = ["South Africa", "Lesotho", "Japan", "Chile", "France"];
    const answer = await queryFeatures({
      url: layerUrl("countries"),
      where: `name IN (${names.map((n) => `'${n}'`).join(", ")})`,
      orderByFields: "name DESC",
    });
    const expected = rows(
      `SELECT fid, name, iso_n3, geom FROM countries WHERE name IN (${names.map(() => "?").join(", ")}) ORDER BY name DESC`,
      ...names,
    ).map(({ geom, ...attributes }) => ({
      attributes,
      rings: (readGeometry(geom as unknown as Uint8Array).polygons ?? []).flat().map(counterClockwise),
    }));
    const features = featuresOf(answer).map((f) => ({
      attributes: f.attributes,
      rings: (f.geometry?.rings ?? []).map(counterClockwise),
    }));
    expect(features).toEqual(expected);
    // South Africa's ring around Lesotho: a hole the answer keeps.
    expect(features.find((f) => f.attributes.name === "South Africa")?.rings.length).toBeGreaterThan(1);
  });

  it("queryAllFeatures pages by the layer's maxRecordCount to the file's whole set", async () => {
    const seen: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      seen.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
      return realFetch(input, init);
    };
    let answer;
    try {
      answer = await queryAllFeatures({ url: layerUrl("places"), where: "country = 'GB'", outFields: ["fid", "name"] });
    } finally {
      globalThis.fetch = realFetch;
    }
    const expected = rows("SELECT fid, name FROM places WHERE country = 'GB'");
    expect(expected.length).toBeGreaterThan(4000);
    const features = featuresOf(answer);
    expect(features).toHaveLength(expected.length);
    const byId = (a: Row, b: Row) => Number(a.fid) - Number(b.fid);
    expect(features.map((f) => f.attributes).sort(byId)).toEqual(expected.sort(byId));
    // The layer's JSON (for maxRecordCount), then one query per page of 2000.
    expect(seen.filter((p) => p.endsWith("/query"))).toHaveLength(Math.ceil(expected.length / 2000));
  });

  it("QGIS's pattern: ids over an envelope, then the features in batches of 100 ids, reassemble the file's set", async () => {
    const box = { xmin: -10.7, ymin: 51.3, xmax: -2.0, ymax: 58.7 };
    const ids = (await queryFeatures({
      url: layerUrl("places"),
      returnIdsOnly: true,
      geometry: { ...box, spatialReference: { wkid: 4326 } },
      geometryType: "esriGeometryEnvelope",
      spatialRel: "esriSpatialRelEnvelopeIntersects",
    })) as IQueryResponse;
    const expected = placesIn([box]);
    expect(expected.length).toBeGreaterThan(1000);
    expect(ids.objectIdFieldName).toBe("fid");
    expect([...(ids.objectIds ?? [])].sort((a, b) => a - b)).toEqual(expected.map((p) => p.attributes.fid));
    const fetched: EsriFeature[] = [];
    const objectIds = ids.objectIds ?? [];
    for (let i = 0; i < objectIds.length; i += 100) {
      const batch = objectIds.slice(i, i + 100);
      const answer = await queryFeatures({
        url: layerUrl("places"),
        objectIds: batch,
        outFields: "*",
        returnGeometry: true,
      });
      const features = featuresOf(answer);
      const byNumber = (a: unknown, b: unknown) => Number(a) - Number(b);
      expect(features.map((f) => f.attributes.fid).sort(byNumber)).toEqual([...batch].sort(byNumber));
      fetched.push(...features);
    }
    fetched.sort((a, b) => Number(a.attributes.fid) - Number(b.attributes.fid));
    expect(fetched).toEqual(expected.map(({ attributes, point: [x, y] }) => ({ attributes, geometry: { x, y } })));
  });
});

describe("an OpenLayers web map (headless Chromium)", () => {
  const R = 6378137;
  const lon = (x: number) => (x / R) * (180 / Math.PI);
  const lat = (y: number) => (Math.atan(Math.exp(y / R)) * 2 - Math.PI / 2) * (180 / Math.PI);

  it("draws the countries and the places layers from query, on another origin, with every feature asked for", async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const [countries, placesMap] = await drawFeatureMaps(
      [
        // A world view: the extent asked for (the view and its render buffer) reaches past the antimeridian.
        { name: "features-countries", layerUrl: layerUrl("countries"), center: [0, 20], zoom: 1, wkid: 102100 },
        { name: "features-places", layerUrl: layerUrl("places"), center: [-8, 53.4], zoom: 7, wkid: 3857 },
      ],
      { artifactsDir: ARTIFACTS },
    );
    if (!countries || !placesMap) throw new Error("a map was not drawn");
    for (const m of [countries, placesMap]) {
      expect([m.name, m.errors, m.loadErrors]).toEqual([m.name, [], 0]);
      expect(m.extents.length, m.name).toBeGreaterThan(0);
    }

    // Every extent together spans the world east to west, so every country is in the answer.
    expect(Math.min(...countries.extents.map((e) => e[0]))).toBeLessThan(-20037508);
    expect(Math.max(...countries.extents.map((e) => e[2]))).toBeGreaterThan(20037508);
    expect([...countries.ids].sort((a, b) => a - b)).toEqual(
      rows("SELECT fid FROM countries ORDER BY fid").map((r) => r.fid),
    );
    expect(countries.nonBackgroundPixels / countries.totalPixels).toBeGreaterThan(0.15);

    const boxes = placesMap.extents.map(([x0, y0, x1, y1]) => ({
      xmin: lon(x0),
      ymin: lat(y0),
      xmax: lon(x1),
      ymax: lat(y1),
    }));
    const expected = placesIn(boxes).map((p) => p.attributes.fid);
    // Under one page: the map holds all of them.
    expect(expected.length).toBeGreaterThan(500);
    expect(expected.length).toBeLessThan(2000);
    expect([...placesMap.ids].sort((a, b) => a - b)).toEqual(expected);
    expect(placesMap.nonBackgroundPixels).toBeGreaterThan(5000);
  });
});
