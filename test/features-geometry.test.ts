import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Geometry, Polygon } from "geojson";
import { ApiError, CorruptRecordError } from "#shared/errors.ts";
import {
  decodeGeoPackageGeometry,
  decodeHexWkb,
  decodeWkb,
  geoPackagePointIn,
  MAX_COLLECTION_DEPTH,
} from "#shared/features/geometry/wkb.ts";
import {
  fromEsriGeometry,
  MAX_QUERY_VERTICES,
  ringsToGeoJson,
  toEsriGeometry,
  toRfc7946,
  type EsriPolygon,
} from "#shared/features/geometry/esri-json.ts";
import { isClockwise } from "#shared/features/geometry/rings.ts";
import {
  canonicalWkid,
  crsInfo,
  hasCrs,
  project,
  projectBounds,
  registerCrs,
  requireCrs,
  roundCoordinates,
  xyResolution,
} from "#shared/features/geometry/projection.ts";
import { generalize, simplifyRing } from "#shared/features/geometry/generalize.ts";
import { square } from "./helpers/shapes.ts";

// ---------------------------------------------------------------------------------------------------------------
// A small WKB writer for hand-built blobs.

type Dims = "" | "Z" | "M" | "ZM";
class WkbWriter {
  private readonly bytes: number[] = [];
  private readonly little: boolean;
  constructor(little = true) {
    this.little = little;
  }
  u8(v: number) {
    this.bytes.push(v);
    return this;
  }
  u32(v: number) {
    const b = Buffer.alloc(4);
    if (this.little) b.writeUInt32LE(v >>> 0);
    else b.writeUInt32BE(v >>> 0);
    this.bytes.push(...b);
    return this;
  }
  i32(v: number) {
    const b = Buffer.alloc(4);
    if (this.little) b.writeInt32LE(v);
    else b.writeInt32BE(v);
    this.bytes.push(...b);
    return this;
  }
  f64(...vs: number[]) {
    for (const v of vs) {
      const b = Buffer.alloc(8);
      if (this.little) b.writeDoubleLE(v);
      else b.writeDoubleBE(v);
      this.bytes.push(...b);
    }
    return this;
  }
  header(type: number, dims: Dims = "") {
    const iso = { "": 0, Z: 1000, M: 2000, ZM: 3000 }[dims];
    return this.u8(this.little ? 1 : 0).u32(type + iso);
  }
  raw(b: Uint8Array) {
    this.bytes.push(...b);
    return this;
  }
  done() {
    return Uint8Array.from(this.bytes);
  }
}

const point = (x: number, y: number, little = true) => new WkbWriter(little).header(1).f64(x, y).done();

describe("WKB", () => {
  it("decodes points in 2D, Z, M and ZM, both byte orders", () => {
    expect(decodeWkb(point(1, 2)).geometry).toEqual({ type: "Point", coordinates: [1, 2] });
    expect(decodeWkb(point(1, 2, false)).geometry).toEqual({ type: "Point", coordinates: [1, 2] });
    const z = decodeWkb(new WkbWriter().header(1, "Z").f64(1, 2, 3).done());
    expect(z).toMatchObject({ geometry: { type: "Point", coordinates: [1, 2, 3] }, hasZ: true, hasM: false });
    const m = decodeWkb(new WkbWriter().header(1, "M").f64(1, 2, 9).done());
    expect(m).toMatchObject({ geometry: { type: "Point", coordinates: [1, 2] }, hasZ: false, hasM: true });
    const zm = decodeWkb(new WkbWriter(false).header(1, "ZM").f64(1, 2, 3, 9).done());
    expect(zm).toMatchObject({ geometry: { type: "Point", coordinates: [1, 2, 3] }, hasZ: true, hasM: true });
  });

  it("decodes every type 1–7", () => {
    const line = new WkbWriter().header(2).u32(2).f64(0, 0, 1, 1).done();
    expect(decodeWkb(line).geometry).toEqual({
      type: "LineString",
      coordinates: [
        [0, 0],
        [1, 1],
      ],
    });
    const ring = [0, 0, 4, 0, 4, 4, 0, 0];
    const poly = new WkbWriter()
      .header(3, "Z")
      .u32(1)
      .u32(4)
      .f64(...[0, 0, 1, 4, 0, 1, 4, 4, 1, 0, 0, 1])
      .done();
    expect(decodeWkb(poly).geometry).toEqual({
      type: "Polygon",
      coordinates: [
        [
          [0, 0, 1],
          [4, 0, 1],
          [4, 4, 1],
          [0, 0, 1],
        ],
      ],
    });
    const mp = new WkbWriter()
      .header(4)
      .u32(2)
      .raw(point(1, 1))
      .raw(point(2, 2, false))
      .done();
    expect(decodeWkb(mp).geometry).toEqual({
      type: "MultiPoint",
      coordinates: [
        [1, 1],
        [2, 2],
      ],
    });
    const mls = new WkbWriter().header(5).u32(1).raw(line).done();
    expect(decodeWkb(mls).geometry?.type).toBe("MultiLineString");
    const p2 = new WkbWriter()
      .header(3)
      .u32(1)
      .u32(4)
      .f64(...ring)
      .done();
    const mpoly = new WkbWriter().header(6).u32(2).raw(p2).raw(p2).done();
    const g = decodeWkb(mpoly).geometry;
    expect(g?.type === "MultiPolygon" && g.coordinates.length).toBe(2);
    const gc = new WkbWriter().header(7).u32(2).raw(point(5, 5)).raw(line).done();
    expect(decodeWkb(gc).geometry).toMatchObject({
      type: "GeometryCollection",
      geometries: [{ type: "Point" }, { type: "LineString" }],
    });
  });

  it("decodes PostGIS EWKB flags and SRID, and the hex text PostgreSQL answers", () => {
    // SELECT ST_AsEWKB('SRID=4326;POINT Z (1 2 3)'::geometry) (little endian)
    const ewkb = new WkbWriter()
      .u8(1)
      .u32(0x80000000 | 0x20000000 | 1)
      .u32(4326)
      .f64(1, 2, 3)
      .done();
    expect(decodeWkb(ewkb)).toEqual({
      geometry: { type: "Point", coordinates: [1, 2, 3] },
      srid: 4326,
      hasZ: true,
      hasM: false,
    });
    const hex = "0101000020E6100000000000000000F03F0000000000000040";
    expect(decodeHexWkb(hex)).toMatchObject({ geometry: { type: "Point", coordinates: [1, 2] }, srid: 4326 });
    const withM = new WkbWriter()
      .u8(1)
      .u32(0x40000000 | 2)
      .u32(2)
      .f64(0, 0, 7, 1, 1, 8)
      .done();
    expect(decodeWkb(withM).geometry).toEqual({
      type: "LineString",
      coordinates: [
        [0, 0],
        [1, 1],
      ],
    });
  });

  it("reads empty geometries as null and drops empty points inside a multipoint", () => {
    expect(decodeWkb(point(NaN, NaN)).geometry).toBeNull();
    expect(decodeWkb(new WkbWriter().header(6).u32(0).done()).geometry).toBeNull();
    const mp = new WkbWriter().header(4).u32(2).raw(point(NaN, NaN)).raw(point(3, 4)).done();
    expect(decodeWkb(mp).geometry).toEqual({ type: "MultiPoint", coordinates: [[3, 4]] });
  });

  it("refuses truncated blobs, lying counts, wrong members, trailing bytes and deep nesting", () => {
    const bad = (b: Uint8Array) => expect(() => decodeWkb(b)).toThrow(CorruptRecordError);
    bad(point(1, 2).subarray(0, 12));
    bad(new Uint8Array([1, 1, 0]));
    bad(new Uint8Array([7, 1, 0, 0, 0]));
    bad(new WkbWriter().header(2).u32(0xffffffff).f64(0, 0).done());
    bad(new WkbWriter().header(3).u32(0x7fffffff).done());
    bad(new WkbWriter().header(6).u32(1_000_000_000).done());
    bad(new WkbWriter().header(4).u32(1).raw(new WkbWriter().header(2).u32(0).done()).done());
    bad(new WkbWriter().header(9).done());
    bad(new WkbWriter().header(1).u32(5000).done());
    bad(Uint8Array.from([...point(1, 2), 0]));
    let nested = point(0, 0);
    for (let i = 0; i < MAX_COLLECTION_DEPTH; i++) nested = new WkbWriter().header(7).u32(1).raw(nested).done();
    expect(decodeWkb(nested).geometry?.type).toBe("GeometryCollection");
    bad(new WkbWriter().header(7).u32(1).raw(nested).done());
    expect(() => decodeHexWkb("01zz")).toThrow(CorruptRecordError);
  });

  it("decodes a large blob in linear time", () => {
    const n = 200_000;
    const w = new WkbWriter().header(2).u32(n);
    const coords = new Float64Array(n * 2).map((_, i) => i);
    const blob = Uint8Array.from([...w.done(), ...new Uint8Array(coords.buffer)]);
    const t = performance.now();
    const g = decodeWkb(blob).geometry;
    expect(g?.type === "LineString" && g.coordinates.length).toBe(n);
    expect(performance.now() - t).toBeLessThan(1000);
  });
});

// ---------------------------------------------------------------------------------------------------------------

function gpBlob(opts: {
  srsId: number;
  envelope?: readonly number[];
  indicator?: number;
  empty?: boolean;
  little?: boolean;
}) {
  const little = opts.little ?? true;
  const indicator = opts.indicator ?? (opts.envelope ? 1 : 0);
  const flags = (opts.empty ? 0x10 : 0) | (indicator << 1) | (little ? 1 : 0);
  const w = new WkbWriter(little).u8(0x47).u8(0x50).u8(0).u8(flags).i32(opts.srsId);
  if (opts.envelope) w.f64(...opts.envelope);
  return w;
}

describe("GeoPackage geometry blobs", () => {
  it("reads header, envelope variants and the WKB after them", () => {
    const blob = gpBlob({ srsId: 4326, envelope: [1, 3, 2, 4] })
      .raw(point(2, 3))
      .done();
    expect(decodeGeoPackageGeometry(blob)).toEqual({
      srsId: 4326,
      envelope: [1, 2, 3, 4],
      empty: false,
      geometry: { type: "Point", coordinates: [2, 3] },
      hasZ: false,
      hasM: false,
    });
    for (const [indicator, doubles] of [
      [0, 0],
      [2, 6],
      [3, 6],
      [4, 8],
    ] as const) {
      const env = [0, 10, 0, 10, 0, 1, 0, 1].slice(0, doubles);
      const b = gpBlob({ srsId: 3857, envelope: env, indicator, little: false })
        .raw(point(5, 5, false))
        .done();
      const d = decodeGeoPackageGeometry(b);
      expect(d.geometry).toEqual({ type: "Point", coordinates: [5, 5] });
      expect(d.envelope).toEqual(doubles ? [0, 0, 10, 10] : undefined);
    }
    const empty = gpBlob({ srsId: -1, empty: true }).raw(point(NaN, NaN)).done();
    expect(decodeGeoPackageGeometry(empty)).toMatchObject({ srsId: -1, empty: true, geometry: null });
  });

  it("reads a two-dimensional point as the general WKB reader does, whatever its byte orders and values", () => {
    // A point blob of exactly 21 bytes of WKB is read at once (the common row of a point layer): each must
    // decode as the same WKB does through the general reader, NaN (an empty point) and one NaN included.
    const values: [number, number][] = [
      [2, 3],
      [-0, 0],
      [NaN, NaN],
      [NaN, 1],
      [1e308, -1e-308],
      [Infinity, -Infinity],
    ];
    for (const [x, y] of values)
      for (const little of [true, false])
        for (const blobLittle of [true, false])
          for (const envelope of [undefined, [x, x, y, y]]) {
            const wkb = point(x, y, little);
            const blob = gpBlob({ srsId: 4326, little: blobLittle, ...(envelope ? { envelope } : {}) })
              .raw(wkb)
              .done();
            const general = decodeWkb(wkb);
            const got = decodeGeoPackageGeometry(blob);
            expect(got.geometry).toEqual(general.geometry);
            expect(got).toMatchObject({ srsId: 4326, empty: general.geometry === null, hasZ: false, hasM: false });
          }
    // A point with Z, or with bytes after it, is not one: the general reader answers (or refuses).
    const z = gpBlob({ srsId: 4326 })
      .raw(new WkbWriter().header(1, "Z").f64(1, 2, 3).done())
      .done();
    expect(decodeGeoPackageGeometry(z)).toMatchObject({ geometry: { coordinates: [1, 2, 3] }, hasZ: true });
    const odd = gpBlob({ srsId: 4326 }).raw(new WkbWriter().header(2).u32(1).f64(1, 2).done()).done();
    expect(decodeGeoPackageGeometry(odd).geometry).toEqual({ type: "LineString", coordinates: [[1, 2]] });
    const bad = gpBlob({ srsId: 4326 }).raw(new WkbWriter().u8(2).u32(1).f64(1, 2).done()).done();
    expect(() => decodeGeoPackageGeometry(bad)).toThrow(CorruptRecordError);
  });

  it("tests a plain point blob against a box as its decoded point would be, and leaves any other blob to the decoder", () => {
    // The exact test of an envelope query reads a point's x and y straight from the blob (no geometry built): it must
    // agree with the decoded point for every byte order, header envelope and value, the box's edges included.
    const box = [0, -1, 10, 5] as const;
    const inBox = (g: Geometry | null) =>
      g?.type === "Point" &&
      box[0] <= (g.coordinates[0] as number) &&
      (g.coordinates[0] as number) <= box[2] &&
      box[1] <= (g.coordinates[1] as number) &&
      (g.coordinates[1] as number) <= box[3];
    const values: [number, number][] = [
      [2, 3],
      [0, -1],
      [10, 5],
      [-1e-300, 0],
      [10 + 1e-12, 0],
      [3, 5 + 1e-12],
      [-0, 0],
      [NaN, NaN],
      [NaN, 1],
      [1, NaN],
      [Infinity, 2],
      [1e308, -1e-308],
    ];
    let kept = 0;
    for (const [x, y] of values)
      for (const little of [true, false])
        for (const blobLittle of [true, false])
          for (const [envelope, indicator] of [
            [undefined, 0],
            [[x, x, y, y], 1],
            [[x, x, y, y, 0, 0], 2],
            [[x, x, y, y, 0, 0, 0, 0], 4],
          ] as const) {
            const blob = gpBlob({ srsId: 4326, little: blobLittle, indicator, ...(envelope ? { envelope } : {}) })
              .raw(point(x, y, little))
              .done();
            const got = geoPackagePointIn(blob, box);
            expect(got, `${x} ${y} ${little} ${blobLittle} ${indicator}`).toBe(
              inBox(decodeGeoPackageGeometry(blob).geometry),
            );
            if (got) kept++;
          }
    expect(kept).toBe(4 * 2 * 2 * 4); // four points (the edges and -0 included), every way
    // Not plain points: flagged empty, with Z, another type, a bad byte order, bytes after the point, bad headers.
    const others = [
      gpBlob({ srsId: 4326, empty: true }).raw(point(1, 1)).done(),
      gpBlob({ srsId: 4326 })
        .raw(new WkbWriter().header(1, "Z").f64(1, 2, 3).done())
        .done(),
      gpBlob({ srsId: 4326 }).raw(new WkbWriter().header(4).u32(0).u32(0).f64(1).done()).done(),
      gpBlob({ srsId: 4326 }).raw(new WkbWriter().u8(2).u32(1).f64(1, 2).done()).done(),
      gpBlob({ srsId: 4326 }).raw(point(1, 1)).u8(0).done(),
      Uint8Array.from([0x58, ...gpBlob({ srsId: 4326 }).raw(point(1, 1)).done().subarray(1)]),
      gpBlob({ srsId: 4326, indicator: 5 }).raw(point(1, 1)).done(),
      new Uint8Array(3),
    ];
    for (const blob of others) expect(geoPackagePointIn(blob, box)).toBeUndefined();
  });

  it("refuses bad magic, versions, indicators, extended types and truncation", () => {
    const bad = (b: Uint8Array) => expect(() => decodeGeoPackageGeometry(b)).toThrow(CorruptRecordError);
    const good = gpBlob({ srsId: 4326 }).raw(point(1, 1)).done();
    bad(Uint8Array.from([0x58, ...good.subarray(1)]));
    bad(Uint8Array.from([...good.subarray(0, 2), 1, ...good.subarray(3)]));
    bad(Uint8Array.from([...good.subarray(0, 3), (5 << 1) | 1, ...good.subarray(4)]));
    bad(Uint8Array.from([...good.subarray(0, 3), 0x21, ...good.subarray(4)]));
    bad(gpBlob({ srsId: 4326, indicator: 4 }).f64(1, 2).done());
    bad(good.subarray(0, 6));
    bad(good.subarray(0, good.length - 1));
  });

  it("reads the blobs GDAL writes", () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-gpkg-"));
    try {
      const features = [
        { type: "Point", coordinates: [10.5, 59.9, 12] },
        {
          type: "Polygon",
          coordinates: [
            [
              [0, 0, 1],
              [4, 0, 1],
              [4, 4, 1],
              [0, 4, 1],
              [0, 0, 1],
            ],
          ],
        },
        {
          type: "MultiLineString",
          coordinates: [
            [
              [0, 0, 0],
              [1, 1, 0],
            ],
            [
              [2, 2, 0],
              [3, 3, 5],
            ],
          ],
        },
      ];
      const fc = {
        type: "FeatureCollection",
        features: features.map((geometry, i) => ({ type: "Feature", properties: { n: i }, geometry })),
      };
      writeFileSync(join(dir, "in.geojson"), JSON.stringify(fc));
      execFileSync("ogr2ogr", ["-f", "GPKG", join(dir, "out.gpkg"), join(dir, "in.geojson"), "-nln", "t"], {
        stdio: "pipe",
      });
      const db = new DatabaseSync(join(dir, "out.gpkg"), { readOnly: true });
      const rows = db.prepare("SELECT geom FROM t ORDER BY fid").all() as { geom: Uint8Array }[];
      db.close();
      const decoded = rows.map((r) => decodeGeoPackageGeometry(r.geom));
      expect(decoded.map((d) => d.srsId)).toEqual([4326, 4326, 4326]);
      expect(decoded.map((d) => d.geometry?.type)).toEqual(["Point", "Polygon", "MultiLineString"]);
      expect(decoded[0]?.geometry).toEqual({ type: "Point", coordinates: [10.5, 59.9, 12] });
      expect(decoded[1]?.envelope).toEqual([0, 0, 4, 4]);
      const g = decoded[2]?.geometry;
      expect(g?.type === "MultiLineString" && g.coordinates[1]).toEqual([
        [2, 2, 0],
        [3, 3, 5],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

const detailsOf = (f: () => unknown): readonly string[] => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return (e as ApiError).details;
  }
  throw new Error("expected an ApiError");
};

const invalidGeometry = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).code).toBe(400);
    expect((e as ApiError).details[0]).toBe("'geometry' parameter is invalid");
    return (e as ApiError).details[1];
  }
  throw new Error("expected a 400");
};

describe("Esri JSON out", () => {
  it("writes points, multipoints and polylines, with z only when asked", () => {
    expect(toEsriGeometry({ type: "Point", coordinates: [1, 2, 3] }, "esriGeometryPoint")).toEqual({ x: 1, y: 2 });
    expect(toEsriGeometry({ type: "Point", coordinates: [1, 2, 3] }, "esriGeometryPoint", { hasZ: true })).toEqual({
      x: 1,
      y: 2,
      z: 3,
    });
    expect(
      toEsriGeometry(
        {
          type: "MultiPoint",
          coordinates: [
            [1, 2],
            [3, 4],
          ],
        },
        "esriGeometryMultipoint",
      ),
    ).toEqual({
      points: [
        [1, 2],
        [3, 4],
      ],
    });
    expect(
      toEsriGeometry(
        {
          type: "LineString",
          coordinates: [
            [0, 0],
            [1, 1],
          ],
        },
        "esriGeometryPolyline",
      ),
    ).toEqual({
      paths: [
        [
          [0, 0],
          [1, 1],
        ],
      ],
    });
    expect(toEsriGeometry(null, "esriGeometryPoint")).toBeNull();
    expect(toEsriGeometry({ type: "Point", coordinates: [1, 2] }, "esriGeometryPolygon")).toBeNull();
  });

  it("turns outer rings clockwise and holes counter-clockwise", () => {
    const g: Geometry = {
      type: "MultiPolygon",
      coordinates: [[square(0, 0, 10, true), square(2, 2, 2, false)], [square(20, 20, 5, false)]],
    };
    const esri = toEsriGeometry(g, "esriGeometryPolygon") as EsriPolygon;
    expect(esri.rings.map(isClockwise)).toEqual([true, false, true]);
    // and back: the reader groups them into the same two polygons, outer rings counter-clockwise (RFC 7946)
    const back = ringsToGeoJson(esri.rings);
    expect(back?.type).toBe("MultiPolygon");
    const polys = (back as { coordinates: number[][][][] }).coordinates;
    expect(polys.map((p) => p.length).sort()).toEqual([1, 2]);
    for (const p of polys) {
      expect(isClockwise(p[0] as number[][])).toBe(false);
      for (const h of p.slice(1)) expect(isClockwise(h)).toBe(true);
    }
  });

  it("writes RFC 7946 winding for GeoJSON", () => {
    const g = toRfc7946({ type: "Polygon", coordinates: [square(0, 0, 10, false), square(2, 2, 2, true)] }) as Polygon;
    expect(g.coordinates.map(isClockwise)).toEqual([false, true]);
  });
});

describe("Esri JSON in (the geometry parameter)", () => {
  it("reads the envelope and point shorthands", () => {
    expect(fromEsriGeometry("-10, -5, 10, 5")).toMatchObject({
      envelope: [-10, -5, 10, 5],
      geometry: { type: "Polygon" },
    });
    expect(fromEsriGeometry("3,4", "esriGeometryPoint")).toEqual({ geometry: { type: "Point", coordinates: [3, 4] } });
    expect(fromEsriGeometry("3,4")).toEqual({ geometry: { type: "Point", coordinates: [3, 4] } });
    invalidGeometry(() => fromEsriGeometry("1,2,3,4", "esriGeometryPoint"));
    invalidGeometry(() => fromEsriGeometry("1,2,3"));
    invalidGeometry(() => fromEsriGeometry("1,,3,4"));
    invalidGeometry(() => fromEsriGeometry("1,NaN,3,4"));
    invalidGeometry(() => fromEsriGeometry("1,2,Infinity,4"));
    invalidGeometry(() => fromEsriGeometry("5,0,1,4"));
  });

  it("reads JSON objects, with the spatial reference inside them", () => {
    const env = fromEsriGeometry(
      '{"xmin":-1,"ymin":-2,"xmax":1,"ymax":2,"spatialReference":{"wkid":102100,"latestWkid":3857}}',
      "esriGeometryEnvelope",
    );
    expect(env).toMatchObject({ envelope: [-1, -2, 1, 2], spatialReference: 102100 });
    expect(fromEsriGeometry({ x: 1, y: 2, spatialReference: { latestWkid: 3857 } })).toEqual({
      geometry: { type: "Point", coordinates: [1, 2] },
      spatialReference: 3857,
    });
    expect(fromEsriGeometry('{"points":[[1,2],[3,4]]}', "esriGeometryMultipoint").geometry.type).toBe("MultiPoint");
    expect(fromEsriGeometry('{"paths":[[[0,0],[1,1]]]}', "esriGeometryPolyline").geometry.type).toBe("LineString");
    expect(fromEsriGeometry('{"paths":[[[0,0],[1,1]],[[2,2],[3,3]]]}').geometry.type).toBe("MultiLineString");
  });

  it("groups polygon rings by orientation and containment", () => {
    // An outer ring (clockwise), a hole in it, an island in the hole, and a ring wound the wrong way outside all.
    const rings = [square(0, 0, 100, false), square(10, 10, 50, true), square(20, 20, 10, false), square(200, 0, 5)];
    const q = fromEsriGeometry(JSON.stringify({ rings }), "esriGeometryPolygon");
    expect(q.geometry.type).toBe("MultiPolygon");
    const polys = (q.geometry as { coordinates: number[][][][] }).coordinates;
    const byFirst = (x: number) => polys.find((p) => p[0]?.some((v) => v[0] === x)) as number[][][];
    expect(byFirst(0)).toHaveLength(2); // outer + hole
    expect(byFirst(20)).toHaveLength(1); // island
    expect(byFirst(200)).toHaveLength(1); // counter-clockwise loner is an outer ring
    for (const p of polys) expect(isClockwise(p[0] as number[][])).toBe(false);
    // open rings are closed
    const open = fromEsriGeometry({
      rings: [
        [
          [0, 0],
          [0, 1],
          [1, 1],
        ],
      ],
    });
    expect((open.geometry as Polygon).coordinates[0]).toHaveLength(4);
  });

  it("refuses hostile and malformed input", () => {
    expect(invalidGeometry(() => fromEsriGeometry("{not json"))).toMatch(/JSON/);
    invalidGeometry(() => fromEsriGeometry("[1,2]"));
    invalidGeometry(() => fromEsriGeometry('{"foo":1}'));
    invalidGeometry(() => fromEsriGeometry('{"x":1,"y":2}', "esriGeometryPolygon"));
    invalidGeometry(() => fromEsriGeometry('{"x":1,"y":"2"}'));
    invalidGeometry(() => fromEsriGeometry({ x: NaN, y: 1 }));
    invalidGeometry(() => fromEsriGeometry({ x: 1, y: Infinity }));
    invalidGeometry(() => fromEsriGeometry('{"x":1,"y":2,"spatialReference":{"wkt":"PROJCS[]"}}'));
    invalidGeometry(() => fromEsriGeometry('{"x":1,"y":2,"spatialReference":{"wkid":-5}}'));
    invalidGeometry(() => fromEsriGeometry('{"rings":[[[0,0],[1,1],[0,0]]]}'));
    invalidGeometry(() => fromEsriGeometry('{"rings":[[[0,0],[1,0],[2,0],[0,0]]]}'));
    invalidGeometry(() => fromEsriGeometry('{"paths":[[[0,0]]]}'));
    invalidGeometry(() => fromEsriGeometry('{"paths":[[[0,0],[1,null]]]}'));
    invalidGeometry(() => fromEsriGeometry("{}", "esriGeometryCircle"));
    const many = Array.from({ length: MAX_QUERY_VERTICES + 1 }, (_, i) => [i, i]);
    expect(invalidGeometry(() => fromEsriGeometry({ points: many }))).toMatch(/vertices/);
    const manyPaths = Array.from({ length: 20 }, () => many.slice(0, MAX_QUERY_VERTICES / 10));
    expect(invalidGeometry(() => fromEsriGeometry({ paths: manyPaths }))).toMatch(/vertices/);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe("projection", () => {
  it("projects 4326 ↔ 3857 to the published figures, with the Esri aliases", () => {
    const p = project({ type: "Point", coordinates: [180, 85.0511287798066] }, 4326, 102100) as {
      coordinates: number[];
    };
    expect(p.coordinates[0]).toBeCloseTo(20037508.342789244, 6);
    expect(p.coordinates[1]).toBeCloseTo(20037508.342789244, 3);
    const back = project({ type: "Point", coordinates: [-13627665.271218073, 4547675.354340557] }, 3857, 4326) as {
      coordinates: number[];
    };
    expect(back.coordinates[0]).toBeCloseTo(-122.4194, 9);
    expect(back.coordinates[1]).toBeCloseTo(37.7749, 9);
    for (const alias of [102100, 102113, 900913, 3785]) expect(canonicalWkid(alias)).toBe(3857);
    // the poles clamp to the square map instead of going to infinity
    const pole = project({ type: "Point", coordinates: [0, 90] }, 4326, 3857) as { coordinates: number[] };
    expect(pole.coordinates[1]).toBeCloseTo(20037508.342789244, 3);
    // z survives
    expect(project({ type: "Point", coordinates: [0, 0, 7] }, 4326, 3857)).toEqual({
      type: "Point",
      coordinates: [0, expect.closeTo(0, 6), 7],
    });
  });

  it("keeps Web Mercator beyond the antimeridian beyond it (a web map's envelope wider than the world)", () => {
    const wide = project(
      {
        type: "Polygon",
        coordinates: [
          [
            [-30e6, -30e6],
            [30e6, -30e6],
            [30e6, 30e6],
            [-30e6, 30e6],
            [-30e6, -30e6],
          ],
        ],
      },
      102100,
      4326,
    ) as Polygon;
    const xs = (wide.coordinates[0] ?? []).map((p) => p[0] as number);
    expect(Math.min(...xs)).toBeCloseTo(-269.4945852358564, 9);
    expect(Math.max(...xs)).toBeCloseTo(269.4945852358564, 9);
    const east = project({ type: "Point", coordinates: [190, 0] }, 4326, 3857) as { coordinates: number[] };
    expect(east.coordinates[0]).toBeCloseTo(21150703.25, 1);
  });

  it("knows UTM and other codes without files, reads the rest from the EPSG index, refuses unknown codes", () => {
    expect(hasCrs(32633)).toBe(true);
    const utm = project({ type: "Point", coordinates: [15, 0] }, 4326, 32633) as { coordinates: number[] };
    expect(utm.coordinates[0]).toBeCloseTo(500000, 3);
    expect(utm.coordinates[1]).toBeCloseTo(0, 3);
    expect(crsInfo(4326).geographic).toBe(true);
    expect(crsInfo(2277)).toMatchObject({ geographic: false, metersPerUnit: expect.closeTo(1200 / 3937, 9) });
    expect(hasCrs(3067)).toBe(true); // ETRS-TM35FIN, from the index
    // ArcGIS's default grids: 1e-9 degree, 0.1 mm in the system's unit; none for an unknown system.
    expect(xyResolution(4326)).toBe(1e-9);
    expect(xyResolution(102100)).toBe(1e-4);
    expect(xyResolution(2277)).toBeCloseTo(1e-4 / (1200 / 3937), 12);
    expect(xyResolution(0)).toBeUndefined();
    expect(xyResolution(999_999)).toBeUndefined();
    expect(hasCrs(999_999)).toBe(false);
    expect(hasCrs(-1)).toBe(false);
    expect(() => requireCrs(123456789, "outSR")).toThrow(ApiError);
    expect(detailsOf(() => project({ type: "Point", coordinates: [0, 0] }, 4326, 999_999))[0]).toBe(
      "'outSR' parameter is invalid",
    );
    expect(detailsOf(() => project({ type: "Point", coordinates: [0, 0] }, 999_998, 4326))[0]).toBe(
      "'inSR' parameter is invalid",
    );
  });

  it("registers a dataset's own WKT (latitude-first axes do not swap stored coordinates)", () => {
    const wkt =
      'PROJCS["Local Transverse Mercator",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],' +
      'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AXIS["Latitude",NORTH],AXIS["Longitude",EAST]],' +
      'PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",15],' +
      'PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],' +
      'UNIT["metre",1],AXIS["Northing",NORTH],AXIS["Easting",EAST]]';
    expect(hasCrs(990_001)).toBe(false);
    expect(registerCrs(990_001, wkt)).toBe(true);
    const p = project({ type: "Point", coordinates: [15, 0] }, 4326, 990_001) as { coordinates: number[] };
    expect(p.coordinates[0]).toBeCloseTo(500000, 3);
    expect(p.coordinates[1]).toBeCloseTo(0, 3);
    // a code mapgate knows keeps its own definition
    expect(registerCrs(3857, "+proj=longlat +datum=WGS84")).toBe(true);
    const m = project({ type: "Point", coordinates: [180, 0] }, 4326, 3857) as { coordinates: number[] };
    expect(m.coordinates[0]).toBeCloseTo(20037508.342789244, 6);
    expect(registerCrs(990_002, "this is no definition")).toBe(false);
  });

  it("projects bounds along their edges", () => {
    const b = projectBounds([-180, -85, 180, 85], 4326, 3857);
    expect(b[0]).toBeCloseTo(-20037508.342789244, 3);
    expect(b[3]).toBeGreaterThan(19_000_000);
  });

  it("rounds to geometryPrecision", () => {
    expect(roundCoordinates({ type: "Point", coordinates: [1.23456, -9.87654, 3.33333] }, 2)).toEqual({
      type: "Point",
      coordinates: [1.23, -9.88, 3.33],
    });
    expect(roundCoordinates({ type: "Point", coordinates: [1.5, 2.4] }, 0)).toEqual({
      type: "Point",
      coordinates: [2, 2],
    });
  });
});

describe("maxAllowableOffset", () => {
  it("drops vertices within the offset and keeps the shape's corners", () => {
    const line = {
      type: "LineString" as const,
      coordinates: [
        [0, 0],
        [1, 0.01],
        [2, -0.01],
        [3, 0],
        [3, 5],
      ],
    };
    expect(generalize(line, 0.1)).toEqual({
      type: "LineString",
      coordinates: [
        [0, 0],
        [3, 0],
        [3, 5],
      ],
    });
  });

  it("keeps rings valid: at least four positions, collapsed holes and polygons dropped", () => {
    const circle = Array.from({ length: 64 }, (_, i) => [
      Math.cos((i * Math.PI) / 32) * 10,
      Math.sin((i * Math.PI) / 32) * 10,
    ]);
    circle.push(circle[0] as number[]);
    const small = square(1, 1, 0.01);
    const g = generalize({ type: "Polygon", coordinates: [circle, small] }, 1) as Polygon;
    expect(g.coordinates).toHaveLength(1);
    const ring = g.coordinates[0] as number[][];
    expect(ring.length).toBeGreaterThanOrEqual(4);
    expect(ring.length).toBeLessThan(circle.length);
    expect(ring[0]).toEqual(ring[ring.length - 1]);
    expect(simplifyRing(square(0, 0, 1), 5)).toBeNull();
    expect(generalize({ type: "MultiPolygon", coordinates: [[square(0, 0, 1)], [circle]] }, 2)).toMatchObject({
      type: "MultiPolygon",
      coordinates: [expect.any(Array)],
    });
    expect(generalize({ type: "Polygon", coordinates: [square(0, 0, 1)] }, 5)).toBeNull();
  });
});
