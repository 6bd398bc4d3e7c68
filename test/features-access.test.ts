// The path a GeoPackage query takes to its rows, chosen by the layer's statistics (shared/features/access.ts), on the
// demo's real places (171,075 points, an index on country): which path is chosen and what SQLite then reads, answers
// identical with and without the attribute index (a copy of the file without it) and with sqlite_stat1, counts of a
// window taken from the R*Tree alone exact at its edges, and statistics that follow the file's version after an edit.
import { copyFileSync, mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeDemoGeoPackage } from "#infra/local/demo/world-geopackage.ts";
import { type AccessPath, chooseAccess } from "#shared/features/access.ts";
import { geoPackageDataset, type OpenDataset } from "#shared/features/dataset.ts";
import { GeoPackage, geoPackageAt } from "#shared/features/geopackage.ts";
import { encodeGeometry } from "#shared/features/geometry/wkb-write.ts";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { planQuery } from "#shared/features/plan.ts";
import { answerQuery } from "#shared/features/query.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { emitQuery } from "#shared/features/sql.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import { registerSpatialFunctions } from "#shared/hosted/geopackage-store.ts";

const WESTERN_EUROPE = "-5,42,8,51";
let dir: string;
let indexed: string;
let bare: string;
let analysed: string;
const open: GeoPackage[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mapgate-access-"));
  indexed = join(dir, "world.gpkg");
  writeDemoGeoPackage(indexed);
  bare = join(dir, "bare.gpkg");
  copyFileSync(indexed, bare);
  const db = new DatabaseSync(bare);
  db.exec("DROP INDEX places_country_idx");
  db.close();
  analysed = join(dir, "analysed.gpkg");
  copyFileSync(indexed, analysed);
  const a = new DatabaseSync(analysed);
  a.exec("ANALYZE");
  a.close();
}, 60_000);
afterAll(() => {
  for (const g of open) g.close();
  rmSync(dir, { recursive: true, force: true });
});

async function places(file: string, version = "v1"): Promise<{ gpkg: GeoPackage; dataset: OpenDataset }> {
  const gpkg = await GeoPackage.open(file, version);
  open.push(gpkg);
  const schema = gpkg.schema("places") as LayerSchema;
  return { gpkg, dataset: geoPackageDataset(gpkg, schema) };
}

const params = (p: Record<string, string>) => ({ get: (n: string) => p[n] });

/** An answer reduced to what must match across paths: ids (and attributes), a count, an extent. */
async function answer(dataset: OpenDataset, p: Record<string, string>): Promise<unknown> {
  const a = await answerQuery(params(p), undefined, dataset);
  if (a.kind === "features")
    return {
      rows: a.features.map((f) => f.attributes),
      more: a.exceededTransferLimit,
      geometry: a.features[0]?.geometry,
    };
  return a;
}

/** The SQL mapgate runs for a query on a dataset, with the path its statistics chose. */
function statement(gpkg: GeoPackage, dataset: OpenDataset, p: Record<string, string>) {
  const schema = dataset.schema;
  const plan = planQuery(params(p), schema);
  const [xmin = 0, ymin = 0, xmax = 0, ymax = 0] = (p.geometry ?? "").split(",").map(Number);
  const filter = {
    bbox: [xmin, ymin, xmax, ymax] as const,
    relation: "intersects" as const,
    geometry: {
      type: "Polygon" as const,
      coordinates: [
        [
          [xmin, ymin],
          [xmax, ymin],
          [xmax, ymax],
          [xmin, ymax],
          [xmin, ymin],
        ],
      ],
    },
  };
  const access = dataset.access?.(plan, { ...filter, bbox: [xmin, ymin, xmax, ymax] });
  const emitted = emitQuery(sqliteEmitter, plan, schema, { ...filter, bbox: [xmin, ymin, xmax, ymax] }, access);
  const explained = gpkg.db
    .prepare(`EXPLAIN QUERY PLAN ${emitted.sql}`)
    .all(...(emitted.params as never[]))
    .map((r) => (r as { detail: string }).detail);
  return { access, explained };
}

const page = (where: string, extra: Record<string, string> = {}) => ({
  where,
  geometry: WESTERN_EUROPE,
  geometryType: "esriGeometryEnvelope",
  inSR: "4326",
  outFields: "*",
  resultRecordCount: "1000",
  ...extra,
});

describe("the layer's statistics", () => {
  it("find the single-column index on country, count the rows once and sample their envelopes", async () => {
    const { gpkg, dataset } = await places(indexed);
    const stats = gpkg.statistics(dataset.schema);
    expect(stats?.rows).toBe(171_075);
    expect([...(stats?.indexed ?? [])]).toEqual(["country"]);
    expect(stats?.sample.length).toBeGreaterThan(1000);
    expect(stats?.count("country", "FR")).toBe(8941);
    expect(stats?.count("country", "XX")).toBe(0);
    // A count asked up to a bound stops there (no more entries read than a choice needs), then counts on when asked.
    expect(stats?.count("country", "US", 100)).toBe(100);
    expect(stats?.count("country", "US")).toBe(17_343);
    expect(stats?.count("country", "US", 50)).toBe(50);
    // Kept with the open file: the same object while its version stands.
    expect(gpkg.statistics(dataset.schema)).toBe(stats);
  });

  it("read the row count from sqlite_stat1 when the file was analysed", async () => {
    const { gpkg, dataset } = await places(analysed);
    // The file's own statement would count again; stat1's first number is what ANALYZE counted.
    const stat = gpkg.db.prepare("SELECT stat FROM sqlite_stat1 WHERE tbl = 'places' LIMIT 1").get() as {
      stat: string;
    };
    expect(stat.stat.split(" ")[0]).toBe("171075");
    expect(gpkg.statistics(dataset.schema)?.rows).toBe(171_075);
  });

  it("find no index on a file without one, and leave the plan to SQLite", async () => {
    const { gpkg, dataset } = await places(bare);
    expect(gpkg.statistics(dataset.schema)?.indexed.size).toBe(0);
    expect(statement(gpkg, dataset, page("country = 'FR'")).access).toBeUndefined();
  });
});

describe("the path chosen", () => {
  it("walks the country index in id order for a page of France in Western Europe, stopping at the page", async () => {
    const { gpkg, dataset } = await places(indexed);
    const { access, explained } = statement(gpkg, dataset, page("country = 'FR'"));
    expect(access).toMatchObject({ kind: "attributeIndex", field: { name: "country" } });
    expect(explained).toEqual([
      "SEARCH t USING INDEX places_country_idx (country=?)",
      "CORRELATED SCALAR SUBQUERY 1",
      "SCAN x VIRTUAL TABLE INDEX 1:",
    ]);
    // The estimate the choice was made on: about the page's worth of entries against the window's 14,274.
    const stats = gpkg.statistics(dataset.schema);
    const plan = planQuery(params(page("country = 'FR'")), dataset.schema);
    const oid = dataset.schema.fields[0];
    if (!stats || !oid) throw new Error("no statistics");
    const chosen = chooseAccess(plan, oid, [-5, 42, 8, 51], stats);
    expect(chosen?.estimate.walked).toBeGreaterThan(1000);
    expect(chosen?.estimate.walked).toBeLessThan(1500);
    expect(chosen?.estimate.windowRows).toBeGreaterThan(12_000);
    expect(chosen?.estimate.windowRows).toBeLessThan(17_000);
  });

  it("reads the R*Tree first, never the attribute index, for a small window of a common value", async () => {
    const { gpkg, dataset } = await places(indexed);
    const manhattan = page("country = 'US'", { geometry: "-74.02,40.70,-73.93,40.80" });
    const { access, explained } = statement(gpkg, dataset, manhattan);
    expect(access).toEqual({ kind: "spatialIndex" });
    expect(explained.join("; ")).not.toContain("places_country_idx");
    expect(explained.join("; ")).toContain("SCAN rtree_places_geom VIRTUAL TABLE");
  });

  it("reads the R*Tree first for a value whose rows mostly lie outside the window", async () => {
    const { gpkg, dataset } = await places(indexed);
    // The United States' 17,343 places, none in Western Europe: the walk would read them all.
    expect(statement(gpkg, dataset, page("country = 'US'")).access).toEqual({ kind: "spatialIndex" });
  });

  it("walks every entry of an IN list (no page stop) only while that is cheaper than the window", async () => {
    const { gpkg, dataset } = await places(indexed);
    expect(statement(gpkg, dataset, page("country IN ('LU', 'MC')")).access).toMatchObject({ kind: "attributeIndex" });
    expect(statement(gpkg, dataset, page("country IN ('FR', 'DE', 'ES')")).access).toEqual({ kind: "spatialIndex" });
  });
});

// Each query answered on the file with the index on country and on a copy without it: the same rows, in the same
// order, with the same attributes, counts, ids and extents.
const QUERIES: readonly (readonly [string, Record<string, string>])[] = [
  ["a page of France in Western Europe", page("country = 'FR'")],
  ["the same page, further on", page("country = 'FR'", { resultOffset: "8000" })],
  ["France in Western Europe by name, descending", page("country = 'FR'", { orderByFields: "name DESC" })],
  ["France and more conditions", page("country = 'FR' AND admin1 = '11' AND name LIKE 'P%'")],
  ["an IN list", page("country IN ('LU', 'MC', 'AD')")],
  ["an IN list of large values", page("country IN ('FR', 'DE', 'ES')", { resultRecordCount: "300" })],
  ["a value with no rows", page("country = 'XX'")],
  ["Manhattan's places", page("country = 'US'", { geometry: "-74.02,40.70,-73.93,40.80" })],
  ["a count of France in the window", page("country = 'FR'", { returnCountOnly: "true" })],
  ["ids of France in the window", page("country = 'FR'", { returnIdsOnly: "true" })],
  ["the extent of France in the window", page("country = 'FR'", { returnExtentOnly: "true", returnCountOnly: "true" })],
  [
    "statistics of France in the window",
    page("country = 'FR'", {
      outStatistics: '[{"statisticType":"count","onStatisticField":"fid","outStatisticFieldName":"n"}]',
      groupByFieldsForStatistics: "admin1",
    }),
  ],
  ["a count of the window alone", { geometry: WESTERN_EUROPE, returnCountOnly: "true" }],
  ["a count of a window over the antimeridian's edge", { geometry: "170,-50,180,-10", returnCountOnly: "true" }],
];

describe("answers with and without the attribute index", () => {
  for (const [name, query] of QUERIES) {
    it(name, async () => {
      const withIndex = await answer((await places(indexed)).dataset, query);
      const without = await answer((await places(bare)).dataset, query);
      const withStat1 = await answer((await places(analysed)).dataset, query);
      expect(withIndex).toEqual(without);
      expect(withStat1).toEqual(without);
    });
  }

  it("answer the figures' page exactly: France's 1,000 lowest ids in the window, more to follow", async () => {
    const a = (await answer((await places(indexed)).dataset, page("country = 'FR'"))) as {
      rows: { fid: number; country: string }[];
      more: boolean;
    };
    expect(a.rows).toHaveLength(1000);
    expect(a.more).toBe(true);
    expect(a.rows.every((r) => r.country === "FR")).toBe(true);
    const ids = a.rows.map((r) => r.fid);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    // The whole matching set, in id order, from a plan with no index at all: the page is its head.
    const all = (await answer((await places(bare)).dataset, page("country = 'FR'", { returnIdsOnly: "true" }))) as {
      ids: number[];
    };
    expect(all.ids).toHaveLength(8878);
    expect(ids).toEqual(all.ids.slice(0, 1000));
  });

  it("count a window from the R*Tree as the exact test does, whatever lies on its edge", async () => {
    const { dataset } = await places(indexed);
    const count = (await answer(dataset, { geometry: WESTERN_EUROPE, returnCountOnly: "true" })) as { count: number };
    const ids = (await answer(dataset, { geometry: WESTERN_EUROPE, returnIdsOnly: "true" })) as { ids: number[] };
    expect(count.count).toBe(14_274);
    expect(ids.ids).toHaveLength(14_274);
  });
});

describe("a count from an index alone", () => {
  it("counts an indexed value through its index, reading no row", async () => {
    const { gpkg, dataset } = await places(indexed);
    const plan = planQuery(params({ where: "country = 'FR'", returnCountOnly: "true" }), dataset.schema);
    const emitted = emitQuery(sqliteEmitter, plan, dataset.schema);
    const explained = gpkg.db
      .prepare(`EXPLAIN QUERY PLAN ${emitted.sql}`)
      .all(...(emitted.params as never[]))
      .map((r) => (r as { detail: string }).detail);
    expect(explained).toEqual(["SEARCH t USING COVERING INDEX places_country_idx (country=?)"]);
    expect(await answer(dataset, { where: "country = 'FR'", returnCountOnly: "true" })).toEqual({
      kind: "count",
      count: 8941,
    });
  });
});

describe("a count of a value in a window", () => {
  it("walks the value's index entries, probes the R*Tree, and reads rows only on the window's edge", async () => {
    const { gpkg, dataset } = await places(indexed);
    // Luxembourg's 172 places among the thousands of its neighbours' in the window.
    const query = page("country = 'LU'", { geometry: "5,49,7,51", returnCountOnly: "true" });
    const { access, explained } = statement(gpkg, dataset, query);
    expect(access).toMatchObject({ kind: "attributeIndex" });
    // The entries inside the window: the index alone (covering: no table row), each probed in the R*Tree by id.
    // The edge's: the same walk, the table's row read (for the exact test) only for an entry crossing the edge.
    expect(explained).toEqual([
      "SCAN CONSTANT ROW",
      "SCALAR SUBQUERY 2",
      "SEARCH t USING COVERING INDEX places_country_idx (country=?)",
      "SCAN x EXISTS VIRTUAL TABLE INDEX 1:",
      "SCALAR SUBQUERY 4",
      "SEARCH t USING INDEX places_country_idx (country=?)",
      "SCAN x EXISTS VIRTUAL TABLE INDEX 1:",
    ]);
    expect(await answer(dataset, query)).toEqual({ kind: "count", count: 172 });
    expect(await answer((await places(bare)).dataset, query)).toEqual({ kind: "count", count: 172 });
  });
});

describe("a count of a window from the R*Tree alone", () => {
  let file: string;
  beforeAll(() => {
    file = join(dir, "edges.gpkg");
    const points = [
      [0, 0], // a corner
      [2, 1], // the opposite corner
      [1, 0], // on an edge
      [1, 0.5], // inside
      [2.0000001, 0.5], // just outside: its float32 box reaches the window
      [-1, -1], // outside
    ];
    writeGeoPackage(file, [
      {
        name: "points",
        geometryType: "POINT",
        columns: [{ name: "n", type: "INTEGER" }],
        rows: points.map(([x = 0, y = 0], n) => ({ values: { n }, geometry: { type: "Point", coordinates: [x, y] } })),
      },
      {
        name: "shapes",
        geometryType: "POLYGON",
        columns: [{ name: "n", type: "INTEGER" }],
        rows: [
          // Inside the window.
          [
            [0.5, 0.2],
            [1.5, 0.2],
            [1, 0.8],
            [0.5, 0.2],
          ],
          // Its envelope crosses the window's corner, the triangle itself does not reach it.
          [
            [1.9, -0.5],
            [2.5, -0.5],
            [2.5, 0.1],
            [1.9, -0.5],
          ],
          // Across the window's edge.
          [
            [1.5, 0.5],
            [3, 0.5],
            [3, 0.7],
            [1.5, 0.5],
          ],
        ].map((ring, n) => ({ values: { n }, geometry: { type: "Polygon", coordinates: [ring] } })),
      },
    ]);
  });

  it("counts points on its corners and edges, and not one just outside whose box reaches it", async () => {
    const gpkg = await GeoPackage.open(file, "v1");
    open.push(gpkg);
    const dataset = geoPackageDataset(gpkg, gpkg.schema("points") as LayerSchema);
    expect(await answer(dataset, { geometry: "0,0,2,1", returnCountOnly: "true" })).toEqual({
      kind: "count",
      count: 4,
    });
  });

  it("pages its points on corners and edges, and not one just outside; probed by id, tests only the edge's", async () => {
    const gpkg = await GeoPackage.open(file, "v1");
    open.push(gpkg);
    const dataset = geoPackageDataset(gpkg, gpkg.schema("points") as LayerSchema);
    // The exact test counted, and run on the decoded geometry (no shortcut by the point's position).
    let tested = 0;
    const counted = (access?: AccessPath): OpenDataset => ({
      ...dataset,
      ...(access ? { access: () => access } : {}),
      run: (emitted, test, deadline) =>
        dataset.run(
          emitted,
          test && {
            test: (g) => {
              tested++;
              return test.test(g);
            },
          },
          deadline,
        ),
    });
    const n = (a: unknown) => (a as { rows: { n: number }[] }).rows.map((r) => r.n);
    // The window's ids listed from the R*Tree: every entry meeting it is tested.
    expect(n(await answer(counted(), { geometry: "0,0,2,1", outFields: "n" }))).toEqual([0, 1, 2, 3]);
    expect(tested).toBe(5);
    // Rows walked (as from an attribute index) and each probed in the R*Tree by id: an entry inside the window is
    // taken from its box; only the point whose float32 box crosses the window's edge is read for the exact test.
    const field = dataset.schema.fields.find((f) => f.name === "n");
    if (!field) throw new Error("no field n");
    const probed = counted({ kind: "attributeIndex", field });
    tested = 0;
    expect(n(await answer(probed, { geometry: "0,0,2,1", where: "n >= 0", outFields: "n" }))).toEqual([0, 1, 2, 3]);
    expect(tested).toBe(1);
    tested = 0;
    expect(await answer(probed, { geometry: "0,0,2,1", where: "n >= 0", returnIdsOnly: "true" })).toMatchObject({
      ids: [1, 2, 3, 4],
    });
    expect(tested).toBe(1);
    // A triangle is no window: every entry meeting its envelope is tested. (2.0000001, 0.5) lies inside it: its
    // hypotenuse is at y = 0.99999995 there.
    tested = 0;
    const triangle = JSON.stringify({
      rings: [
        [
          [0, 0],
          [4, 0],
          [0, 2],
          [0, 0],
        ],
      ],
    });
    const query = { geometry: triangle, geometryType: "esriGeometryPolygon", where: "n >= 0", outFields: "n" };
    expect(n(await answer(probed, query))).toEqual([0, 1, 2, 3, 4]);
    expect(tested).toBe(5);
  });

  it("tests a polygon whose envelope crosses the window, and counts one inside from its box", async () => {
    const gpkg = await GeoPackage.open(file, "v1");
    open.push(gpkg);
    const dataset = geoPackageDataset(gpkg, gpkg.schema("shapes") as LayerSchema);
    expect(await answer(dataset, { geometry: "0,0,2,1", returnCountOnly: "true" })).toEqual({
      kind: "count",
      count: 2,
    });
    const ids = (await answer(dataset, { geometry: "0,0,2,1", returnIdsOnly: "true" })) as { ids: number[] };
    expect(ids.ids).toEqual([1, 3]);
  });
});

describe("statistics and an edit", () => {
  it("follow the file's version: a reader opened again after an edit counts again; a stale one still answers right", async () => {
    const file = join(dir, "edited.gpkg");
    copyFileSync(indexed, file);
    const before = await geoPackageAt(file, "v1");
    const schema = before.schema("places") as LayerSchema;
    expect(before.statistics(schema)?.count("country", "LU")).toBe(172);
    const luxembourg = page("country = 'LU'", { geometry: "5,49,7,51", returnCountOnly: "true" });
    expect(await answer(geoPackageDataset(before, schema), luxembourg)).toEqual({ kind: "count", count: 172 });

    // An edit as hosted data is edited: rows written through a writable connection (the R*Tree kept by its
    // triggers), then the file's time moved.
    const db = new DatabaseSync(file);
    registerSpatialFunctions(db);
    const insert = db.prepare("INSERT INTO places (name, country, geom) VALUES (?, 'LU', ?)");
    db.exec("BEGIN");
    for (let i = 0; i < 5000; i++)
      insert.run(`new ${i}`, encodeGeometry({ type: "Point", coordinates: [6, 49.7] }, 4326).bytes);
    db.exec("COMMIT");
    db.close();
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later);

    // The reader kept for v1 chooses by its old figures, but reads the file as it is now.
    expect(before.statistics(schema)?.count("country", "LU")).toBe(172);
    expect(await answer(geoPackageDataset(before, schema), luxembourg)).toEqual({ kind: "count", count: 5172 });
    // The next version's reader learns its figures again.
    const after = await geoPackageAt(file, "v2");
    open.push(after);
    expect(after).not.toBe(before);
    const schemaAfter = after.schema("places") as LayerSchema;
    expect(after.statistics(schemaAfter)?.count("country", "LU")).toBe(5172);
    expect(after.statistics(schemaAfter)?.rows).toBe(176_075);
    const dataset = geoPackageDataset(after, schemaAfter);
    expect(await answer(dataset, luxembourg)).toEqual({ kind: "count", count: 5172 });
    const pageAfter = (await answer(dataset, page("country = 'LU'", { geometry: "5,49,7,51" }))) as {
      rows: { name: string }[];
    };
    expect(pageAfter.rows).toHaveLength(1000);
    expect(pageAfter.rows.filter((r) => r.name.startsWith("new ")).length).toBe(1000 - 172);
  });
});
