// quantizationParameters and resultType, on a real GeoPackage through the query engine: every mode × origin ×
// format × geometry type, decoded as the ArcGIS Maps SDK decodes a tile — the integers read against the extent and
// tolerance it asked for, never against the answer's transform — and checked against the source vertices projected
// to Web Mercator. f=pbf is read twice: from the raw protobuf, and (upper-left origin, the only one it knows) by
// the independent decoder arcgis-pbf-parser. The polygon is France from Natural Earth 1:50m (a few hundred
// vertices), as the demo data holds it.
import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import decodeArcgisPbf from "arcgis-pbf-parser";
import type { MultiPolygon, Polygon, Position } from "geojson";
import { PbfReader } from "pbf";
import { feature } from "topojson-client";
import type { GeometryCollection, Topology } from "topojson-specification";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GeoPackageLayer, writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { GeoPackage } from "#shared/features/geopackage.ts";
import { project } from "#shared/features/geometry/projection.ts";
import { planQuery } from "#shared/features/plan.ts";
import { runQuery } from "#shared/features/query.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { geoPackageDataset } from "#shared/features/dataset.ts";
import { MAX_RECORD_COUNT, STANDARD_MAX_RECORD_COUNT, TILE_MAX_RECORD_COUNT } from "#shared/features/layer-json.ts";
import { ApiError } from "#shared/errors.ts";
import { Params } from "#shared/http/params.ts";
import { Content } from "#shared/http/render.ts";
import { square } from "./helpers/shapes.ts";

const require = createRequire(import.meta.url);

function must<T>(v: T | null | undefined): T {
  if (v === null || v === undefined) throw new Error("missing");
  return v;
}

/** Paris in Web Mercator. */
const paris = (): number[] => {
  const g = project({ type: "Point", coordinates: must(POINTS[0]) }, 4326, 3857);
  return g.type === "Point" ? g.coordinates : [];
};

/** France's outline, Natural Earth 1:50m, rings wound as mapgate holds them (RFC 7946). */
function france(): Position[][][] {
  const topology = JSON.parse(readFileSync(require.resolve("world-atlas/countries-50m.json"), "utf8")) as Topology<{
    countries: GeometryCollection<{ name: string }>;
  }>;
  const found = feature(topology, topology.objects.countries).features.find((f) => f.properties.name === "France");
  const g = found?.geometry as Polygon | MultiPolygon;
  const polygons = g.type === "Polygon" ? [g.coordinates] : g.coordinates;
  // Metropolitan France and Corsica: the parts the tile below covers.
  return polygons.filter((p) => p[0]?.every(([x = 0, y = 0]) => x > -6 && x < 10 && y > 41 && y < 52));
}

// A wiggly path (a vertex every ~1 km) and points around Paris.
const wiggle: Position[] = Array.from({ length: 400 }, (_, i) => [-4 + i * 0.03, 46 + Math.sin(i / 7) * 0.8]);
const POINTS: Position[] = [
  [2.3522, 48.8566],
  [4.8357, 45.764],
  [-1.5536, 47.2184],
  [7.2619, 43.7102],
];

const LAYERS: Record<string, GeoPackageLayer> = {
  shapes: {
    name: "shapes",
    geometryType: "MULTIPOLYGON",
    columns: [{ name: "label", type: "TEXT" }],
    rows: [
      { values: { label: "France" }, geometry: { type: "MultiPolygon", coordinates: france() } },
      // A square with a hole, to check the winding of both.
      {
        values: { label: "holed" },
        geometry: { type: "Polygon", coordinates: [square(0, 44, 2, true), square(0.5, 44.5, 1, false)] },
      },
    ],
  },
  lines: {
    name: "lines",
    geometryType: "MULTILINESTRING",
    columns: [{ name: "label", type: "TEXT" }],
    rows: [{ values: { label: "wiggle" }, geometry: { type: "MultiLineString", coordinates: [wiggle, POINTS] } }],
  },
  points: {
    name: "points",
    geometryType: "POINT",
    columns: [{ name: "label", type: "TEXT" }],
    rows: POINTS.map((p, i) => ({ values: { label: `p${i}` }, geometry: { type: "Point", coordinates: p } })),
  },
  mpoints: {
    name: "mpoints",
    geometryType: "MULTIPOINT",
    columns: [{ name: "label", type: "TEXT" }],
    rows: [{ values: { label: "all" }, geometry: { type: "MultiPoint", coordinates: POINTS } }],
  },
  many: {
    name: "many",
    geometryType: "POINT",
    columns: [{ name: "label", type: "TEXT" }],
    rows: Array.from({ length: 9000 }, (_, i) => ({
      values: { label: `m${i}` },
      geometry: { type: "Point", coordinates: [(i % 100) / 50, Math.floor(i / 100) / 50] },
    })),
  },
};

let gpkg: GeoPackage;
const schemas = new Map<string, LayerSchema>();

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), "mapgate-quant-")), "q.gpkg");
  writeGeoPackage(file, Object.values(LAYERS));
  gpkg = await GeoPackage.open(file, "v1");
  for (const name of Object.keys(LAYERS)) {
    const s = gpkg.schema(name);
    if (!s || !("fields" in s)) throw new Error(`no schema for ${name}`);
    schemas.set(name, s);
  }
});
afterAll(() => gpkg?.close());

async function query(layer: string, params: Record<string, string>): Promise<unknown> {
  const f = params.f ?? "json";
  const answer = await runQuery(
    {
      params: new Params(new Map(Object.entries({ where: "1=1", outFields: "*", ...params }))),
      contentFormat: f === "json" ? undefined : f,
    },
    geoPackageDataset(gpkg, schemas.get(layer) as LayerSchema),
  );
  return answer;
}

async function refusal(layer: string, params: Record<string, string>): Promise<string[]> {
  const err = await query(layer, params).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe(400);
  return [...(err as ApiError).details];
}

// The SDK's tile: Web Mercator, 512 pixels wide, over France.
const TILE = { xmin: -1252344.2714243282, ymin: 5009377.085697312, xmax: 1252344.2714243282, ymax: 7514065.628545968 };
const TILE_TOLERANCE = (TILE.xmax - TILE.xmin) / 512;
const WEB_MERCATOR = { wkid: 102100, latestWkid: 3857 };

type Mode = "view" | "edit";
type Origin = "upperLeft" | "lowerLeft";

/** The request the SDK sends for one tile (FeatureLayerView2D), with the mode and origin under test. */
const tileRequest = (f: string, mode: Mode, originPosition: Origin, tolerance: number): Record<string, string> => ({
  f,
  resultType: "tile",
  returnGeometry: "true",
  spatialRel: "esriSpatialRelIntersects",
  geometry: JSON.stringify({ ...TILE, spatialReference: WEB_MERCATOR }),
  geometryType: "esriGeometryEnvelope",
  inSR: "102100",
  outSR: "102100",
  returnExceededLimitFeatures: "false",
  maxRecordCountFactor: "3",
  quantizationParameters: JSON.stringify({
    extent: { ...TILE, spatialReference: WEB_MERCATOR },
    mode,
    originPosition,
    tolerance,
  }),
});

/** Integers back to map coordinates as the SDK reads them: from the asked extent's corner, cells of the tolerance. */
const toMap = (x: number, y: number, origin: Origin, tolerance: number): Position => [
  TILE.xmin + x * tolerance,
  origin === "upperLeft" ? TILE.ymax - y * tolerance : TILE.ymin + y * tolerance,
];

interface Decoded {
  /** Each feature's parts in map coordinates (a point: one part of one position). */
  readonly features: Position[][][];
  readonly exceededTransferLimit: boolean;
  readonly transform: { origin: number | string; scale: number[]; translate: number[] } | undefined;
}

/** Delta-coded parts (the first vertex absolute) to map coordinates. */
function undelta(parts: number[][][], origin: Origin, tolerance: number): Position[][] {
  return parts.map((part) => {
    let x = 0;
    let y = 0;
    return part.map(([dx = 0, dy = 0], i) => {
      x = i ? x + dx : dx;
      y = i ? y + dy : dy;
      return toMap(x, y, origin, tolerance);
    });
  });
}

function decodeJson(answer: unknown, origin: Origin, tolerance: number): Decoded {
  const a = answer as {
    transform?: { originPosition: string; scale: number[]; translate: number[] };
    exceededTransferLimit: boolean;
    features: { geometry: Record<string, unknown> | null }[];
  };
  const features = a.features.map(({ geometry: g }): Position[][] => {
    if (!g) return [];
    if ("x" in g) return [[toMap(g.x as number, g.y as number, origin, tolerance)]];
    if ("points" in g) return undelta([g.points as number[][]], origin, tolerance);
    return undelta((g.paths ?? g.rings) as number[][][], origin, tolerance);
  });
  const t = a.transform;
  return {
    features,
    exceededTransferLimit: a.exceededTransferLimit,
    transform: t && { origin: t.originPosition, scale: t.scale, translate: t.translate },
  };
}

/** The raw FeatureCollection protobuf, read field by field (numbers as in pbf.ts's header). */
function decodePbf(answer: unknown, origin: Origin, tolerance: number): Decoded {
  const bytes = new Uint8Array((answer as Content).body);
  const features: Position[][][] = [];
  let exceededTransferLimit = false;
  let transform: Decoded["transform"];
  const pair = (r: PbfReader): number[] => {
    const v = [0, 0];
    r.readFields(
      (t, _: null, p) => {
        if (t === 1 || t === 2) v[t - 1] = p.readDouble();
      },
      null,
      r.readVarint() + r.pos,
    );
    return v;
  };
  const readGeometry = (r: PbfReader): Position[][] => {
    const lengths: number[] = [];
    const coords: number[] = [];
    r.readFields(
      (t, _: null, p) => {
        if (t === 2) p.readPackedVarint(lengths);
        else if (t === 3) p.readPackedSVarint(coords);
      },
      null,
      r.readVarint() + r.pos,
    );
    if (lengths.length === 0) return [[toMap(coords[0] ?? NaN, coords[1] ?? NaN, origin, tolerance)]];
    const parts: number[][][] = [];
    let at = 0;
    for (const n of lengths) {
      const part: number[][] = [];
      for (let i = 0; i < n; i++, at += 2) part.push([coords[at] ?? NaN, coords[at + 1] ?? NaN]);
      parts.push(part);
    }
    return undelta(parts, origin, tolerance);
  };
  const readFeatureResult = (t: number, _: null, r: PbfReader) => {
    if (t === 9) exceededTransferLimit = r.readBoolean();
    else if (t === 12) {
      const tr = { origin: 0, scale: [0, 0], translate: [0, 0] };
      r.readFields(
        (u, _x: null, p) => {
          if (u === 1) tr.origin = p.readVarint();
          else if (u === 2) tr.scale = pair(p);
          else if (u === 3) tr.translate = pair(p);
        },
        null,
        r.readVarint() + r.pos,
      );
      transform = tr;
    } else if (t === 15) {
      let parts: Position[][] = [];
      r.readFields(
        (u, _x: null, p) => {
          if (u === 2) parts = readGeometry(p);
        },
        null,
        r.readVarint() + r.pos,
      );
      features.push(parts);
    }
  };
  new PbfReader(bytes).readFields((t, _: null, r) => {
    if (t === 2)
      r.readFields(
        (u, _x: null, q) => {
          if (u === 1) q.readFields(readFeatureResult, null, q.readVarint() + q.pos);
        },
        null,
        r.readVarint() + r.pos,
      );
  }, null);
  return { features, exceededTransferLimit, transform };
}

/** The source geometry of a layer's features, every part projected to Web Mercator. */
function sourceParts(layer: string): Position[][][] {
  return [...must(LAYERS[layer]).rows].map((row) => {
    const g = project(must(row.geometry), 4326, 3857);
    switch (g.type) {
      case "Point":
        return [[g.coordinates]];
      case "MultiPoint":
        return [g.coordinates];
      case "LineString":
        return [g.coordinates];
      case "MultiLineString":
        return g.coordinates;
      case "Polygon":
        return esriWinding(g.coordinates);
      case "MultiPolygon":
        return g.coordinates.flatMap(esriWinding);
      default:
        throw new Error(g.type);
    }
  });
}

/** A polygon's rings as Esri JSON winds them (outer clockwise, holes counter-clockwise), as the answer gives them. */
const esriWinding = (rings: Position[][]): Position[][] =>
  rings.map((r, i) => (signedArea(r) < 0 === (i === 0) ? r : [...r].reverse()));

const near = (a: Position, b: Position, tol: number) =>
  Math.abs((a[0] as number) - (b[0] as number)) <= tol && Math.abs((a[1] as number) - (b[1] as number)) <= tol;

/**
 * Every decoded vertex lies within `tol` of a source vertex, met in the source's order (generalizing and
 * dropping vertices of one cell only ever leave a subsequence); returns how many were decoded.
 */
function expectOnSource(decoded: Position[][], source: Position[][], tol: number, what: string): number {
  const flat = source.flat();
  let at = 0;
  let n = 0;
  for (const v of decoded.flat()) {
    while (at < flat.length && !near(v, flat[at] as Position, tol)) at++;
    expect(at, `${what}: vertex ${n} (${v.join(", ")}) is on no source vertex after the previous one`).toBeLessThan(
      flat.length,
    );
    n++;
  }
  return n;
}

/** Twice the signed area (positive: counter-clockwise in map coordinates). */
const signedArea = (ring: Position[]) =>
  ring.reduce((s, p, i) => {
    const q = ring[(i + 1) % ring.length] as Position;
    return s + (p[0] as number) * (q[1] as number) - (q[0] as number) * (p[1] as number);
  }, 0);

describe("quantizationParameters: every mode, origin and format, decoded as the SDK decodes a tile", () => {
  const cases: [string, Mode, Origin][] = [];
  for (const f of ["json", "pbf"])
    for (const mode of ["view", "edit"] as const)
      for (const origin of ["upperLeft", "lowerLeft"] as const) cases.push([f, mode, origin]);

  it.each(cases)("f=%s, mode %s, %s", async (f, mode, origin) => {
    // Edit mode is asked at a metre: every vertex of the 1:50m outline has a cell of its own.
    const tolerance = mode === "view" ? TILE_TOLERANCE : 1;
    const decode = f === "json" ? decodeJson : decodePbf;
    for (const layer of ["shapes", "lines", "points", "mpoints"]) {
      const answer = await query(layer, tileRequest(f, mode, origin, tolerance));
      const decoded = decode(answer, origin, tolerance);
      const source = sourceParts(layer);
      expect(decoded.features, layer).toHaveLength(source.length);
      expect(decoded.exceededTransferLimit).toBe(false);
      // The transform describes the grid exactly: what a client applying it reads is what the SDK reads.
      const ty = origin === "upperLeft" ? TILE.ymax : TILE.ymin;
      expect(decoded.transform).toEqual({
        origin: f === "json" ? origin : origin === "upperLeft" ? 0 : 1,
        scale: [tolerance, tolerance],
        translate: [TILE.xmin, ty],
      });
      decoded.features.forEach((parts, i) => {
        const src = source[i] as Position[][];
        // Half a cell of rounding per axis.
        const n = expectOnSource(parts, src, tolerance / 2 + 1e-6, `${layer} #${i}`);
        const all = src.reduce((s, p) => s + p.length, 0);
        if (layer === "points" || layer === "mpoints" || mode === "edit") expect(n, `${layer} #${i}`).toBe(all);
        // France and the wiggle lose the vertices a pixel cannot show; the holed square has none to lose.
        else if (i === 0) expect(n, `${layer} #${i} generalized`).toBeLessThan(all / 2);
        if (layer === "shapes") {
          // Outer rings clockwise, holes counter-clockwise, in map coordinates, whichever way the grid counts y.
          const areas = parts.map(signedArea);
          if (i === 1) expect(areas.map(Math.sign)).toEqual([-1, 1]);
          else expect(areas.every((a) => a < 0)).toBe(true);
          // The outline keeps its extent to within the generalization and the rounding.
          const xs = (ps: Position[][]) => ps.flat().map((p) => p[0] as number);
          const ys = (ps: Position[][]) => ps.flat().map((p) => p[1] as number);
          const slack = mode === "view" ? 1.5 * tolerance : tolerance;
          expect(Math.abs(Math.min(...xs(parts)) - Math.min(...xs(src)))).toBeLessThanOrEqual(slack);
          expect(Math.abs(Math.max(...ys(parts)) - Math.max(...ys(src)))).toBeLessThanOrEqual(slack);
        }
      });
      // The independent decoder knows only the upper-left origin; it applies the transform, and lands where the
      // SDK does.
      if (f === "pbf" && origin === "upperLeft" && layer !== "mpoints") {
        const parsed = decodeArcgisPbf(new Uint8Array((answer as Content).body));
        parsed.featureCollection.features.forEach((feat, i) => {
          const g = feat.geometry as Polygon | MultiPolygon | { type: string; coordinates: unknown };
          const positions = (JSON.stringify(g.coordinates).match(/-?[\d.e+-]+/g) ?? []).map(Number);
          const ours = (decoded.features[i] as Position[][]).flat().flat();
          expect(positions.length).toBe(ours.length);
          positions.forEach((v, k) => expect(Math.abs(v - (ours[k] as number))).toBeLessThan(1e-6));
        });
      }
    }
  });

  it("the Paris point lands in the tile's pixel the SDK expects", async () => {
    const answer = (await query("points", tileRequest("json", "view", "upperLeft", TILE_TOLERANCE))) as {
      features: { geometry: { x: number; y: number } }[];
    };
    const [x = NaN, y = NaN] = paris();
    expect(answer.features[0]?.geometry).toEqual({
      x: Math.round((x - TILE.xmin) / TILE_TOLERANCE),
      y: Math.round((TILE.ymax - y) / TILE_TOLERANCE),
    });
    // Pixels of a 512-pixel tile.
    expect(must(answer.features[0]).geometry.x).toBeGreaterThan(0);
    expect(must(answer.features[0]).geometry.x).toBeLessThan(512);
  });

  it("an extent in another spatial reference is projected to the answer's; GeoJSON is never quantized", async () => {
    const params = tileRequest("json", "edit", "upperLeft", 10);
    const q = JSON.parse(must(params.quantizationParameters)) as Record<string, unknown>;
    q.extent = { xmin: -10, ymin: 40, xmax: 10, ymax: 55, spatialReference: { wkid: 4326 } };
    const answer = (await query("points", { ...params, quantizationParameters: JSON.stringify(q) })) as {
      transform: { translate: number[] };
    };
    const g = project({ type: "Point", coordinates: [-10, 55] }, 4326, 3857);
    const corner = g.type === "Point" ? g.coordinates : [];
    expect(answer.transform.translate[0]).toBeCloseTo(corner[0] as number, 3);
    expect(answer.transform.translate[1]).toBeCloseTo(corner[1] as number, 3);

    const geojson = JSON.parse(
      (
        (await query("points", { ...tileRequest("geojson", "view", "upperLeft", TILE_TOLERANCE) })) as Content
      ).body.toString(),
    ) as { features: { geometry: { coordinates: number[] } }[] };
    expect(geojson.features[0]?.geometry.coordinates[0]).toBeCloseTo(must(POINTS[0])[0] as number, 9);
  });

  it("maxAllowableOffset generalizes with and without quantization", async () => {
    const offset = 20_000;
    const plain = (await query("lines", { outSR: "102100", maxAllowableOffset: String(offset) })) as {
      features: { geometry: { paths: number[][][] } }[];
    };
    const path = must(must(plain.features[0]).geometry.paths[0]);
    expect(path.length).toBeLessThan(wiggle.length);
    expectOnSource([path], [must(must(sourceParts("lines")[0])[0])], 1e-6, "plain");
    // Edit mode keeps every vertex, but maxAllowableOffset still generalizes.
    const edit = decodeJson(
      await query("lines", { ...tileRequest("json", "edit", "upperLeft", 1), maxAllowableOffset: String(offset) }),
      "upperLeft",
      1,
    );
    expect(must(must(edit.features[0])[0]).length).toBe(path.length);
    // Without a tolerance, quantization counts in maxAllowableOffset's cells.
    const q = JSON.parse(must(tileRequest("json", "view", "upperLeft", 1).quantizationParameters)) as Record<
      string,
      unknown
    >;
    delete q.tolerance;
    const fallback = (await query("lines", {
      ...tileRequest("json", "view", "upperLeft", 1),
      quantizationParameters: JSON.stringify(q),
      maxAllowableOffset: String(offset),
    })) as { transform: { scale: number[] } };
    expect(fallback.transform.scale).toEqual([offset, offset]);
  });

  it("refuses what it cannot honour, as ArcGIS words it", async () => {
    const base = tileRequest("json", "view", "upperLeft", TILE_TOLERANCE);
    const q = JSON.parse(must(base.quantizationParameters)) as Record<string, unknown>;
    const bad: [string, unknown][] = [
      ["not json", "{"],
      ["an array", []],
      ["an unknown mode", { ...q, mode: "draw" }],
      ["an unknown origin", { ...q, originPosition: "center" }],
      ["a zero tolerance", { ...q, tolerance: 0 }],
      ["a negative tolerance", { ...q, tolerance: -1 }],
      ["a text tolerance", { ...q, tolerance: "5" }],
      ["no tolerance and no offset", { ...q, tolerance: undefined }],
      ["an inverted extent", { ...q, extent: { ...TILE, xmin: TILE.xmax, xmax: TILE.xmin } }],
      ["an extent missing a corner", { ...q, extent: { xmin: 0, ymin: 0, xmax: 1 } }],
      ["an extent of text", { ...q, extent: "0,0,1,1" }],
      ["a grid too fine", { ...q, tolerance: 1e-12 }],
      ["an unknown spatial reference", { ...q, extent: { ...TILE, spatialReference: { wkid: 999999 } } }],
      ["a spatial reference by text only", { ...q, extent: { ...TILE, spatialReference: { wkt: "GEOGCS[]" } } }],
    ];
    for (const [what, value] of bad) {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      const details = await refusal("shapes", { ...base, quantizationParameters: text });
      expect(details[0], what).toBe("'quantizationParameters' parameter is invalid");
    }
    const long = await refusal("shapes", { ...base, quantizationParameters: " ".repeat(5000) + "{}" });
    expect(long[0]).toBe("'quantizationParameters' parameter is invalid");
    expect((await refusal("shapes", { resultType: "page" }))[0]).toBe("'resultType' parameter is invalid");
    for (const factor of ["0", "-1", "x", "Infinity"])
      expect((await refusal("shapes", { maxRecordCountFactor: factor }))[0]).toBe(
        "'maxRecordCountFactor' parameter is invalid",
      );
  });
});

describe("quantizationParameters: the grid stays exact", () => {
  const base = (f: string, q: Record<string, unknown>, extra: Record<string, string> = {}) => ({
    f,
    where: "1=1",
    outSR: "102100",
    quantizationParameters: JSON.stringify({ mode: "edit", originPosition: "upperLeft", ...q }),
    ...extra,
  });
  const invalid = async (layer: string, params: Record<string, string>, what: string) => {
    const details = await refusal(layer, params);
    expect(details[0], what).toBe("'quantizationParameters' parameter is invalid");
    expect(details.length, what).toBeGreaterThan(1);
  };

  it("counts the layer's extent, when none is given, in cells of the tolerance", async () => {
    for (const f of ["json", "pbf"]) {
      await invalid("points", base(f, { tolerance: 1e-300 }), `${f}: 1e-300`);
      // The smallest double: the span over it is Infinity.
      await invalid("points", base(f, { tolerance: 5e-324 }), `${f}: 5e-324`);
      await invalid("points", base(f, { tolerance: 1e-300, extent: { ...TILE, spatialReference: WEB_MERCATOR } }), f);
    }
  });

  it("counts an extent in the answer's spatial reference, where the tolerance is", async () => {
    const degrees = { xmin: -10, ymin: 40, xmax: 10, ymax: 55, spatialReference: { wkid: 4326 } };
    // 20 degrees in micro-degrees is 2e7 cells; the same extent in Web Mercator metres is over 2e12 cells.
    for (const f of ["json", "pbf"]) await invalid("points", base(f, { tolerance: 1e-6, extent: degrees }), f);
    // The other way round: metres given, degrees answered, a micro-degree grid fits.
    const answer = (await query(
      "points",
      base("json", { tolerance: 1e-6, extent: { ...TILE, spatialReference: WEB_MERCATOR } }, { outSR: "4326" }),
    )) as { features: { geometry: { x: number; y: number } }[] };
    const [x = NaN] = must(POINTS[0]);
    const g = project({ type: "Point", coordinates: [TILE.xmin, TILE.ymax] }, 3857, 4326);
    const left = g.type === "Point" ? (g.coordinates[0] as number) : NaN;
    expect(Math.abs(must(answer.features[0]).geometry.x - (x - left) / 1e-6)).toBeLessThanOrEqual(1);
  });

  it("refuses a feature whose cell would not be an exact integer, in json and pbf", async () => {
    const [x = NaN, y = NaN] = paris();
    // A metre around Paris on a grid of a tenth of a nanometre: 1e10 cells across, but Nice is 7e15 cells away.
    const extent = { xmin: x, ymin: y, xmax: x + 1, ymax: y + 1, spatialReference: WEB_MERCATOR };
    for (const f of ["json", "pbf"]) {
      await invalid("points", base(f, { tolerance: 1e-10, extent }), f);
      // Paris alone is answered.
      const near = await query("points", base(f, { tolerance: 1e-10, extent }, { where: "label = 'p0'" }));
      expect(near).toBeDefined();
    }
  });
});

describe("resultType and maxRecordCountFactor: the page a query answers", () => {
  const limits = {
    maxRecordCount: MAX_RECORD_COUNT,
    standardMaxRecordCount: STANDARD_MAX_RECORD_COUNT,
    tileMaxRecordCount: TILE_MAX_RECORD_COUNT,
  };
  const pageSize = (params: Record<string, string>) => {
    const plan = planQuery(new Map(Object.entries(params)), must(schemas.get("many")), limits);
    return plan.output === "features" ? plan.pageSize : NaN;
  };

  it("each type's count, times the factor up to five, never above resultRecordCount", () => {
    expect(pageSize({})).toBe(MAX_RECORD_COUNT);
    expect(pageSize({ resultType: "none" })).toBe(MAX_RECORD_COUNT);
    expect(pageSize({ resultType: "standard" })).toBe(STANDARD_MAX_RECORD_COUNT);
    expect(pageSize({ resultType: "TILE" })).toBe(TILE_MAX_RECORD_COUNT);
    expect(pageSize({ resultType: "tile", maxRecordCountFactor: "3" })).toBe(3 * TILE_MAX_RECORD_COUNT);
    expect(pageSize({ maxRecordCountFactor: "1.5" })).toBe(1.5 * MAX_RECORD_COUNT);
    expect(pageSize({ resultType: "standard", maxRecordCountFactor: "100" })).toBe(5 * STANDARD_MAX_RECORD_COUNT);
    expect(pageSize({ resultType: "tile", resultRecordCount: "10", maxRecordCountFactor: "4" })).toBe(10);
  });

  it("a tile page says exactly whether more features follow, in json and pbf", async () => {
    const total = 9000;
    for (const f of ["json", "pbf"]) {
      const tile = { f, resultType: "tile", outSR: "102100" };
      const one = f === "json" ? decodeJson : decodePbf;
      const first = one(await query("many", tile), "upperLeft", 1);
      expect(first.features).toHaveLength(TILE_MAX_RECORD_COUNT);
      expect(first.exceededTransferLimit).toBe(true);
      const all = one(await query("many", { ...tile, maxRecordCountFactor: "3" }), "upperLeft", 1);
      expect(all.features).toHaveLength(total);
      expect(all.exceededTransferLimit).toBe(false);
      const last = one(
        await query("many", { ...tile, resultOffset: String(2 * TILE_MAX_RECORD_COUNT) }),
        "upperLeft",
        1,
      );
      expect(last.features).toHaveLength(total - 2 * TILE_MAX_RECORD_COUNT);
      expect(last.exceededTransferLimit).toBe(false);
      const standard = one(await query("many", { ...tile, resultType: "standard" }), "upperLeft", 1);
      expect(standard.features).toHaveLength(STANDARD_MAX_RECORD_COUNT);
      expect(standard.exceededTransferLimit).toBe(true);
    }
  });
});
