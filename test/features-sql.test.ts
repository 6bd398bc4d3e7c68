// SQL emitted from query plans: run against a real SQLite database laid out as a GeoPackage (every where rule,
// each output kind, the spatial narrowing), the PostgreSQL text and parameters checked, and a fuzz of hostile
// where texts proving that nothing but the typed refusal escapes and no literal reaches the SQL as text.
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { ApiError } from "#shared/errors.ts";
import { planQuery, type QueryPlan } from "#shared/features/plan.ts";
import { emitQuery } from "#shared/features/sql.ts";
import type { Dialect, SpatialFilter } from "#shared/features/sql/emitter.ts";
import { collapsePercents } from "#shared/features/sql/sqlite.ts";
import { ExpressionError, likeMatch, roundDecimal } from "#shared/features/sqlite-functions.ts";
import { type Expr, MAX_WHERE_DEPTH, MAX_WHERE_LENGTH, nodes } from "#shared/features/where.ts";
import { cities, citiesDatabase, citiesSchema, type City, gpkgPoint, pointOf } from "./helpers/feature-layer.ts";

const NOW = Date.UTC(2024, 4, 6, 7, 8, 9, 10);
const db = citiesDatabase();

const plan = (params: Record<string, string>): QueryPlan =>
  planQuery(new Map(Object.entries(params)), citiesSchema, { now: NOW });

function rows(params: Record<string, string>, options: { db?: DatabaseSync; spatial?: SpatialFilter } = {}) {
  const p = plan(params);
  const q = emitQuery("sqlite", p, citiesSchema, options.spatial);
  const target = options.db ?? db;
  if (options.spatial !== undefined) {
    const [x0, y0, x1, y1] = options.spatial.bbox;
    // The stand-in for the reader's exact test: points inside the box.
    target.function("mapgate_spatial", (g) => {
      const [x, y] = pointOf(g as Uint8Array);
      return x >= x0 && x <= x1 && y >= y0 && y <= y1 ? 1 : 0;
    });
  }
  const result = target.prepare(q.sql).all(...(q.params as never[]));
  return { rows: result.map((r) => ({ ...r })), query: q };
}

const ids = (where: string) => rows({ where, outFields: "objectid", returnGeometry: "false" }).rows.map((r) => r.c0);
const expected = (keep: (c: City) => boolean) => cities.filter(keep).map((c) => c.objectid);
const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

describe("SQLite: each where rule selects the rows it says", () => {
  const cases: [string, (c: City) => boolean][] = [
    ["1=1", () => true],
    ["pop = 520000", (c) => c.pop === 520000],
    ["pop <> 520000", (c) => c.pop !== null && c.pop !== 520000],
    ["pop != 520000", (c) => c.pop !== null && c.pop !== 520000],
    ["pop < 340000", (c) => c.pop !== null && c.pop < 340000],
    ["pop <= 340000", (c) => c.pop !== null && c.pop <= 340000],
    ["pop > 340000", (c) => c.pop !== null && c.pop > 340000],
    ["pop >= 340000", (c) => c.pop !== null && c.pop >= 340000],
    ["pop > 100000 AND area < 50", (c) => (c.pop ?? 0) > 100000 && c.area < 50],
    ["pop > 1000000 OR area < 5", (c) => (c.pop ?? 0) > 1000000 || c.area < 5],
    ["NOT pop > 100000", (c) => c.pop !== null && !(c.pop > 100000)],
    ["pop IN (0, 25000, 7)", (c) => c.pop === 0 || c.pop === 25000],
    ["pop NOT IN (0, 25000)", (c) => c.pop !== null && c.pop !== 0 && c.pop !== 25000],
    ["pop BETWEEN 25000 AND 340000", (c) => c.pop !== null && c.pop >= 25000 && c.pop <= 340000],
    ["pop NOT BETWEEN 25000 AND 340000", (c) => c.pop !== null && (c.pop < 25000 || c.pop > 340000)],
    ["name LIKE 'P%'", (c) => c.name?.startsWith("P") === true],
    ["name LIKE 'p%'", (c) => c.name?.startsWith("p") === true],
    ["name NOT LIKE '%i%'", (c) => c.name !== null && !c.name.includes("i")],
    ["name LIKE 'L____%'", (c) => c.name !== null && c.name.startsWith("L") && Array.from(c.name).length >= 5],
    ["name LIKE '%!%' ESCAPE '!'", (c) => c.name?.endsWith("%") === true],
    ["name LIKE '%\\_%' ESCAPE '\\'", (c) => c.name?.includes("_") === true],
    ["name LIKE '%_%'", (c) => c.name !== null && c.name.length > 0],
    ["name LIKE 'Z_rich'", (c) => c.name === "Zürich"],
    ["name LIKE 'z%'", () => false],
    ["name IS NULL", (c) => c.name === null],
    ["name IS NOT NULL", (c) => c.name !== null],
    ["pop + 10000 * 2 > 540000 - 1", (c) => c.pop !== null && c.pop + 20000 > 539999],
    ["pop / 2 = 260000", (c) => c.pop === 520000],
    ["pop / 0 IS NULL", () => true],
    ["7 / 2 = 3.5", () => true],
    ["-pop < -1000000", (c) => c.pop !== null && -c.pop < -1000000],
    ["name = 'O''Hare 100%'", (c) => c.name === "O'Hare 100%"],
    ["name = N'Zürich'", (c) => c.name === "Zürich"],
    ["founded > date '2001-03-04'", (c) => (ms(c.founded) ?? -Infinity) > Date.UTC(2001, 2, 4)],
    ["founded = timestamp '2001-03-04 05:06:07'", (c) => c.objectid === 1],
    ["founded = timestamp '1999-12-31 23:59:59.5'", (c) => c.objectid === 2],
    ["founded >= '2010-01-01'", (c) => (ms(c.founded) ?? -Infinity) >= Date.UTC(2010, 0, 1)],
    ["day = date '2001-03-04'", (c) => c.day === "2001-03-04"],
    ["day < CURRENT_DATE", (c) => c.day !== null],
    ["founded < CURRENT_TIMESTAMP", (c) => c.founded !== null],
    ["founded BETWEEN date '2000-01-01' AND date '2011-01-01'", (c) => /^200|^2010/.test(c.founded ?? "")],
    ["EXTRACT(YEAR FROM founded) = 2001", (c) => c.founded?.startsWith("2001") === true],
    ["EXTRACT(MONTH FROM founded) = 6", (c) => c.founded?.slice(5, 7) === "06"],
    ["EXTRACT(DAY FROM day) = 29", (c) => c.day?.slice(8) === "29"],
    ["EXTRACT(HOUR FROM founded) = 18", (c) => c.objectid === 7],
    ["EXTRACT(MINUTE FROM founded) = 59", (c) => c.objectid === 2],
    ["EXTRACT(SECOND FROM founded) = 59.5", (c) => c.objectid === 2],
    ["ABS(-pop) = 25000", (c) => c.pop === 25000],
    ["CEILING(area) = 11", () => false],
    ["CEILING(area) = 106", (c) => c.objectid === 1],
    ["FLOOR(area) = 105", (c) => c.objectid === 1],
    ["LOG(area) > 4.6", (c) => Math.log(c.area) > 4.6],
    ["LOG10(area) = 1", (c) => c.area === 10],
    ["LOG(pop) IS NULL", (c) => c.pop === null || c.pop <= 0],
    ["POWER(area, 2) > 10000", (c) => c.area ** 2 > 10000],
    ["ROUND(area, 1) = 47.9", (c) => c.objectid === 2],
    ["ROUND(area) = 88", (c) => c.objectid === 4],
    ["ROUND(pop, -5) = 500000", (c) => c.objectid === 2],
    ["TRUNCATE(area, 1) = 47.8", (c) => c.objectid === 2],
    ["TRUNCATE(area) = 47", (c) => c.objectid === 2],
    ["MOD(pop, 100000) = 20000", (c) => c.pop !== null && c.pop % 100000 === 20000],
    ["MOD(pop, 0) IS NULL", () => true],
    ["CHAR_LENGTH(name) = 6", (c) => c.name !== null && Array.from(c.name).length === 6],
    ["CONCAT(name, kind) = 'Lyoncity'", (c) => c.objectid === 2],
    ["CONCAT(name, kind) = 'city'", (c) => c.objectid === 5 && false],
    ["LOWER(name) = 'zürich'", (c) => c.objectid === 4],
    ["UPPER(name) = 'PARIS'", (c) => c.name?.toUpperCase() === "PARIS"],
    ["UPPER(name) = 'ZÜRICH'", (c) => c.objectid === 4],
    ["SUBSTRING(name FROM 2 FOR 3) = 'yon'", (c) => c.objectid === 2],
    ["SUBSTRING(name FROM 0 FOR 3) = 'Ly'", (c) => c.objectid === 2],
    ["SUBSTRING(name, 2, 4) = 'üric'", (c) => c.objectid === 4],
    ["SUBSTRING(name FROM 6) = '_Nord'", (c) => c.objectid === 7],
    ["POSITION('i' IN name) = 4", (c) => c.name !== null && Array.from(c.name).indexOf("i") === 3],
    ["TRIM(name) = 'Nice'", (c) => c.objectid === 8],
    ["TRIM(LEADING FROM name) = 'Nice  '", (c) => c.objectid === 8],
    ["TRIM(TRAILING ' ' FROM name) = '  Nice'", (c) => c.objectid === 8],
    ["TRIM(BOTH 'Ls' FROM name) = 'ille_Nord'", (c) => c.objectid === 7],
    ["CAST(area AS INTEGER) = 47", (c) => c.objectid === 2],
    ["CAST(-area AS INT) = -47", (c) => c.objectid === 2],
    ["CAST(pop AS FLOAT) / 3 > 700000", (c) => (c.pop ?? 0) / 3 > 700000],
    ["CAST(pop AS VARCHAR(3)) = '520'", (c) => c.objectid === 2],
    ["CAST(founded AS DATE) = date '2001-03-04'", (c) => c.day === "2001-03-04"],
    ["CAST('2001-03-04 05:06:07' AS TIMESTAMP) = founded", (c) => c.objectid === 1],
    ["CAST('2001-03-04' AS DATE) = day", (c) => c.day === "2001-03-04"],
    ["COALESCE(pop, -1) = -1", (c) => c.pop === null],
    ["NULLIF(pop, 0) IS NULL", (c) => c.pop === null || c.pop === 0],
    ["kind = 'city'", (c) => c.kind === "city"],
    ["\"KIND\" = 'city' AND \"Name\" LIKE 'L%'", (c) => c.kind === "city" && c.name?.startsWith("L") === true],
    [
      "(pop > 0 AND (area > 50 OR (name LIKE '%e%')))",
      (c) => (c.pop ?? 0) > 0 && (c.area > 50 || c.name?.includes("e") === true),
    ],
    ["pop = NULL", () => false],
  ];
  it.each(cases)("%s", (where, keep) => {
    expect(ids(where)).toEqual(expected(keep));
  });
});

describe("SQLite: output kinds", () => {
  it("answers a features page with fields, dates as epoch ms, the geometry blob, and one row more", () => {
    const { rows: page, query } = rows({
      where: "1=1",
      outFields: "*",
      resultRecordCount: "3",
      orderByFields: "pop DESC",
    });
    expect(query.pageSize).toBe(3);
    expect(page).toHaveLength(4);
    expect(query.columns.map((c) => c.name)).toEqual([
      "objectid",
      "name",
      "pop",
      "area",
      "founded",
      "day",
      "kind",
      "photo",
      "geom",
    ]);
    expect(page[0]).toMatchObject({
      c0: 1,
      c1: "Paris",
      c2: 2100000,
      c4: Date.UTC(2001, 2, 4, 5, 6, 7),
      c5: Date.UTC(2001, 2, 4),
      c6: "capital",
    });
    expect(pointOf(page[0]?.g as Uint8Array)).toEqual([2.35, 48.85]);
    expect(page.map((r) => r.c0)).toEqual([1, 2, 4, 8]);
  });

  it("pages deterministically with the object id as the last key, NULLs first ascending", () => {
    const all = rows({ where: "1=1", outFields: "kind", orderByFields: "kind", returnGeometry: "false" }).rows.map(
      (r) => r.c0,
    );
    expect(all).toEqual([5, 6, 1, 2, 4, 7, 8, 3]);
    const paged: unknown[] = [];
    for (let offset = 0; offset < 8; offset += 3) {
      const page = rows({
        where: "1=1",
        orderByFields: "kind",
        resultOffset: String(offset),
        resultRecordCount: "3",
        returnGeometry: "false",
      });
      paged.push(...page.rows.slice(0, 3).map((r) => r.c0));
    }
    expect(paged).toEqual(all);
    expect(rows({ orderByFields: "kind DESC", returnGeometry: "false" }).rows.map((r) => r.c0)).toEqual([
      3, 2, 4, 7, 8, 1, 6, 5,
    ]);
  });

  it("counts, lists ids, and counts distinct values", () => {
    expect(rows({ where: "kind = 'city'", returnCountOnly: "true" }).rows).toEqual([{ n: 4 }]);
    // What clients send for "everything": SQLite's own count, no test or deadline per row.
    const all = rows({ where: "1=1", returnCountOnly: "true" });
    expect(all.rows).toEqual([{ n: cities.length }]);
    expect(all.query.sql).not.toContain("WHERE");
    // Ids in one text, joined in order (not a row per id); none is NULL.
    expect(rows({ where: "pop > 300000", returnIdsOnly: "true", orderByFields: "pop" }).rows).toEqual([
      { ids: "8,4,2,1" },
    ]);
    expect(rows({ where: "pop < 0", returnIdsOnly: "true" }).rows).toEqual([{ ids: null }]);
    // capital, city, town, airport and NULL.
    expect(rows({ outFields: "kind", returnDistinctValues: "true", returnCountOnly: "true" }).rows).toEqual([{ n: 5 }]);
  });

  it("answers distinct values in a total order", () => {
    const r = rows({ outFields: "kind", returnDistinctValues: "true", orderByFields: "kind DESC" }).rows;
    expect(r.map((x) => x.c0)).toEqual(["town", "city", "capital", "airport", null]);
  });

  it("lists its columns in the order the statement selects them, in both dialects (rows are read by position)", () => {
    const kinds: Record<string, string>[] = [
      { outFields: "*" },
      { returnCountOnly: "true" },
      { returnIdsOnly: "true" },
      { returnExtentOnly: "true" },
      { returnExtentOnly: "true", returnCountOnly: "true" },
      {
        outStatistics: JSON.stringify([
          { statisticType: "count", onStatisticField: "pop", outStatisticFieldName: "n" },
        ]),
        groupByFieldsForStatistics: "kind",
      },
      { outFields: "kind", returnDistinctValues: "true" },
    ];
    for (const params of kinds) {
      const sqlite = emitQuery("sqlite", plan(params), citiesSchema);
      const selected = db
        .prepare(sqlite.sql)
        .columns()
        .map((c) => c.name);
      expect(selected, JSON.stringify(params)).toEqual(sqlite.columns.map((c) => c.alias));
      const pg = emitQuery("postgres", plan(params), citiesSchema);
      const at = pg.columns.map((c) => pg.sql.lastIndexOf(` AS ${c.alias}`));
      expect(
        at.every((v, i) => v > (at[i - 1] ?? -1)),
        `${JSON.stringify(params)}: ${pg.sql}`,
      ).toBe(true);
    }
  });

  it("answers the extent from the R*Tree, with the count, and from the blobs without one", () => {
    const withCount = rows({ where: "kind = 'city'", returnExtentOnly: "true", returnCountOnly: "true" });
    const viaIndex = withCount.rows[0];
    expect(viaIndex?.n).toBe(4);
    // The reader takes each value by its position among the listed columns: the list is the statement's order.
    expect(withCount.query.columns.map((c) => c.alias)).toEqual(Object.keys(viaIndex ?? {}));
    // R*Tree boxes are float32, rounded outwards.
    expect(viaIndex?.xmin).toBeCloseTo(3.06, 5);
    expect(viaIndex?.xmin as number).toBeLessThanOrEqual(3.06);
    expect(viaIndex?.ymax as number).toBeGreaterThanOrEqual(50.63);
    const bare = citiesDatabase({ rtree: false });
    const { index: _, ...unindexed } = citiesSchema.geometry ?? {
      column: "",
      type: "esriGeometryPoint" as const,
      hasZ: false,
      hasM: false,
      srid: 0,
    };
    const schema = { ...citiesSchema, geometry: unindexed };
    const q = emitQuery(
      "sqlite",
      planQuery(
        new Map([
          ["where", "kind = 'city'"],
          ["returnExtentOnly", "true"],
        ]),
        schema,
      ),
      schema,
    );
    expect(q.sql).toContain("mapgate_xmin");
    expect({ ...bare.prepare(q.sql).get(...(q.params as never[])) }).toEqual({
      xmin: 3.06,
      ymin: 43.7,
      xmax: 8.54,
      ymax: 50.63,
    });
  });

  it("lists each output kind's columns in the order its SQL selects them (the answer reads them by index)", () => {
    const outputs: Record<string, string>[] = [
      { returnExtentOnly: "true", returnCountOnly: "true" },
      { returnExtentOnly: "true" },
      { returnCountOnly: "true" },
      { returnIdsOnly: "true" },
      { outFields: "name,kind", returnDistinctValues: "true" },
      { outStatistics: '[{"statisticType":"max","onStatisticField":"pop"}]', groupByFieldsForStatistics: "kind" },
      { outFields: "*" },
    ];
    for (const params of outputs) {
      const { rows: r, query } = rows({ where: "1=1", ...params });
      expect(Object.keys(r[0] ?? {}), JSON.stringify(params)).toEqual(query.columns.map((c) => c.alias));
    }
    const pg = emitQuery("postgres", plan({ returnExtentOnly: "true", returnCountOnly: "true" }), citiesSchema);
    expect(pg.columns.map((c) => c.alias)).toEqual(["xmin", "ymin", "xmax", "ymax", "n"]);
  });

  it("computes statistics, grouped, with having and order", () => {
    const stats = JSON.stringify([
      { statisticType: "count", onStatisticField: "objectid", outStatisticFieldName: "n" },
      { statisticType: "sum", onStatisticField: "pop", outStatisticFieldName: "total" },
      { statisticType: "avg", onStatisticField: "area", outStatisticFieldName: "mean" },
      { statisticType: "min", onStatisticField: "name", outStatisticFieldName: "first" },
      { statisticType: "max", onStatisticField: "founded", outStatisticFieldName: "latest" },
      { statisticType: "stddev", onStatisticField: "pop", outStatisticFieldName: "sd" },
      { statisticType: "var", onStatisticField: "pop", outStatisticFieldName: "v" },
      {
        statisticType: "percentile_cont",
        onStatisticField: "pop",
        outStatisticFieldName: "median",
        statisticParameters: { value: 0.5 },
      },
      {
        statisticType: "percentile_disc",
        onStatisticField: "pop",
        outStatisticFieldName: "p25",
        statisticParameters: { value: 0.25 },
      },
    ]);
    const { rows: r, query } = rows({
      outStatistics: stats,
      groupByFieldsForStatistics: "kind",
      having: "COUNT(objectid) > 1",
      orderByFields: "total DESC",
    });
    expect(query.columns.map((c) => c.name)).toEqual([
      "kind",
      "n",
      "total",
      "mean",
      "first",
      "latest",
      "sd",
      "v",
      "median",
      "p25",
    ]);
    expect(r).toHaveLength(1);
    const city = [520000, 420000, 230000, 340000];
    const mean = city.reduce((a, b) => a + b) / 4;
    const variance = city.reduce((a, b) => a + (b - mean) ** 2, 0) / 3;
    expect(r[0]).toMatchObject({
      g0: "city",
      s0: 4,
      s1: 1510000,
      s4: Date.parse("2001-03-04T18:00:00Z"),
      s3: "  Nice  ",
      s7: 380000,
      s8: 230000,
    });
    expect(r[0]?.s2).toBeCloseTo((47.87 + 87.88 + 34.8 + 71.9) / 4, 9);
    expect(r[0]?.s5).toBeCloseTo(Math.sqrt(variance), 6);
    expect(r[0]?.s6).toBeCloseTo(variance, 3);
    const all = rows({
      outStatistics: JSON.stringify([{ statisticType: "count", onStatisticField: "pop", outStatisticFieldName: "n" }]),
      groupByFieldsForStatistics: "kind",
      orderByFields: "n DESC",
    }).rows;
    expect(all.map((x) => [x.g0, x.s0])).toEqual([
      ["city", 4],
      ["airport", 1],
      ["capital", 1],
      ["town", 1],
      [null, 0],
    ]);
    const desc = rows({
      outStatistics: JSON.stringify([
        {
          statisticType: "percentile_disc",
          onStatisticField: "pop",
          statisticParameters: { value: 0.25, orderBy: "DESC" },
        },
      ]),
    }).rows;
    expect(desc).toEqual([{ s0: 520000 }]);
  });

  it("narrows by the R*Tree, then the exact test; without an index, the exact test alone", () => {
    const spatial: SpatialFilter = {
      bbox: [0, 40, 9, 49],
      relation: "intersects",
      geometry: { type: "Polygon", coordinates: [] },
    };
    const params = { geometry: "0,40,9,49", returnGeometry: "false" };
    const { rows: r, query } = rows(params, { spatial });
    expect(query.sql).toContain('IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?');
    expect(query.sql).toContain('mapgate_spatial(t."geom") = 1');
    expect(r.map((x) => x.c0)).toEqual([1, 2, 4, 8]);
    const envelope = rows(
      { ...params, spatialRel: "esriSpatialRelEnvelopeIntersects" },
      { spatial: { ...spatial, relation: "envelopeIntersects" } },
    );
    expect(envelope.query.sql).not.toContain("mapgate_spatial");
    expect(envelope.rows.map((x) => x.c0)).toEqual([1, 2, 4, 8]);
    const grown = rows({ ...params, distance: "2" }, { spatial: { ...spatial, bbox: [0, 40, 9, 49], distance: 2 } });
    expect(grown.query.params.slice(0, 4)).toEqual([-2, 38, 11, 51]);
  });

  it("restricts to object ids with one parameter, combined with the where", () => {
    const { rows: r, query } = rows({ objectIds: "8, 2,3,99", where: "pop > 30000", returnGeometry: "false" });
    expect(r.map((x) => x.c0)).toEqual([2, 8]);
    expect(query.params).toContain("[2,3,8,99]");
  });
});

describe("SQLite functions", () => {
  it("matches LIKE case-sensitively, by characters, in time bounded by the product of lengths", () => {
    expect(likeMatch("Zürich", "Z_rich")).toBe(true);
    expect(likeMatch("abc", "ABC")).toBe(false);
    expect(likeMatch("a%b", "a!%b", "!")).toBe(true);
    expect(likeMatch("axb", "a!%b", "!")).toBe(false);
    expect(likeMatch("abc", "abc!", "!")).toBe(false);
    expect(likeMatch("", "%")).toBe(true);
    const started = performance.now();
    expect(likeMatch("a".repeat(20000), `${"%a".repeat(50)}%b`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("rounds decimally, half away from zero", () => {
    expect(roundDecimal(1.005, 2)).toBe(1.01);
    expect(roundDecimal(-2.5, 0)).toBe(-3);
    expect(roundDecimal(1234.5, -2)).toBe(1200);
    expect(roundDecimal(1.239, 2, true)).toBe(1.23);
    expect(roundDecimal(-1.239, 2, true)).toBe(-1.23);
  });

  it("decodes GeoPackage bounds from the envelope or the WKB", async () => {
    const { boundsOf } = await import("#shared/features/sqlite-functions.ts");
    expect(boundsOf(gpkgPoint(1, 2))).toEqual({ xmin: 1, ymin: 2, xmax: 1, ymax: 2 });
    expect(boundsOf(gpkgPoint(1, 2, 4326, true))).toEqual({ xmin: 1, ymin: 2, xmax: 1, ymax: 2 });
    expect(boundsOf(new Uint8Array([1, 2, 3]))).toBeUndefined();
  });
});

describe("SQLite: what hostile texts make of the SQL", () => {
  it("runs long runs of OR and AND, and the deepest nesting the parser accepts (SQLite refuses 1000 levels)", () => {
    const ors = Array.from({ length: 1000 }, (_, i) => `pop = ${i * 1000}`).join(" OR ");
    expect(ors.length).toBeLessThanOrEqual(MAX_WHERE_LENGTH);
    expect(ids(ors)).toEqual(expected((c) => c.pop !== null && c.pop % 1000 === 0 && c.pop < 1_000_000));
    expect(ids(Array.from({ length: 1200 }, () => "pop > -1").join(" AND "))).toEqual(expected((c) => c.pop !== null));
    const depth = MAX_WHERE_DEPTH;
    for (const where of [
      `${"NOT ".repeat(depth)}pop IS NOT NULL`,
      `pop${" / 1".repeat(depth)} > -1`,
      `${"ABS(".repeat(depth - 1)}pop${")".repeat(depth - 1)} > -1`,
      `${"(".repeat(depth / 2)}pop${" * 1".repeat(depth / 2)}${")".repeat(depth / 2)} > -1`,
      `${"CHAR_LENGTH(CAST(".repeat(depth / 2 - 1)}pop${" AS VARCHAR(40)))".repeat(depth / 2 - 1)} > -1`,
    ])
      expect(ids(where), where.slice(0, 40)).toEqual(expected((c) => c.pop !== null));
  });

  it("takes the absolute value of the smallest integer, which SQLite's abs() fails on", () => {
    expect(ids("ABS(CAST('-9223372036854775808' AS INTEGER)) > 0")).toEqual(expected(() => true));
    expect(ids("ABS(CAST(-1e300 AS INTEGER)) > 0")).toEqual(expected(() => true));
  });

  it("matches a computed pattern past SQLite's LIKE limit, and a literal one whose runs of % are made one", () => {
    expect(ids(`name LIKE CONCAT(UPPER('${"ΐ".repeat(9000)}'), '%')`)).toEqual([]);
    expect(ids("name LIKE CONCAT('L', '%')")).toEqual(expected((c) => c.name?.startsWith("L") === true));
    expect(ids("name LIKE CONCAT('l', '%')")).toEqual([]);
    expect(ids(`name LIKE '${"%".repeat(10_000)}'`)).toEqual(expected((c) => c.name !== null));
    expect(collapsePercents("%%a%%%b%", undefined)).toBe("%a%b%");
    expect(collapsePercents("!%%%a!!%%", "!")).toBe("!%%a!!%");
    expect(ids("name LIKE '%!%%%' ESCAPE '!'")).toEqual(ids("name LIKE '%!%' ESCAPE '!'"));
  });

  it("fails a negative SUBSTRING length as the expression's fault, as PostgreSQL does", () => {
    expect(() => ids("SUBSTRING(name FROM 1 FOR pop - 1000000000) = 'x'")).toThrow(ExpressionError);
    expect(ids("SUBSTRING(name FROM 1 FOR 0) = ''")).toEqual(expected((c) => c.name !== null));
  });

  it("binds a literal TRIM set with each character once (the databases walk it for every row)", () => {
    const where = "TRIM(BOTH 'LsLsLsLs' FROM name) = 'ille_Nord'";
    expect(emitQuery("postgres", plan({ where }), citiesSchema).params).toContain("Ls");
    expect(ids(where)).toEqual(expected((c) => c.objectid === 7));
  });
});

describe("PostgreSQL text", () => {
  const pg = (params: Record<string, string>, spatial?: SpatialFilter) =>
    emitQuery("postgres", plan(params), citiesSchema, spatial);

  it("binds every value with its type and quotes every identifier", () => {
    const q = pg({ where: "name LIKE 'P%' AND pop > 5 AND area < 2.5", outFields: "kind", returnGeometry: "true" });
    expect(q.sql).toBe(
      'SELECT CAST(t."objectid" AS double precision) AS c0, CAST(t."ki""nd" AS text) AS c1, ST_AsBinary(t."geom") AS g ' +
        'FROM "cities" AS t WHERE ((t."name" LIKE CAST($1 AS text) ESCAPE CAST($2 AS text)) AND (t."pop" > CAST($3 AS bigint)) ' +
        'AND (t."area" < CAST($4 AS double precision))) ORDER BY t."objectid" ASC LIMIT CAST($5 AS bigint) OFFSET CAST($6 AS bigint)',
    );
    expect(q.params).toEqual(["P%", "", 5, 2.5, 2001, 0]);
  });

  it("reads dates as whole epoch milliseconds and compares them with bound milliseconds", () => {
    const q = pg({ where: "founded > date '2001-03-04' AND EXTRACT(YEAR FROM day) = 2001", returnCountOnly: "true" });
    expect(q.sql).toContain(
      'CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) > CAST($1 AS bigint)',
    );
    expect(q.sql).toContain(
      'EXTRACT(YEAR FROM (to_timestamp(CAST(ROUND(EXTRACT(EPOCH FROM t."day") * 1000) AS double precision) / 1000.0) AT TIME ZONE CAST($2 AS text))',
    );
    expect(q.params).toEqual([Date.UTC(2001, 2, 4), "UTC", 2001]);
  });

  it("filters spatially: the GiST box, then the relation in ArcGIS's sense", () => {
    const geometry = { type: "Point" as const, coordinates: [1, 2] };
    const base = { bbox: [1, 2, 1, 2] as const, geometry };
    const q = pg({ geometry: "1,2", returnCountOnly: "true" }, { ...base, relation: "intersects" });
    expect(q.sql).toBe(
      'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), ' +
        "CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND " +
        'ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom")',
    );
    expect(q.params).toEqual([1, 2, 1, 2, 4326, JSON.stringify(geometry)]);
    expect(
      pg({ geometry: "1,2", spatialRel: "esriSpatialRelContains" }, { ...base, relation: "contains" }).sql,
    ).toMatch(/ST_Contains\(ST_SetSRID\(.*\), t\."geom"\)/);
    expect(pg({ geometry: "1,2", spatialRel: "esriSpatialRelWithin" }, { ...base, relation: "within" }).sql).toMatch(
      /ST_Within\(ST_SetSRID\(.*\), t\."geom"\)/,
    );
    expect(pg({ geometry: "1,2", distance: "5" }, { ...base, relation: "intersects", distance: 5 }).sql).toMatch(
      /ST_DWithin\(.*, t\."geom", CAST\(\$7 AS double precision\)\)/,
    );
    expect(
      pg(
        { geometry: "1,2", distance: "5", spatialRel: "esriSpatialRelTouches" },
        { ...base, relation: "touches", distance: 5 },
      ).sql,
    ).toMatch(/ST_Touches\(ST_Buffer\(/);
    expect(
      pg(
        { geometry: "1,2", spatialRel: "esriSpatialRelEnvelopeIntersects" },
        { ...base, relation: "envelopeIntersects" },
      ).sql,
    ).not.toMatch(/ST_GeomFromGeoJSON/);
  });

  it("probes the index point by point for many points, and repairs feature geometries when asked", () => {
    const geometry = {
      type: "MultiPoint" as const,
      coordinates: [
        [1, 2],
        [3, 4],
      ],
    };
    const base = { bbox: [1, 2, 3, 4] as const, geometry, relation: "intersects" as const };
    const q = pg({ geometry: '{"points":[[1,2],[3,4]]}', geometryType: "esriGeometryMultipoint" }, base);
    expect(q.sql).toContain(
      't."objectid" IN (SELECT p."objectid" FROM "cities" AS p JOIN ST_Dump(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer))) AS d ON p."geom" && d.geom WHERE ST_Intersects(d.geom, p."geom"))',
    );
    const repaired = pg(
      { geometry: "1,2", spatialRel: "esriSpatialRelCrosses" },
      {
        ...base,
        geometry: { type: "Point", coordinates: [1, 2] },
        relation: "crosses",
        repair: true,
      },
    );
    expect(repaired.sql).toMatch(/ST_Crosses\(ST_SetSRID\(.*\), ST_Buffer\(t\."geom", 0\)\)/);
  });

  it("folds a constant CONCAT once (|| over COALESCE) and bounds ROUND's places", () => {
    const concat = pg({ where: "name LIKE CONCAT('%', UPPER('x'), '%')" });
    expect(concat.sql).toContain("(COALESCE(CAST($1 AS text), '') || COALESCE(upper(CAST($2 AS text)), '') ||");
    expect(pg({ where: "ROUND(area, 1000000000) > 0" }).sql).toContain(
      'round(CAST(t."area" AS numeric), CAST(LEAST(GREATEST(CAST(CAST($1 AS bigint) AS bigint), -400), 400) AS integer))',
    );
    expect(roundDecimal(48.85341, 1_000_000_000)).toBe(48.85341);
    expect(roundDecimal(48.85341, -1_000_000_000)).toBe(0);
    expect(roundDecimal(1234.5678, 13)).toBe(1234.5678);
  });

  it("emits each output kind", () => {
    expect(pg({ returnIdsOnly: "true", objectIds: "3,1" }).sql).toBe(
      'SELECT string_agg(CAST(t."objectid" AS text), CAST($2 AS text) ORDER BY t."objectid" ASC) AS ids FROM "cities" AS t WHERE t."objectid" = ANY(CAST($1 AS bigint[]))',
    );
    expect(pg({ returnExtentOnly: "true", returnCountOnly: "true" }).sql).toBe(
      'SELECT ST_XMin(e) AS xmin, ST_YMin(e) AS ymin, ST_XMax(e) AS xmax, ST_YMax(e) AS ymax, n FROM (SELECT ST_Extent(t."geom") AS e, CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t) AS s',
    );
    const stats = pg({
      outStatistics: JSON.stringify([
        {
          statisticType: "percentile_cont",
          onStatisticField: "pop",
          outStatisticFieldName: "m",
          statisticParameters: { value: 0.9, orderBy: "DESC" },
        },
      ]),
      groupByFieldsForStatistics: "kind",
      having: "SUM(pop) > 1000",
    });
    expect(stats.sql).toBe(
      'SELECT CAST(t."ki""nd" AS text) AS g0, CAST(percentile_cont(CAST($1 AS double precision)) WITHIN GROUP (ORDER BY t."pop" DESC) AS double precision) AS s0 FROM "cities" AS t GROUP BY 1 HAVING (CAST(SUM(t."pop") AS double precision) > CAST($2 AS bigint)) ORDER BY g0 ASC NULLS FIRST LIMIT CAST($3 AS bigint) OFFSET CAST($4 AS bigint)',
    );
    expect(pg({ outFields: "kind,name", returnDistinctValues: "true" }).sql).toMatch(
      /^SELECT DISTINCT .* ORDER BY c0 ASC NULLS FIRST, c1 ASC NULLS FIRST LIMIT/,
    );
  });
});

/** The texts the SQLite emitter binds in another form: LIKE patterns with runs of % made one, TRIM sets deduped. */
function boundForms(e: Expr | undefined): Map<unknown, string> {
  const forms = new Map<unknown, string>();
  for (const n of e === undefined ? [] : nodes(e)) {
    if (n.kind === "like" && n.pattern.kind === "string")
      forms.set(n.pattern.value, collapsePercents(n.pattern.value, n.escape));
    if (n.kind === "trim" && n.chars?.kind === "string") forms.set(n.chars.value, [...new Set(n.chars.value)].join(""));
  }
  return forms;
}

/** The literal values of a tree, as the emitters must bind them. */
function literals(e: Expr | undefined): unknown[] {
  if (e === undefined) return [];
  return [...nodes(e)].flatMap((n) =>
    n.kind === "string" || n.kind === "number" || n.kind === "date" ? [n.value] : [],
  );
}

describe("fuzz: hostile where texts", () => {
  const hostile = [
    "' OR 1=1 --",
    "name = '' OR 1=1 --'",
    "name = 'x'; DROP TABLE cities",
    "name = 'x' /* */",
    "1=1; SELECT * FROM sqlite_master",
    "name = 'a'' OR ''1''=''1'",
    "name = '\\' OR 1=1",
    "name = 'Robert''); DROP TABLE cities;--'",
    "name = '\u0000'",
    "name = 'ü🙂\u202e'",
    '"name"" = 1 OR ""x" = \'a\'',
    "pop = 1e999",
    "pop = 99999999999999999999",
    "pop = -0",
    "pop = 0x10",
    "pop IN (SELECT 1)",
    "name LIKE '%' ESCAPE ''''",
    `${"(".repeat(100_000)}`,
    "pop = 1 UNION SELECT sql FROM sqlite_master",
    "name = $$x$$",
    "name = E'\\x27'",
    "name = 'x' COLLATE nocase",
    "CAST(name AS TEXT) = 'x'",
    "name = ?",
    "name = :a",
    "name = 'x' || 'y'",
  ];
  const alphabet = [
    "'",
    '"',
    "(",
    ")",
    " ",
    "=",
    "<",
    ">",
    "-",
    "*",
    "/",
    ";",
    "%",
    "_",
    "!",
    ",",
    ".",
    "e",
    "1",
    "9",
    "N",
    "ü",
    "🙂",
    "\u0000",
    "\n",
    "\\",
  ];
  const words = [
    "pop",
    "name",
    "founded",
    "AND",
    "OR",
    "NOT",
    "IN",
    "LIKE",
    "ESCAPE",
    "BETWEEN",
    "IS",
    "NULL",
    "date",
    "timestamp",
    "'2001-01-01'",
    "'x''y'",
    "UPPER(",
    "CAST(",
    "AS",
    "INT",
    "EXTRACT(",
    "YEAR",
    "FROM",
    "1=1",
    "--",
    "/*",
  ];
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
  const generated = Array.from({ length: 3000 }, () => {
    const parts = Array.from({ length: 1 + Math.floor(random() * 12) }, () =>
      random() < 0.5 ? pick(alphabet) : ` ${pick(words)} `,
    );
    return parts.join("");
  });
  // Valid strings: anything but NUL, which no string may hold (PostgreSQL's text cannot).
  const stringChars = alphabet.filter((c) => c !== "\u0000");
  const valid = Array.from({ length: 300 }, () => {
    const value = Array.from({ length: 1 + Math.floor(random() * 8) }, () => pick(stringChars))
      .join("")
      .replaceAll("'", "''");
    return `name = '${value}' OR kind LIKE '${value}%' OR pop = ${Math.floor(random() * 1e9)}`;
  });

  it("refuses with the typed 400 or emits SQL holding no literal, in both dialects", () => {
    let accepted = 0;
    for (const where of [...hostile, ...generated, ...valid]) {
      let p: QueryPlan;
      try {
        p = plan({ where, returnGeometry: "false" });
      } catch (e) {
        expect(e).toBeInstanceOf(ApiError);
        expect((e as ApiError).code).toBe(400);
        expect((e as ApiError).details[0]).toBe("'where' parameter is invalid");
        continue;
      }
      accepted++;
      for (const dialect of ["sqlite", "postgres"] as Dialect[]) {
        const q = emitQuery(dialect, p, citiesSchema);
        // The SQL holds no quote, semicolon or comment of its own, so none can come from a request either.
        expect(q.sql).not.toMatch(/'|;|--|\/\*/);
        const forms = boundForms(p.where);
        for (const value of literals(p.where)) {
          const bound = q.params.some(
            (b) => b === value || b === forms.get(value) || (typeof b === "bigint" && Number(b) === value),
          );
          expect(bound, `${String(value)} bound in ${dialect}`).toBe(true);
          if (typeof value === "string" && value.length >= 3 && !/^[\w ]+$/.test(value))
            expect(q.sql).not.toContain(value);
        }
      }
      // And SQLite runs it.
      const q = emitQuery("sqlite", p, citiesSchema);
      expect(() => db.prepare(q.sql).all(...(q.params as never[]))).not.toThrow();
    }
    expect(accepted).toBeGreaterThan(300);
    expect(db.prepare("SELECT COUNT(*) AS n FROM cities").get()).toEqual({ n: 8 });
  });
});
