// The PBF FeatureCollection encoder, read back by two independent decoders: arcgis-pbf-parser, and the decoder
// inside @esri/arcgis-rest-feature-service driven the way clients drive it (queryFeatures with f=pbf-as-arcgis
// against a loopback server answering our bytes).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import decodeArcgisPbf from "arcgis-pbf-parser";
import { queryFeatures } from "@esri/arcgis-rest-feature-service";
import type { Geometry, Position } from "geojson";
import type { EsriGeometryType, FeatureRow } from "#shared/features/schema.ts";
import {
  encodeCount,
  encodeFeatureCollection,
  encodeIds,
  type FeatureCollectionPage,
  type PbfField,
} from "#shared/features/geometry/pbf.ts";
import { toEsriGeometry } from "#shared/features/geometry/esri-json.ts";
import { square } from "./helpers/shapes.ts";

let server: Server;
let body: Uint8Array = new Uint8Array();
let base = "";

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/x-protobuf" });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/FeatureServer/0`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface EsriDecoded {
  objectIdFieldName: string;
  geometryType: string;
  exceededTransferLimit: boolean;
  spatialReference?: { wkid?: number };
  fields: { name: string; type: string; alias?: string }[];
  features: { attributes: Record<string, unknown>; geometry: Record<string, unknown> | null }[];
}

async function viaEsriClient(bytes: Uint8Array): Promise<EsriDecoded> {
  body = bytes;
  return (await queryFeatures({ url: base, params: { f: "pbf-as-arcgis" } })) as unknown as EsriDecoded;
}

interface ParserDecoded {
  featureCollection: {
    features: { id: unknown; properties: Record<string, unknown>; geometry: { type: string; coordinates: unknown } }[];
  };
  exceededTransferLimit: boolean;
}
const viaArcgisPbfParser = (bytes: Uint8Array) => decodeArcgisPbf(bytes) as unknown as ParserDecoded;

/** Every number of two nested arrays/objects equal within `tol`, and the same shape. */
function expectClose(actual: unknown, expected: unknown, tol: number, path = "$"): void {
  if (typeof expected === "number") {
    expect(typeof actual, path).toBe("number");
    expect(Math.abs((actual as number) - expected), `${path}: ${actual} vs ${expected}`).toBeLessThanOrEqual(tol);
    return;
  }
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), path).toBe(true);
    expect((actual as unknown[]).length, `${path} length`).toBe(expected.length);
    expected.forEach((e, i) => expectClose((actual as unknown[])[i], e, tol, `${path}[${i}]`));
    return;
  }
  if (expected && typeof expected === "object") {
    for (const [k, v] of Object.entries(expected))
      expectClose((actual as Record<string, unknown>)[k], v, tol, `${path}.${k}`);
    return;
  }
  expect(actual, path).toEqual(expected);
}

const FIELDS: PbfField[] = [
  { name: "OBJECTID", type: "esriFieldTypeOID" },
  { name: "name", type: "esriFieldTypeString", alias: "Name" },
  { name: "small", type: "esriFieldTypeSmallInteger" },
  { name: "count", type: "esriFieldTypeInteger" },
  { name: "big", type: "esriFieldTypeBigInteger" },
  { name: "ratio", type: "esriFieldTypeSingle" },
  { name: "value", type: "esriFieldTypeDouble" },
  { name: "when", type: "esriFieldTypeDate" },
  { name: "guid", type: "esriFieldTypeGUID" },
];

const attributes = (i: number): FeatureRow["attributes"] => ({
  OBJECTID: i + 1,
  name: i === 2 ? null : `feature ${i} — ü`,
  small: i - 1,
  count: i * 1000 - 5,
  big: 2 ** 40 + i,
  ratio: 0.1 * i,
  value: Math.PI * (i - 1),
  when: Date.UTC(2024, 0, 1 + i),
  guid: i === 1 ? null : `{0000000${i}-0000-0000-0000-000000000000}`,
});

const page = (geometryType: EsriGeometryType, geometries: Geometry[], extra: Partial<FeatureCollectionPage> = {}) =>
  ({
    objectIdFieldName: "OBJECTID",
    uniqueIdField: { name: "OBJECTID", isSystemMaintained: true },
    geometryType,
    spatialReference: { wkid: 102100, latestWkid: 3857 },
    exceededTransferLimit: true,
    fields: FIELDS,
    features: geometries.map((geometry, i) => ({ attributes: attributes(i), geometry })),
    ...extra,
  }) satisfies FeatureCollectionPage;

function expectAttributes(actual: Record<string, unknown>, i: number): void {
  const want = attributes(i);
  for (const f of FIELDS) {
    const v = want[f.name];
    if (f.type === "esriFieldTypeSingle") expect(actual[f.name]).toBe(Math.fround(v as number));
    else expect(actual[f.name], f.name).toEqual(v);
  }
}

describe("PBF FeatureCollection", () => {
  it("points: attributes of every type and coordinates, through both decoders", async () => {
    const pts: Geometry[] = [
      { type: "Point", coordinates: [-13627665.27, 4547675.35] },
      { type: "Point", coordinates: [1113194.9, 6800125.45] },
      { type: "Point", coordinates: [0, 0] },
    ];
    const tolerance = 0.01;
    const bytes = encodeFeatureCollection(page("esriGeometryPoint", pts, { quantization: { tolerance } }));

    const esri = await viaEsriClient(bytes);
    expect(esri.objectIdFieldName).toBe("OBJECTID");
    expect(esri.geometryType).toBe("esriGeometryPoint");
    expect(esri.exceededTransferLimit).toBe(true);
    expect(esri.spatialReference).toMatchObject({ wkid: 102100 });
    expect(esri.fields.map((f) => [f.name, f.type])).toEqual(FIELDS.map((f) => [f.name, f.type]));
    expect(esri.fields[1]?.alias).toBe("Name");
    esri.features.forEach((f, i) => {
      expectAttributes(f.attributes, i);
      expectClose(f.geometry, toEsriGeometry(pts[i], "esriGeometryPoint"), tolerance / 2 + 1e-9);
    });

    const parsed = viaArcgisPbfParser(bytes);
    expect(parsed.exceededTransferLimit).toBe(true);
    parsed.featureCollection.features.forEach((f, i) => {
      expect(f.id).toBe(i + 1);
      expectAttributes(f.properties, i);
      expectClose(f.geometry.coordinates, (pts[i] as { coordinates: Position }).coordinates, tolerance / 2 + 1e-9);
    });
  });

  it("points with z", async () => {
    const pts: Geometry[] = [{ type: "Point", coordinates: [10.5, 59.9, 123.456] }];
    const bytes = encodeFeatureCollection(
      page("esriGeometryPoint", pts, {
        hasZ: true,
        spatialReference: { wkid: 4326 },
        quantization: { tolerance: 1e-8 },
      }),
    );
    const esri = await viaEsriClient(bytes);
    expectClose(esri.features[0]?.geometry, { x: 10.5, y: 59.9, z: 123.456 }, 1e-3);
    const parsed = viaArcgisPbfParser(bytes);
    expectClose(parsed.featureCollection.features[0]?.geometry.coordinates, [10.5, 59.9, 123.456], 1e-3);
  });

  it("polylines: parts restart their deltas", async () => {
    const lines: Geometry[] = [
      {
        type: "LineString",
        coordinates: [
          [0, 0],
          [10, 5],
          [20, -5],
        ],
      },
      {
        type: "MultiLineString",
        coordinates: [
          [
            [100, 100],
            [110, 120],
          ],
          [
            [-50, -50],
            [-60, -40],
            [-70, -30],
          ],
        ],
      },
    ];
    const bytes = encodeFeatureCollection(page("esriGeometryPolyline", lines, { exceededTransferLimit: false }));
    const esri = await viaEsriClient(bytes);
    expect(esri.exceededTransferLimit).toBe(false);
    // default grid: the page's own extent / 1e9
    const tol = 200 / 1e9;
    esri.features.forEach((f, i) => expectClose(f.geometry, toEsriGeometry(lines[i], "esriGeometryPolyline"), tol));
    const parsed = viaArcgisPbfParser(bytes);
    expectClose(parsed.featureCollection.features[0]?.geometry, lines[0], tol);
    expectClose(parsed.featureCollection.features[1]?.geometry, lines[1], tol);
  });

  it("polygons: outer rings clockwise, holes counter-clockwise, grouped back by both decoders", async () => {
    const polys: Geometry[] = [
      { type: "Polygon", coordinates: [square(0, 0, 100, true), square(10, 10, 20, false)] },
      { type: "MultiPolygon", coordinates: [[square(200, 200, 50, false)], [square(300, 0, 10, true)]] },
      { type: "Polygon", coordinates: [square(500, 500, 5, true)] },
    ];
    const bytes = encodeFeatureCollection(page("esriGeometryPolygon", polys, { quantization: { tolerance: 0.001 } }));
    const esri = await viaEsriClient(bytes);
    const parsed = viaArcgisPbfParser(bytes);
    polys.forEach((g, i) => {
      const expected = toEsriGeometry(g, "esriGeometryPolygon") as { rings: number[][][] };
      const got = esri.features[i]?.geometry as { rings: unknown[] };
      // The Esri decoder groups a multi-ring polygon into [outer, holes…] lists: flatten to compare.
      const flat = expected.rings.length > 1 ? (got.rings as number[][][][]).flat() : got.rings;
      expectClose(flat, expected.rings, 0.001);
    });
    // arcgis-pbf-parser: a GeoJSON MultiPolygon of [outer, holes…] by orientation
    const first = parsed.featureCollection.features[0]?.geometry as { type: string; coordinates: number[][][][] };
    expect(first.type).toBe("MultiPolygon");
    expect(first.coordinates).toHaveLength(1);
    expect(first.coordinates[0]).toHaveLength(2);
    const second = parsed.featureCollection.features[1]?.geometry as { coordinates: number[][][][] };
    expect(second.coordinates.map((p) => p.length)).toEqual([1, 1]);
    const third = parsed.featureCollection.features[2]?.geometry as { type: string; coordinates: unknown };
    expect(third.type).toBe("Polygon");
    expectClose(third.coordinates, [square(500, 500, 5, false)], 0.001);
  });

  it("multipoints and tables", async () => {
    const mp: Geometry = {
      type: "MultiPoint",
      coordinates: [
        [1, 1],
        [1, 1],
        [2, 3],
      ],
    };
    const parsed = viaArcgisPbfParser(
      encodeFeatureCollection(page("esriGeometryMultipoint", [mp], { quantization: { tolerance: 0.5 } })),
    );
    // arcgis-pbf-parser reads every multi-vertex geometry as rings: the points come back as one list
    expectClose(parsed.featureCollection.features[0]?.geometry.coordinates, [mp.coordinates], 0.25);

    const table: FeatureCollectionPage = {
      objectIdFieldName: "OBJECTID",
      exceededTransferLimit: false,
      fields: FIELDS.slice(0, 2),
      features: [{ attributes: { OBJECTID: 7, name: "row" } }],
    };
    const bytes = encodeFeatureCollection(table);
    const { decode } = (await import(esriV2Reader)) as { decode: (b: Uint8Array) => EsriRaw };
    const raw = decode(bytes).queryResult.featureResult;
    expect(raw?.geometryType).toBe(127);
    expect(raw?.transform).toBeUndefined();
    expect(raw?.features[0]?.attributes.map((a: { value_type: string }) => a.value_type)).toEqual([
      "uint_value",
      "string_value",
    ]);
  });

  it("drops vertices that fall on one grid cell and parts the grid collapses", async () => {
    const g: Geometry = {
      type: "MultiPolygon",
      coordinates: [[square(0, 0, 100, true)], [square(50, 50, 0.001, true)]],
    };
    const esri = await viaEsriClient(
      encodeFeatureCollection(page("esriGeometryPolygon", [g], { quantization: { tolerance: 1 } })),
    );
    expect((esri.features[0]?.geometry as { rings: unknown[] }).rings).toHaveLength(1);
  });

  it("count and ids results", async () => {
    const { decode } = (await import(esriV2Reader)) as { decode: (b: Uint8Array) => EsriRaw };
    expect(decode(encodeCount(12345)).queryResult.countResult).toEqual({ count: 12345 });
    expect(decode(encodeCount(0)).queryResult.countResult).toEqual({ count: 0 });
    const ids = decode(encodeIds("fid", [1, 2, 300000, 2 ** 40])).queryResult.idsResult;
    expect(ids).toMatchObject({ objectIdFieldName: "fid", objectIds: [1, 2, 300000, 2 ** 40] });
  });
});

// The raw message reader of @esri/arcgis-rest-feature-service (not exported by the package's entry point).
const esriV2Reader = new URL(
  "../node_modules/@esri/arcgis-rest-feature-service/dist/esm/pbf-parser/arcGISPbfParser.js",
  import.meta.url,
).href;

interface EsriRaw {
  queryResult: {
    featureResult?: {
      geometryType: number;
      transform?: unknown;
      features: { attributes: { value_type: string }[] }[];
    };
    countResult?: { count: number };
    idsResult?: { objectIdFieldName: string; objectIds: number[] };
  };
}
