// The GeoPackage writer (demo data and fixtures) and the demo world.gpkg: the files open read-only in node:sqlite
// with the GeoPackage markers and tables, their blobs decode (with a minimal reader here, so the writer is not
// checked against itself) to what was written, the R*Tree indexes every non-empty geometry, and GDAL reads the
// same layers, counts, types and extents and passes its GeoPackage validator.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Feature, FeatureCollection, Geometry, Position } from "geojson";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GPKG_APPLICATION_ID,
  GPKG_USER_VERSION,
  type GeoPackageLayer,
  writeGeoPackage,
  type WrittenLayer,
} from "#shared/features/geopackage-writer.ts";
import {
  DEMO_GEOPACKAGE_FILE,
  DEMO_GEOPACKAGE_LAYERS,
  writeDemoGeoPackage,
} from "#infra/local/demo/world-geopackage.ts";
import { square } from "./helpers/shapes.ts";

// ---- A minimal GeoPackage blob reader (header, then ISO WKB, 2D), independent of the writer ----

interface Decoded {
  readonly srsId: number;
  readonly empty: boolean;
  /** [minx, maxx, miny, maxy] as the header stores it, when it has one. */
  readonly envelope?: number[];
  readonly geometry: Geometry;
}

function decodeBlob(blob: Uint8Array): Decoded {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  expect(String.fromCharCode(blob[0] ?? 0, blob[1] ?? 0)).toBe("GP");
  expect(blob[2]).toBe(0);
  const flags = blob[3] ?? 0;
  const little = (flags & 1) === 1;
  const envelopeKind = (flags >> 1) & 7;
  const envelopeDoubles = [0, 4, 6, 6, 8][envelopeKind] ?? 0;
  const envelope = Array.from({ length: envelopeDoubles }, (_, i) => view.getFloat64(8 + 8 * i, little));
  let offset = 8 + 8 * envelopeDoubles;
  const wkb = (): Geometry => {
    const le = view.getUint8(offset) === 1;
    const type = view.getUint32(offset + 1, le);
    offset += 5;
    const u32 = () => {
      offset += 4;
      return view.getUint32(offset - 4, le);
    };
    const position = (): Position => {
      offset += 16;
      return [view.getFloat64(offset - 16, le), view.getFloat64(offset - 8, le)];
    };
    const positions = () => Array.from({ length: u32() }, position);
    const parts = <T extends Geometry>() => Array.from({ length: u32() }, () => wkb() as T);
    switch (type) {
      case 1:
        return { type: "Point", coordinates: position() };
      case 2:
        return { type: "LineString", coordinates: positions() };
      case 3:
        return { type: "Polygon", coordinates: Array.from({ length: u32() }, positions) };
      case 4:
        return {
          type: "MultiPoint",
          coordinates: parts<{ type: "Point"; coordinates: Position }>().map((p) => p.coordinates),
        };
      case 5:
        return {
          type: "MultiLineString",
          coordinates: parts<{ type: "LineString"; coordinates: Position[] }>().map((p) => p.coordinates),
        };
      case 6:
        return {
          type: "MultiPolygon",
          coordinates: parts<{ type: "Polygon"; coordinates: Position[][] }>().map((p) => p.coordinates),
        };
      default:
        throw new Error(`unexpected WKB type ${type}`);
    }
  };
  const geometry = wkb();
  expect(offset).toBe(blob.length);
  return {
    srsId: view.getInt32(4, little),
    empty: (flags & 0x10) !== 0,
    ...(envelopeDoubles ? { envelope } : {}),
    geometry,
  };
}

/** [minx, miny, maxx, maxy] of a geometry's positions; undefined when it has none. */
function bounds(geometry: Geometry): [number, number, number, number] | undefined {
  const all: Position[] = [];
  const walk = (c: unknown): void => {
    if (Array.isArray(c) && typeof c[0] === "number") all.push(c as Position);
    else if (Array.isArray(c)) c.forEach(walk);
  };
  if (geometry.type !== "GeometryCollection") walk(geometry.coordinates);
  const xs = all.map((p) => p[0] ?? NaN).filter((x) => !Number.isNaN(x));
  const ys = all.map((p) => p[1] ?? NaN).filter((y) => !Number.isNaN(y));
  return xs.length ? [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] : undefined;
}

// ---- GDAL, when installed ----

const hasTool = (tool: string) => !spawnSync(tool, ["--version"], { stdio: "ignore" }).error;
const GDAL = hasTool("ogrinfo") && hasTool("ogr2ogr");
const GDAL_NOTE = GDAL ? "" : " — SKIPPED: GDAL's ogrinfo/ogr2ogr are not installed";

/** GDAL's GeoPackage validator (a Python script shipped with GDAL's Python utilities), if it can be found. */
function findValidator(): string | undefined {
  const found = spawnSync(
    "python3",
    [
      "-c",
      "import importlib.util as u; s = u.find_spec('osgeo_utils.samples.validate_gpkg'); print(s.origin if s else '')",
    ],
    { encoding: "utf8" },
  );
  const candidates = [
    found.stdout?.trim() ?? "",
    "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py",
  ];
  return candidates.find((path) => path && existsSync(path));
}
const VALIDATOR = GDAL ? findValidator() : undefined;
const VALIDATOR_NOTE = !GDAL || VALIDATOR ? "" : " (GDAL's validate_gpkg.py not found: validation not run)";

const ogrinfo = (...args: string[]) => execFileSync("ogrinfo", ["-ro", ...args], { encoding: "utf8" });

/** Per layer, what `ogrinfo -ro -al -so` reports. */
function gdalSummary(file: string): Map<string, { geometry: string; count: number; extent?: number[] }> {
  const out = ogrinfo("-al", "-so", file);
  const layers = new Map<string, { geometry: string; count: number; extent?: number[] }>();
  for (const block of out.split(/\n(?=Layer name: )/).slice(1)) {
    const name = /^Layer name: (.+)$/m.exec(block)?.[1] ?? "";
    const geometry = /^Geometry: (.+)$/m.exec(block)?.[1] ?? "";
    const count = Number(/^Feature Count: (\d+)$/m.exec(block)?.[1]);
    const e = /^Extent: \((\S+), (\S+)\) - \((\S+), (\S+)\)$/m.exec(block);
    layers.set(name, { geometry, count, ...(e ? { extent: e.slice(1).map(Number) } : {}) });
  }
  return layers;
}

function validate(file: string): void {
  if (!VALIDATOR) return;
  const run = spawnSync("python3", [VALIDATOR, "--extra", file], { encoding: "utf8" });
  expect(`${run.stdout}${run.stderr}`.trim()).toBe("");
  expect(run.status).toBe(0);
}

const ogrGeoJson = (file: string, layer: string, ...args: string[]): FeatureCollection =>
  JSON.parse(
    execFileSync("ogr2ogr", ["-f", "GeoJSON", "/vsistdout/", file, layer, ...args], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    }),
  ) as FeatureCollection;

// ---- The fixture ----

const FIXTURE: GeoPackageLayer[] = [
  {
    name: "points",
    identifier: "Points of interest",
    description: "a few points",
    geometryType: "POINT",
    columns: [
      { name: "name", type: "TEXT", notNull: true },
      { name: "code", type: "TEXT", maxLength: 10 },
      { name: "rank", type: "INTEGER" },
      { name: "score", type: "REAL" },
      { name: "open", type: "BOOLEAN" },
      { name: "since", type: "DATE" },
      { name: "seen", type: "DATETIME" },
    ],
    rows: [
      {
        values: {
          name: "Louvre",
          code: "LV",
          rank: 1,
          score: 9.5,
          open: true,
          since: new Date("1793-08-10T00:00:00Z"),
          seen: new Date("2024-05-01T12:34:56.789Z"),
        },
        geometry: { type: "Point", coordinates: [2.3376, 48.8606] },
      },
      { values: { name: "Nowhere", open: false }, geometry: null },
      {
        id: 100,
        values: { name: "Sydney Opera", rank: 3 },
        geometry: { type: "Point", coordinates: [151.2153, -33.8568] },
      },
      // An empty point: NaN, NaN in WKB, flagged empty, outside the index.
      { values: { name: "Empty" }, geometry: { type: "Point", coordinates: [] } },
    ],
  },
  {
    name: "lines",
    geometryType: "LINESTRING",
    srsId: 3857,
    columns: [{ name: "label", type: "TEXT" }],
    rows: [
      {
        values: { label: "a" },
        geometry: {
          type: "LineString",
          coordinates: [
            [-1000, 2000],
            [3000.5, -4000.25],
            [5000, 6000],
          ],
        },
      },
    ],
  },
  {
    name: "polygons",
    geometryType: "POLYGON",
    columns: [{ name: "area", type: "DOUBLE" }],
    rows: [{ values: { area: 84 }, geometry: { type: "Polygon", coordinates: [square(0, 0, 10), square(2, 2, 4)] } }],
  },
  {
    name: "multipoints",
    geometryType: "MULTIPOINT",
    columns: [],
    rows: [
      {
        geometry: {
          type: "MultiPoint",
          coordinates: [
            [1, 1],
            [-2, 5],
          ],
        },
      },
      { geometry: { type: "Point", coordinates: [7, -7] } },
    ],
  },
  {
    name: "multilines",
    geometryType: "MULTILINESTRING",
    columns: [],
    rows: [
      {
        geometry: {
          type: "MultiLineString",
          coordinates: [
            [
              [0, 0],
              [1, 1],
            ],
            [
              [10, 10],
              [11, 12],
            ],
          ],
        },
      },
    ],
  },
  {
    name: "multipolygons",
    geometryType: "MULTIPOLYGON",
    columns: [{ name: "name", type: "TEXT" }],
    rows: [
      {
        values: { name: "two" },
        geometry: { type: "MultiPolygon", coordinates: [[square(-20, -10, 5)], [square(30, 40, 1)]] },
      },
      { values: { name: "promoted" }, geometry: { type: "Polygon", coordinates: [square(100, -50, 2)] } },
      { values: { name: "empty" }, geometry: { type: "MultiPolygon", coordinates: [] } },
    ],
  },
  {
    name: "notes",
    description: "an attribute table",
    columns: [
      { name: "text", type: "TEXT", notNull: true },
      { name: "size", type: "INTEGER" },
    ],
    rows: [{ values: { text: "first", size: 1 } }, { values: { text: "second" } }],
  },
];

/** The geometry each fixture row should read back as (single parts promoted into multi columns). */
function expectedGeometry(layer: GeoPackageLayer, geometry: Geometry): Geometry {
  if (layer.geometryType === "MULTIPOINT" && geometry.type === "Point") {
    return { type: "MultiPoint", coordinates: [geometry.coordinates] };
  }
  if (layer.geometryType === "MULTIPOLYGON" && geometry.type === "Polygon") {
    return { type: "MultiPolygon", coordinates: [geometry.coordinates] };
  }
  return geometry;
}

const GDAL_TYPES: Record<string, string> = {
  POINT: "Point",
  LINESTRING: "Line String",
  POLYGON: "Polygon",
  MULTIPOINT: "Multi Point",
  MULTILINESTRING: "Multi Line String",
  MULTIPOLYGON: "Multi Polygon",
};

const rowsOf = (layer: GeoPackageLayer) => [...layer.rows];

describe("GeoPackage writer", () => {
  let dir: string;
  let file: string;
  let written: WrittenLayer[];
  let db: DatabaseSync;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mapgate-gpkg-"));
    file = join(dir, "fixture.gpkg");
    written = writeGeoPackage(file, FIXTURE, { lastChange: new Date("2024-01-02T03:04:05.678Z") });
    db = new DatabaseSync(file, { readOnly: true });
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("marks the file as a GeoPackage 1.3 (application_id 'GPKG', user_version 10300) and leaves no temporary file", () => {
    expect(db.prepare("PRAGMA application_id").get()).toEqual({ application_id: GPKG_APPLICATION_ID });
    expect(db.prepare("PRAGMA user_version").get()).toEqual({ user_version: GPKG_USER_VERSION });
    // As readers that do not speak SQLite check it: at offsets 68 and 60 of the header, big-endian.
    const header = readFileSync(file).subarray(0, 100);
    expect(header.subarray(68, 72).toString("latin1")).toBe("GPKG");
    expect(header.readUInt32BE(60)).toBe(10300);
    expect(readdirSync(dir)).toEqual(["fixture.gpkg"]);
  });

  it("has the required spatial reference systems and describes each table in gpkg_contents and gpkg_geometry_columns", () => {
    const srs = db
      .prepare(
        "SELECT srs_id, organization, organization_coordsys_id, definition FROM gpkg_spatial_ref_sys ORDER BY srs_id",
      )
      .all();
    expect(srs.map((r) => [r.srs_id, r.organization, r.organization_coordsys_id])).toEqual([
      [-1, "NONE", -1],
      [0, "NONE", 0],
      [3857, "EPSG", 3857],
      [4326, "EPSG", 4326],
    ]);
    expect(srs[0]?.definition).toBe("undefined");
    expect(String(srs[3]?.definition)).toMatch(/^GEOGCS\["WGS 84".*AUTHORITY\["EPSG","4326"\]\]$/);

    const contents = db.prepare("SELECT * FROM gpkg_contents ORDER BY rowid").all();
    expect(contents.map((c) => [c.table_name, c.data_type, c.srs_id])).toEqual([
      ["points", "features", 4326],
      ["lines", "features", 3857],
      ["polygons", "features", 4326],
      ["multipoints", "features", 4326],
      ["multilines", "features", 4326],
      ["multipolygons", "features", 4326],
      ["notes", "attributes", null],
    ]);
    expect(contents[0]).toMatchObject({ identifier: "Points of interest", description: "a few points" });
    expect(contents[0]).toMatchObject({ last_change: "2024-01-02T03:04:05.678Z" });
    expect(contents[6]).toMatchObject({ identifier: "notes", min_x: null, max_y: null });
    // Each extent is the union of the non-empty geometries' bounds.
    for (const layer of FIXTURE.filter((l) => l.geometryType)) {
      const all = rowsOf(layer)
        .flatMap((r) => (r.geometry ? [bounds(r.geometry)] : []))
        .filter((b) => b !== undefined);
      const expected = [
        Math.min(...all.map((b) => b[0])),
        Math.min(...all.map((b) => b[1])),
        Math.max(...all.map((b) => b[2])),
        Math.max(...all.map((b) => b[3])),
      ];
      const row = contents.find((c) => c.table_name === layer.name);
      expect([row?.min_x, row?.min_y, row?.max_x, row?.max_y], layer.name).toEqual(expected);
      expect(written.find((w) => w.name === layer.name)?.extent, layer.name).toEqual(expected);
    }

    expect(db.prepare("SELECT * FROM gpkg_geometry_columns ORDER BY table_name").all()).toEqual(
      FIXTURE.filter((l) => l.geometryType)
        .map((l) => ({
          table_name: l.name,
          column_name: "geom",
          geometry_type_name: l.geometryType,
          srs_id: l.srsId ?? 4326,
          z: 0,
          m: 0,
        }))
        .sort((a, b) => a.table_name.localeCompare(b.table_name)),
    );
    expect(written.map((w) => [w.name, w.count])).toEqual(FIXTURE.map((l) => [l.name, rowsOf(l).length]));
  });

  it("declares an R*Tree per feature table, with its triggers, holding each non-empty geometry's bounds", () => {
    const extensions = db.prepare("SELECT table_name, column_name, extension_name, scope FROM gpkg_extensions").all();
    const features = FIXTURE.filter((l) => l.geometryType);
    expect(extensions).toEqual(
      features.map((l) => ({
        table_name: l.name,
        column_name: "geom",
        extension_name: "gpkg_rtree_index",
        scope: "write-only",
      })),
    );
    for (const layer of features) {
      const rtree = `rtree_${layer.name}_geom`;
      const triggers = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name")
        .all(layer.name)
        .map((t) => t.name);
      expect(triggers).toEqual(
        ["delete", "insert", "update1", "update2", "update3", "update4"].map((s) => `${rtree}_${s}`),
      );
      const entries = db.prepare(`SELECT id, minx, maxx, miny, maxy FROM "${rtree}" ORDER BY id`).all();
      const rows = db.prepare(`SELECT fid, geom FROM "${layer.name}" ORDER BY fid`).all();
      const indexed = rows.filter((r) => r.geom instanceof Uint8Array && !decodeBlob(r.geom).empty);
      expect(entries.map((e) => e.id)).toEqual(indexed.map((r) => r.fid));
      for (const [i, entry] of entries.entries()) {
        const b = bounds(decodeBlob(indexed[i]?.geom as Uint8Array).geometry);
        if (!b) throw new Error("indexed geometry without bounds");
        // The R*Tree keeps 32-bit floats, rounded outwards: it holds the bounds, within a float's precision.
        const slack = (v: number) => Math.max(1e-6, Math.abs(v) * 1e-6);
        expect(Number(entry.minx)).toBeLessThanOrEqual(b[0]);
        expect(Number(entry.miny)).toBeLessThanOrEqual(b[1]);
        expect(Number(entry.maxx)).toBeGreaterThanOrEqual(b[2]);
        expect(Number(entry.maxy)).toBeGreaterThanOrEqual(b[3]);
        expect(b[0] - Number(entry.minx)).toBeLessThan(slack(b[0]));
        expect(Number(entry.maxy) - b[3]).toBeLessThan(slack(b[3]));
      }
    }
  });

  it("stores geometry blobs that decode to what was written, with envelopes for all but points", () => {
    for (const layer of FIXTURE.filter((l) => l.geometryType)) {
      const stored = db.prepare(`SELECT fid, geom FROM "${layer.name}" ORDER BY rowid`).all();
      const input = rowsOf(layer);
      expect(stored).toHaveLength(input.length);
      for (const [i, row] of input.entries()) {
        const blob = stored[i]?.geom;
        if (!row.geometry) {
          expect(blob, `${layer.name} ${i}`).toBeNull();
          continue;
        }
        if (!(blob instanceof Uint8Array)) throw new Error(`${layer.name} ${i}: no blob`);
        const decoded = decodeBlob(blob);
        expect(decoded.srsId).toBe(layer.srsId ?? 4326);
        const b = bounds(row.geometry);
        expect(decoded.empty).toBe(b === undefined);
        const expected = expectedGeometry(layer, row.geometry);
        if (expected.type === "Point" && !b) {
          expect(decoded.geometry.type).toBe("Point");
          expect((decoded.geometry as { coordinates: number[] }).coordinates.every(Number.isNaN)).toBe(true);
        } else {
          expect(decoded.geometry).toEqual(expected);
        }
        const envelope = b && expected.type !== "Point" ? [b[0], b[2], b[1], b[3]] : undefined;
        expect(decoded.envelope).toEqual(envelope);
      }
    }
  });

  it("numbers features from 1 unless an id is given, and stores dates, booleans and text as the specification says", () => {
    const points = db.prepare('SELECT * FROM "points" ORDER BY fid').all();
    expect(points.map((p) => p.fid)).toEqual([1, 2, 100, 101]);
    expect(points[0]).toMatchObject({
      name: "Louvre",
      code: "LV",
      rank: 1,
      score: 9.5,
      open: 1,
      since: "1793-08-10",
      seen: "2024-05-01T12:34:56.789Z",
    });
    expect(points[1]).toMatchObject({ name: "Nowhere", open: 0, rank: null, since: null });
    const columns = db.prepare('PRAGMA table_info("points")').all();
    expect(columns.map((c) => [c.name, c.type, c.notnull, c.pk])).toEqual([
      ["fid", "INTEGER", 1, 1],
      ["geom", "POINT", 0, 0],
      ["name", "TEXT", 1, 0],
      ["code", "TEXT(10)", 0, 0],
      ["rank", "INTEGER", 0, 0],
      ["score", "REAL", 0, 0],
      ["open", "BOOLEAN", 0, 0],
      ["since", "DATE", 0, 0],
      ["seen", "DATETIME", 0, 0],
    ]);
    expect(db.prepare('SELECT * FROM "notes" ORDER BY fid').all()).toEqual([
      { fid: 1, text: "first", size: 1 },
      { fid: 2, text: "second", size: null },
    ]);
  });

  it("refuses what a GeoPackage cannot hold, leaving no file behind and an existing file untouched", () => {
    const target = join(dir, "refused.gpkg");
    const missingValue: GeoPackageLayer[] = [
      { name: "t", columns: [{ name: "a", type: "TEXT", notNull: true }], rows: [{ values: {} }] },
    ];
    const bad: [string, GeoPackageLayer[]][] = [
      [
        "a polygon in a point table",
        [
          {
            name: "points",
            geometryType: "POINT",
            columns: [{ name: "name", type: "TEXT" }],
            rows: [{ values: { name: "x" }, geometry: { type: "Polygon", coordinates: [square(0, 0, 1)] } }],
          },
        ],
      ],
      ["a missing NOT NULL value", missingValue],
      [
        "a geometry in an attribute table",
        [{ name: "t", columns: [], rows: [{ geometry: { type: "Point", coordinates: [0, 0] } }] }],
      ],
      ["a duplicate column", [{ name: "t", columns: [{ name: "FID", type: "INTEGER" }], rows: [] }]],
      ["a reserved table name", [{ name: "gpkg_things", columns: [], rows: [] }]],
      [
        "two tables of one name",
        [
          { name: "t", columns: [], rows: [] },
          { name: "T", columns: [], rows: [] },
        ],
      ],
      [
        "a geometry collection",
        [
          {
            name: "t",
            geometryType: "POINT",
            columns: [],
            rows: [{ geometry: { type: "GeometryCollection", geometries: [] } }],
          },
        ],
      ],
    ];
    for (const [what, layers] of bad) expect(() => writeGeoPackage(target, layers), what).toThrow();
    expect(readdirSync(dir).sort()).toEqual(["fixture.gpkg"]);
    writeFileSync(target, "previous");
    expect(() => writeGeoPackage(target, missingValue)).toThrow();
    expect(readFileSync(target, "utf8")).toBe("previous");
    rmSync(target);
  });

  it(`is read by GDAL: layers, types, counts and extents, features as written, and its validator passes${GDAL_NOTE}${VALIDATOR_NOTE}`, (ctx) => {
    if (!GDAL) return ctx.skip();
    const list = ogrinfo("-so", file);
    for (const layer of FIXTURE) {
      const type = layer.geometryType ? GDAL_TYPES[layer.geometryType] : "None";
      expect(list).toContain(`: ${layer.name} (${type})`);
    }
    const summary = gdalSummary(file);
    expect([...summary.keys()]).toEqual(FIXTURE.map((l) => l.name));
    for (const layer of FIXTURE) {
      const gdal = summary.get(layer.name);
      expect(gdal?.geometry, layer.name).toBe(layer.geometryType ? GDAL_TYPES[layer.geometryType] : "None");
      expect(gdal?.count, layer.name).toBe(rowsOf(layer).length);
      const extent = written.find((w) => w.name === layer.name)?.extent;
      if (extent) {
        // ogrinfo prints six decimals: [minx, miny] - [maxx, maxy].
        expect(gdal?.extent?.map((v, i) => Math.abs(v - (extent[i] ?? NaN)) < 1e-6)).toEqual([true, true, true, true]);
      } else {
        expect(gdal?.extent).toBeUndefined();
      }
    }

    const points = ogrGeoJson(file, "points").features;
    expect(points.map((f) => f.properties)).toEqual([
      {
        name: "Louvre",
        code: "LV",
        rank: 1,
        score: 9.5,
        open: true,
        since: "1793-08-10",
        seen: "2024-05-01T12:34:56.789Z",
      },
      { name: "Nowhere", code: null, rank: null, score: null, open: false, since: null, seen: null },
      { name: "Sydney Opera", code: null, rank: 3, score: null, open: null, since: null, seen: null },
      { name: "Empty", code: null, rank: null, score: null, open: null, since: null, seen: null },
    ]);
    expect(points.slice(0, 3).map((f) => f.geometry)).toEqual([
      { type: "Point", coordinates: [2.3376, 48.8606] },
      null,
      { type: "Point", coordinates: [151.2153, -33.8568] },
    ]);
    for (const layer of FIXTURE.filter((l) => l.geometryType && l.geometryType !== "POINT")) {
      const name = layer.name;
      const features: Feature[] = ogrGeoJson(file, name).features;
      const input = rowsOf(layer);
      expect(
        features.map((f) => f.geometry),
        name,
      ).toEqual(input.map((r) => (r.geometry ? expectedGeometry(layer, r.geometry) : null)));
    }
    // GDAL answers a bounding-box filter from the R*Tree.
    const near = ogrGeoJson(file, "multipolygons", "-spat", "99", "-51", "103", "-47").features;
    expect(near.map((f) => f.properties?.name)).toEqual(["promoted"]);
    validate(file);
  });
  it(`keeps the R*Tree in step through its triggers when GDAL edits the file; bare SQLite cannot${GDAL_NOTE}`, (ctx) => {
    if (!GDAL) return ctx.skip();
    const copy = join(dir, "edited.gpkg");
    const added = join(dir, "added.geojson");
    writeFileSync(copy, readFileSync(file));
    writeFileSync(
      added,
      JSON.stringify({
        type: "Feature",
        properties: { name: "Added" },
        geometry: { type: "Point", coordinates: [10, 20] },
      }),
    );
    execFileSync("ogr2ogr", ["-update", "-append", copy, added, "-nln", "points"]);
    const edited = new DatabaseSync(copy);
    try {
      const fid = edited.prepare("SELECT fid FROM points WHERE name = 'Added'").get()?.fid;
      expect(
        edited.prepare('SELECT minx, maxx, miny, maxy FROM "rtree_points_geom" WHERE id = ?').get(Number(fid)),
      ).toEqual({
        minx: 10,
        maxx: 10,
        miny: 20,
        maxy: 20,
      });
      // Without the GeoPackage functions a write fails rather than leaving the index stale.
      expect(() => edited.exec("UPDATE points SET geom = geom WHERE fid = 1")).toThrow(/no such function: ST_IsEmpty/);
    } finally {
      edited.close();
      rmSync(copy);
      rmSync(added);
    }
  });
});

describe("demo GeoPackage (world.gpkg)", () => {
  let dir: string;
  let file: string;
  let written: WrittenLayer[];
  let seconds: number;
  let db: DatabaseSync;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mapgate-world-"));
    file = join(dir, DEMO_GEOPACKAGE_FILE);
    const started = performance.now();
    written = writeDemoGeoPackage(file);
    seconds = (performance.now() - started) / 1000;
    db = new DatabaseSync(file, { readOnly: true });
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("indexes places.country, what the demo's queries filter on beside a window", () => {
    const indexes = db
      .prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
      .all();
    expect(indexes).toEqual([
      {
        name: "places_country_idx",
        tbl_name: "places",
        sql: 'CREATE INDEX "places_country_idx" ON "places" ("country")',
      },
    ]);
  });

  it("holds the countries, more than 100,000 places and the attribution table, written in seconds", () => {
    // About 2 s on a laptop core; the bound leaves room for a busy machine.
    expect(seconds).toBeLessThan(30);
    const counts = Object.fromEntries(written.map((w) => [w.name, w.count]));
    expect(counts).toEqual({ countries: 241, places: expect.any(Number), attribution: 2 });
    expect(counts.places).toBeGreaterThan(100_000);
    expect(Object.values(DEMO_GEOPACKAGE_LAYERS)).toEqual(written.map((w) => w.name));
    for (const { name, count } of written) {
      expect(db.prepare(`SELECT count(*) AS n FROM "${name}"`).get()?.n).toBe(count);
    }
    expect(db.prepare('SELECT count(*) AS n FROM "rtree_places_geom"').get()?.n).toBe(counts.places);
    expect(db.prepare('SELECT count(*) AS n FROM "rtree_countries_geom"').get()?.n).toBe(241);
    expect(db.prepare("SELECT data_type FROM gpkg_contents WHERE table_name = 'attribution'").get()).toEqual({
      data_type: "attributes",
    });
    expect(db.prepare("SELECT licence, attribution_required FROM attribution ORDER BY fid").all()).toEqual([
      { licence: "Public domain", attribution_required: 0 },
      { licence: "CC BY 4.0", attribution_required: 1 },
    ]);
  });

  it("has Paris and Tokyo where they are, found through the R*Tree and inside their countries' envelopes", () => {
    const near = (lng: number, lat: number) =>
      db
        .prepare(
          'SELECT p.name, p.country, p.admin1_name, p.lat, p.lng, p.geom FROM places p JOIN "rtree_places_geom" r ON r.id = p.fid ' +
            "WHERE r.minx <= ? AND r.maxx >= ? AND r.miny <= ? AND r.maxy >= ?",
        )
        .all(lng + 0.05, lng - 0.05, lat + 0.05, lat - 0.05);
    const paris = near(2.35, 48.85).find((p) => p.name === "Paris");
    expect(paris).toMatchObject({ country: "FR", admin1_name: "Île-de-France" });
    expect(Number(paris?.lat)).toBeCloseTo(48.853, 2);
    expect(Number(paris?.lng)).toBeCloseTo(2.349, 2);
    expect(decodeBlob(paris?.geom as Uint8Array).geometry).toEqual({
      type: "Point",
      coordinates: [paris?.lng, paris?.lat],
    });
    const tokyo = near(139.69, 35.69).find((p) => p.name === "Tokyo");
    expect(tokyo).toMatchObject({ country: "JP" });

    for (const [country, [lng, lat]] of [
      ["France", [2.349, 48.853]],
      ["Japan", [139.69, 35.69]],
    ] as const) {
      const row = db.prepare("SELECT geom, iso_n3 FROM countries WHERE name = ?").get(country);
      const decoded = decodeBlob(row?.geom as Uint8Array);
      expect(decoded.geometry.type).toBe("MultiPolygon");
      const [minx = NaN, maxx = NaN, miny = NaN, maxy = NaN] = decoded.envelope ?? [];
      expect(lng > minx && lng < maxx && lat > miny && lat < maxy, country).toBe(true);
    }
    expect(db.prepare("SELECT iso_n3 FROM countries WHERE name = 'France'").get()).toEqual({ iso_n3: "250" });
  });

  it("winds country rings as RFC 7946 does: exteriors counter-clockwise, holes clockwise", () => {
    const area = (ring: Position[]) =>
      ring
        .slice(1)
        .reduce((sum, p, i) => sum + (ring[i]?.[0] ?? 0) * (p[1] ?? 0) - (p[0] ?? 0) * (ring[i]?.[1] ?? 0), 0);
    for (const row of db.prepare("SELECT name, geom FROM countries").all()) {
      const geometry = decodeBlob(row.geom as Uint8Array).geometry;
      if (geometry.type !== "MultiPolygon") throw new Error(`${String(row.name)}: ${geometry.type}`);
      for (const polygon of geometry.coordinates) {
        polygon.forEach((ring, i) => expect(area(ring) > 0, `${String(row.name)} ring ${i}`).toBe(i === 0));
      }
    }
  });

  it(`is read by GDAL with the same layers, counts and extents, and its validator passes${GDAL_NOTE}${VALIDATOR_NOTE}`, (ctx) => {
    if (!GDAL) return ctx.skip();
    const summary = gdalSummary(file);
    expect([...summary.entries()].map(([name, s]) => [name, s.geometry, s.count])).toEqual([
      ["countries", "Multi Polygon", 241],
      ["places", "Point", written[1]?.count],
      ["attribution", "None", 2],
    ]);
    const extent = summary.get("places")?.extent ?? [];
    expect(extent.map((v, i) => Math.abs(v - (written[1]?.extent?.[i] ?? NaN)) < 1e-6)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    const tokyo = ogrGeoJson(file, "places", "-where", "name = 'Tokyo' AND country = 'JP'").features;
    expect(tokyo.map((f) => [f.properties?.admin1_name, f.geometry])).toEqual([
      ["Tokyo", { type: "Point", coordinates: [139.69171, 35.6895] }],
    ]);
    validate(file);
  });
});

describe("a layer's indexes", () => {
  it("are made once the rows are in, each named apart from every table and index of the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-indexes-"));
    try {
      const file = join(dir, "indexes.gpkg");
      // "a" and "b_c", "a_b" and "c": both would be a_b_c_idx.
      writeGeoPackage(file, [
        { name: "a", columns: [{ name: "b_c", type: "TEXT" }], indexes: ["b_c"], rows: [{ values: { b_c: "x" } }] },
        { name: "a_b", columns: [{ name: "c", type: "INTEGER" }], indexes: ["c"], rows: [{ values: { c: 1 } }] },
      ]);
      const db = new DatabaseSync(file, { readOnly: true });
      try {
        expect(
          db
            .prepare("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .all(),
        ).toEqual([
          { name: "a_b_c_idx", tbl_name: "a" },
          { name: "a_b_c_idx2", tbl_name: "a_b" },
        ]);
        expect(db.prepare("SELECT count(*) AS n FROM a_b WHERE c = 1").get()).toEqual({ n: 1 });
      } finally {
        db.close();
      }
      expect(() =>
        writeGeoPackage(join(dir, "bad.gpkg"), [
          { name: "t", columns: [{ name: "x", type: "TEXT" }], indexes: ["y"], rows: [] },
        ]),
      ).toThrow("t: the index's column y is not among the layer's columns");
      expect(existsSync(join(dir, "bad.gpkg"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
