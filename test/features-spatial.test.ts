import { describe, expect, it } from "vitest";
import type { Geometry, Position } from "geojson";
import { ApiError } from "#shared/errors.ts";
import { geometryBounds } from "#shared/features/geometry/bounds.ts";
import { prepareSpatialFilter, spatialTest, type SpatialRelation } from "#shared/features/geometry/spatial.ts";
import { toJts } from "#shared/features/geometry/jts.ts";

const box = (x0: number, y0: number, x1: number, y1: number): Geometry => ({
  type: "Polygon",
  coordinates: [
    [
      [x0, y0],
      [x1, y0],
      [x1, y1],
      [x0, y1],
      [x0, y0],
    ],
  ],
});
const pt = (x: number, y: number): Geometry => ({ type: "Point", coordinates: [x, y] });
const line = (...ps: Position[]): Geometry => ({ type: "LineString", coordinates: ps });
// Not a rectangle, so the general prepared path runs (a rectangle takes JTS's rectangle shortcut).
const diamond: Geometry = {
  type: "Polygon",
  coordinates: [
    [
      [5, 0],
      [10, 5],
      [5, 10],
      [0, 5],
      [5, 0],
    ],
    [
      [5, 4],
      [4, 5],
      [5, 6],
      [6, 5],
      [5, 4],
    ],
  ],
};

describe("spatial relations (query geometry first, as ArcGIS and PostGIS ST_<Rel>(query, feature))", () => {
  const square = box(0, 0, 10, 10);

  it("contains: features the query geometry contains", () => {
    expect(spatialTest("esriSpatialRelContains", square, pt(5, 5))).toBe(true);
    expect(spatialTest("esriSpatialRelContains", square, pt(10, 5))).toBe(false); // on the boundary only
    expect(spatialTest("esriSpatialRelContains", square, box(2, 2, 3, 3))).toBe(true);
    expect(spatialTest("esriSpatialRelContains", box(2, 2, 3, 3), square)).toBe(false);
    expect(spatialTest("esriSpatialRelContains", square, line([1, 1], [9, 9]))).toBe(true);
    expect(spatialTest("esriSpatialRelContains", square, line([1, 1], [19, 9]))).toBe(false);
  });

  it("within: features the query geometry lies within", () => {
    expect(spatialTest("esriSpatialRelWithin", pt(5, 5), square)).toBe(true);
    expect(spatialTest("esriSpatialRelWithin", pt(50, 5), square)).toBe(false);
    expect(spatialTest("esriSpatialRelWithin", box(2, 2, 3, 3), square)).toBe(true);
    expect(spatialTest("esriSpatialRelWithin", square, pt(5, 5))).toBe(false);
    expect(spatialTest("esriSpatialRelWithin", pt(5, 5), diamond)).toBe(false); // in the hole
  });

  it("intersects, touches, crosses, overlaps", () => {
    expect(spatialTest("esriSpatialRelIntersects", square, pt(10, 10))).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", square, pt(11, 10))).toBe(false);
    expect(spatialTest("esriSpatialRelIntersects", diamond, pt(5, 5))).toBe(false);
    expect(spatialTest("esriSpatialRelIntersects", diamond, line([-1, -1], [11, 11]))).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", diamond, box(-20, -20, 30, 30))).toBe(true); // holds the query
    expect(spatialTest("esriSpatialRelIntersects", pt(5, 5), square)).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", pt(5, 5), pt(5, 5))).toBe(true);
    expect(spatialTest("esriSpatialRelTouches", square, box(10, 0, 20, 10))).toBe(true);
    expect(spatialTest("esriSpatialRelTouches", square, box(9, 0, 20, 10))).toBe(false);
    expect(spatialTest("esriSpatialRelTouches", square, pt(10, 3))).toBe(true);
    expect(spatialTest("esriSpatialRelTouches", square, pt(5, 3))).toBe(false);
    expect(spatialTest("esriSpatialRelCrosses", square, line([5, 5], [15, 5]))).toBe(true);
    expect(spatialTest("esriSpatialRelCrosses", square, line([1, 5], [9, 5]))).toBe(false);
    expect(spatialTest("esriSpatialRelCrosses", line([5, -5], [5, 15]), line([0, 5], [10, 5]))).toBe(true);
    const mp: Geometry = {
      type: "MultiPoint",
      coordinates: [
        [5, 5],
        [50, 50],
      ],
    };
    expect(spatialTest("esriSpatialRelCrosses", square, mp)).toBe(true);
    expect(spatialTest("esriSpatialRelOverlaps", square, box(5, 5, 15, 15))).toBe(true);
    expect(spatialTest("esriSpatialRelOverlaps", square, box(2, 2, 3, 3))).toBe(false);
    expect(spatialTest("esriSpatialRelOverlaps", square, line([5, 5], [15, 5]))).toBe(false);
    expect(spatialTest("esriSpatialRelEnvelopeIntersects", diamond, pt(0.5, 0.5))).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", diamond, pt(0.5, 0.5))).toBe(false);
    expect(spatialTest("esriSpatialRelIntersects", square, { type: "GeometryCollection", geometries: [] })).toBe(false);
  });

  it("agrees with the full DE-9IM matrix on many features", () => {
    const relations: SpatialRelation[] = [
      "esriSpatialRelIntersects",
      "esriSpatialRelContains",
      "esriSpatialRelWithin",
      "esriSpatialRelTouches",
      "esriSpatialRelCrosses",
      "esriSpatialRelOverlaps",
    ];
    let seed = 7;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 14 - 2;
    const features: Geometry[] = [];
    for (let i = 0; i < 60; i++) {
      const x = Math.round(rnd());
      const y = Math.round(rnd());
      features.push(pt(x, y));
      features.push(line([x, y], [Math.round(rnd()), Math.round(rnd())]));
      const w = 1 + Math.abs(Math.round(rnd() / 3));
      features.push(box(x, y, x + w, y + w));
      features.push({
        type: "MultiPoint",
        coordinates: [
          [x, y],
          [y, x],
        ],
      });
    }
    for (const query of [diamond, box(0, 0, 10, 10), pt(5, 2), line([0, 0], [10, 10])]) {
      const q = toJts(query);
      const qd = q.getDimension();
      for (const relation of relations) {
        const filter = prepareSpatialFilter(relation, query);
        for (const f of features) {
          const fj = toJts(f);
          const m = q.relate(fj);
          const fd = fj.getDimension();
          const expected = {
            esriSpatialRelIntersects: m.isIntersects(),
            esriSpatialRelContains: m.isContains(),
            esriSpatialRelWithin: m.isWithin(),
            esriSpatialRelTouches: m.isTouches(qd, fd),
            esriSpatialRelCrosses: m.isCrosses(qd, fd),
            esriSpatialRelOverlaps: m.isOverlaps(qd, fd),
          }[relation as string];
          expect([relation, query.type, JSON.stringify(f), filter.test(f)]).toEqual([
            relation,
            query.type,
            JSON.stringify(f),
            expected,
          ]);
        }
      }
    }
  });
});

describe("points in an upright rectangle", () => {
  it("are tested as against the same rectangle drawn with one more vertex (JTS's own test)", () => {
    // The envelope of an ArcGIS query is a rectangle: its points are kept by a comparison with its bounds. The same
    // area with a vertex in the middle of a side is no rectangle to JTS, so it takes the locator's walk.
    const rect: Geometry = {
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [10, 0],
          [10, 5],
          [0, 5],
          [0, 0],
        ],
      ],
    };
    const drawn: Geometry = {
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [5, 0],
          [10, 0],
          [10, 5],
          [0, 5],
          [0, 0],
        ],
      ],
    };
    const fast = prepareSpatialFilter("esriSpatialRelIntersects", rect);
    const slow = prepareSpatialFilter("esriSpatialRelIntersects", drawn);
    const xs = [-1e-12, 0, 1e-12, 3, 10 - 1e-12, 10, 10 + 1e-12, 11];
    const ys = [-1e-12, 0, 2, 5, 5 + 1e-12, -3];
    let inside = 0;
    for (const x of xs)
      for (const y of ys) {
        const p: Geometry = { type: "Point", coordinates: [x, y] };
        expect(fast.test(p), `${x} ${y}`).toBe(slow.test(p));
        if (fast.test(p)) inside++;
      }
    expect(inside).toBe(5 * 3); // the five x and three y on or inside the edges
  });
});

describe("a point's test by its position (pointBox)", () => {
  it("is offered where the test of a point is its box, and agrees with the full test", () => {
    const rect = box(0, 0, 10, 5);
    const points = [-1e-12, 0, 3, 10, 10 + 1e-12].flatMap((x) => [-1, 0, 2, 5, 6].map((y) => pt(x, y)));
    for (const [relation, query] of [
      ["esriSpatialRelIntersects", rect],
      ["esriSpatialRelEnvelopeIntersects", rect],
      ["esriSpatialRelIndexIntersects", rect],
      ["esriSpatialRelEnvelopeIntersects", diamond],
    ] as const) {
      const filter = prepareSpatialFilter(relation, query);
      const b = filter.pointBox;
      expect(b, relation).toBeDefined();
      for (const p of points) {
        const [x, y] = (p as unknown as { coordinates: [number, number] }).coordinates;
        const byBox = !!b && b[0] <= x && x <= b[2] && b[1] <= y && y <= b[3];
        expect(byBox, `${relation} ${x} ${y}`).toBe(filter.test(p));
      }
    }
    // Not where a point needs more: a polygon that is no rectangle, another relation, a distance.
    expect(prepareSpatialFilter("esriSpatialRelIntersects", diamond).pointBox).toBeUndefined();
    expect(prepareSpatialFilter("esriSpatialRelContains", rect).pointBox).toBeUndefined();
    expect(prepareSpatialFilter("esriSpatialRelWithin", rect).pointBox).toBeUndefined();
    expect(prepareSpatialFilter("esriSpatialRelIntersects", rect, { distance: 10 }).pointBox).toBeUndefined();
    expect(prepareSpatialFilter("esriSpatialRelIntersects", pt(1, 1)).pointBox).toBeUndefined();
  });
});

describe("distance", () => {
  it("finds features within metres of a point in geographic data (azimuthal frame) and widens the index window", () => {
    const oslo = pt(10.75, 59.91);
    // about 1.1 km north, and about 5.6 km east
    const near = pt(10.75, 59.92);
    const east = pt(10.85, 59.91);
    const filter = prepareSpatialFilter("esriSpatialRelIntersects", oslo, { distance: 2000, srid: 4326 });
    expect(filter.test(near)).toBe(true);
    expect(filter.test(east)).toBe(false);
    expect(prepareSpatialFilter("esriSpatialRelIntersects", oslo, { distance: 6000, srid: 4326 }).test(east)).toBe(
      true,
    );
    expect(filter.bounds[1]).toBeCloseTo(59.91 - 2000 / 111_320, 6);
    expect(filter.bounds[2]).toBeGreaterThan(10.75 + 2000 / 111_320); // longitude degrees are shorter up north
    // a line passing 1 km away
    expect(filter.test(line([10.7, 59.919], [10.8, 59.919]))).toBe(true);
  });

  it("uses the dataset's units for projected data and buffers the query for other relations", () => {
    const q = pt(0, 0);
    expect(spatialTest("esriSpatialRelIntersects", q, pt(0, 99), { distance: 100, srid: 3857 })).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", q, pt(0, 101), { distance: 100, srid: 3857 })).toBe(false);
    // US survey feet: 100 m ≈ 328 ft
    expect(spatialTest("esriSpatialRelIntersects", q, pt(0, 320), { distance: 100, srid: 2277 })).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", q, pt(0, 340), { distance: 100, srid: 2277 })).toBe(false);
    expect(spatialTest("esriSpatialRelContains", q, box(-10, -10, 10, 10), { distance: 100, srid: 3857 })).toBe(true);
    expect(spatialTest("esriSpatialRelContains", q, box(-10, -10, 200, 10), { distance: 100, srid: 3857 })).toBe(false);
    expect(() => prepareSpatialFilter("esriSpatialRelIntersects", q, { distance: -1 })).toThrow(ApiError);
  });

  it("buffers by no more than the Earth spans: a distance of 1e308 m selects what 1e9 m does, and ends", () => {
    // A ring of 10,000 vertices: at 1e308 m JTS and the inverse projection spun for minutes before the cap.
    const ring: Position[] = Array.from({ length: 10_000 }, (_, i) => {
      const a = (-2 * Math.PI * i) / 9_999;
      return [35.6 + Math.cos(a) * 0.2, Math.sin(a) * 0.2];
    });
    ring[9_999] = ring[0] as Position;
    for (const [q, srid] of [
      [{ type: "Polygon", coordinates: [ring] } as Geometry, 4326],
      [box(2, 48, 3, 49), 4326],
      [line([0, 0], [1, 1]), 3857],
    ] as const) {
      const huge = prepareSpatialFilter("esriSpatialRelContains", q, { distance: 1e308, srid });
      const capped = prepareSpatialFilter("esriSpatialRelContains", q, { distance: 1e9, srid });
      expect(huge.sqlGeometry()).toEqual(capped.sqlGeometry());
      expect(huge.test(pt(-170, -80))).toBe(true);
    }
  });
});

describe("geometry JTS cannot node", () => {
  // A hole crossing its shell, as simplified boundaries in real data have (three of the demo's countries).
  const invalid: Geometry = {
    type: "Polygon",
    coordinates: [
      [
        [0, 0],
        [10, 0],
        [10, 10],
        [0, 10],
        [0, 0],
      ],
      [
        [5, 5],
        [15, 5],
        [15, 15],
        [5, 15],
        [5, 5],
      ],
    ],
  };

  it("is repaired (a zero-width buffer) and related, as a feature or as the query", () => {
    expect(() => toJts(box(1, 1, 2, 2)).relate(toJts(invalid))).toThrow(/side location conflict/);
    expect(spatialTest("esriSpatialRelWithin", box(1, 1, 2, 2), invalid)).toBe(true);
    expect(spatialTest("esriSpatialRelWithin", box(6, 6, 7, 7), invalid)).toBe(false);
    expect(spatialTest("esriSpatialRelOverlaps", box(8, -2, 20, 2), invalid)).toBe(true);
    expect(spatialTest("esriSpatialRelCrosses", line([-5, 1], [5, 1]), invalid)).toBe(true);
    expect(spatialTest("esriSpatialRelContains", invalid, box(1, 1, 2, 2))).toBe(true);
    expect(spatialTest("esriSpatialRelIntersects", line([-5, 1], [-1, 1]), invalid)).toBe(false);
  });
});

describe("per-row cost", () => {
  it("tests a point against a prepared polygon in a few microseconds", () => {
    const ring: Position[] = [];
    for (let i = 0; i < 1000; i++) {
      const a = (2 * Math.PI * i) / 1000;
      const r = 10 + (i % 2);
      ring.push([10 + r * Math.cos(a), 10 + r * Math.sin(a)]);
    }
    ring.push(ring[0] as Position);
    const filter = prepareSpatialFilter("esriSpatialRelIntersects", { type: "Polygon", coordinates: [ring] });
    const points = Array.from({ length: 100_000 }, (_, i) => pt((i * 7919) % 22, (i * 104729) % 22));
    for (const p of points.slice(0, 5000)) filter.test(p); // warm up
    const t = performance.now();
    let hits = 0;
    for (const p of points) if (filter.test(p)) hits++;
    const us = ((performance.now() - t) * 1000) / points.length;
    console.log(`intersects, point vs 1000-vertex polygon: ${us.toFixed(2)} µs per row (${hits} hits)`);
    expect(hits).toBeGreaterThan(0);
    expect(us).toBeLessThan(50);

    const boxes = points.slice(0, 20_000).map((p) => {
      const [x, y] = (p as { coordinates: number[] }).coordinates as [number, number];
      return box(x, y, x + 0.5, y + 0.5);
    });
    const t2 = performance.now();
    for (const b of boxes) filter.test(b);
    const us2 = ((performance.now() - t2) * 1000) / boxes.length;
    console.log(`intersects, small polygon vs 1000-vertex polygon: ${us2.toFixed(2)} µs per row`);
    expect(us2).toBeLessThan(500);
  });

  it("tests point features against a query of many points, or a line of many vertices, by lookup", () => {
    const n = 100_000;
    const many = prepareSpatialFilter("esriSpatialRelIntersects", {
      type: "MultiPoint",
      coordinates: Array.from({ length: n }, (_, i) => [i, i % 7]),
    });
    const zigzag = (length: number): Geometry => ({
      type: "LineString",
      coordinates: Array.from({ length }, (_, i) => [i, i % 2]),
    });
    const onLine = prepareSpatialFilter("esriSpatialRelIntersects", zigzag(n));
    // JTS's own test (a walk of every segment) is the reference, on a shorter line.
    const short = prepareSpatialFilter("esriSpatialRelIntersects", zigzag(100));
    const jtsShort = toJts(zigzag(100));
    for (let i = 0; i < 400; i++) {
      const p = pt((i * 0.37) % 100, (i * 0.13) % 1.5);
      expect(short.test(p), JSON.stringify(p)).toBe(jtsShort.intersects(toJts(p)));
    }
    const started = performance.now();
    for (let i = 0; i < 2000; i++) {
      const x = (i * 7919) % n;
      expect(many.test(pt(x, x % 7))).toBe(true);
      expect(many.test(pt(x, (x + 1) % 7))).toBe(false);
      expect(onLine.test(pt(x + 0.5, 0.5))).toBe(true);
      expect(onLine.test(pt(x + 0.5, 0.25))).toBe(false);
    }
    expect(onLine.test(pt(0, 0))).toBe(true);
    expect(onLine.test(pt(n - 1, (n - 1) % 2))).toBe(true);
    expect(onLine.test(pt(n, 0))).toBe(false);
    // A walk of the query for each feature would take minutes here.
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it("bounds a geometry", () => {
    expect(geometryBounds(line([3, -1], [-2, 4]))).toEqual([-2, -1, 3, 4]);
    expect(geometryBounds({ type: "GeometryCollection", geometries: [] })).toBeUndefined();
  });
});
