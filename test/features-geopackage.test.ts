// The GeoPackage reader on a real file: its schema as a layer, and what bounds a statement — the deadline every
// filtering statement calls, and the read-only connection under its authorizer.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { QueryTimeoutError } from "#shared/features/errors.ts";
import { GeoPackage, MAX_FUNCTION_TEXT, QueryTextError } from "#shared/features/geopackage.ts";
import { planQuery } from "#shared/features/plan.ts";
import { geoPackageDataset } from "#shared/features/dataset.ts";
import { runQuery } from "#shared/features/query.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { emitQuery } from "#shared/features/sql.ts";
import { ApiError } from "#shared/errors.ts";
import { Params } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";

const ROWS = 5_000;
let gpkg: GeoPackage;
let schema: LayerSchema;

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), "mapgate-gpkg-")), "points.gpkg");
  writeGeoPackage(file, [
    {
      name: "points",
      geometryType: "POINT",
      columns: [{ name: "label", type: "TEXT" }],
      rows: Array.from({ length: ROWS }, (_, i) => ({
        values: { label: `p${i}` },
        geometry: { type: "Point", coordinates: [i / 100, i / 200] },
      })),
    },
  ]);
  gpkg = await GeoPackage.open(file, "v1");
  const described = gpkg.schema("points");
  if (!described || !("fields" in described)) throw new Error("no schema");
  schema = described;
});
afterAll(() => gpkg?.close());

const statement = (where: string, extra: Record<string, string> = {}) => {
  const params = new Map(Object.entries({ where, ...extra }));
  return emitQuery("sqlite", planQuery({ get: (name) => params.get(name) }, schema), schema);
};

describe("a GeoPackage table as a layer", () => {
  it("takes its key as the object id and its geometry column with its R*Tree", () => {
    expect(schema).toMatchObject({
      name: "points",
      objectIdField: "fid",
      displayField: "label",
      geometry: { column: "geom", type: "esriGeometryPoint", srid: 4326, index: "rtree_points_geom" },
    });
    expect(schema.extent?.[2]).toBeCloseTo((ROWS - 1) / 100, 3);
  });
});

describe("what bounds a statement", () => {
  it("a filtering statement ends at its deadline with QueryTimeoutError, and runs in full before it", () => {
    const count = statement("label LIKE 'p%'", { returnCountOnly: "true" });
    expect(gpkg.all(count.sql, count.params, Date.now() + 10_000)).toEqual([[ROWS]]);
    expect(() => gpkg.all(count.sql, count.params, Date.now() - 1)).toThrow(QueryTimeoutError);
    // A sorting statement without a filter is bounded the same way.
    const sorted = statement("", { orderByFields: "label DESC", resultRecordCount: "10" });
    expect(() => gpkg.all(sorted.sql, sorted.params, Date.now() - 1)).toThrow(QueryTimeoutError);
  });

  it("checks the deadline before each exact spatial test, however few the rows (one test may be costly)", () => {
    const spatial = emitQuery(
      "sqlite",
      planQuery({ get: (name) => ({ geometry: "0,0,100,100", returnCountOnly: "true" })[name] }, schema),
      schema,
      { bbox: [0, 0, 100, 100], relation: "intersects", geometry: { type: "Point", coordinates: [0, 0] } },
    );
    gpkg.spatialTest = () => {
      const until = Date.now() + 5;
      while (Date.now() < until);
      return true;
    };
    try {
      const started = Date.now();
      // 5,000 tests of 5 ms would take 25 s; the deadline every 256 rows alone would let 1.3 s pass.
      expect(() => gpkg.all(spatial.sql, spatial.params, Date.now() + 50)).toThrow(QueryTimeoutError);
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      gpkg.spatialTest = undefined;
    }
  });

  it("bounds the text a statement hands the query's functions (Node holds it all until the statement ends)", () => {
    // Each row hands UPPER its label and the literal, and takes as much back.
    const upper = (chars: number) =>
      statement(`UPPER(CONCAT(label, '${"x".repeat(chars)}')) = 'X'`, { returnCountOnly: "true" });
    const fits = Math.floor(MAX_FUNCTION_TEXT / ROWS / 2) - 100;
    const under = upper(fits);
    expect(gpkg.all(under.sql, under.params, Date.now() + 10_000)).toEqual([[0]]);
    const over = upper(fits + 200);
    expect(() => gpkg.all(over.sql, over.params, Date.now() + 10_000)).toThrow(QueryTextError);
    // Counted per statement: the next one starts from nothing.
    expect(gpkg.all(under.sql, under.params, Date.now() + 10_000)).toEqual([[0]]);
  });

  it("refuses anything but reading, whatever the SQL", () => {
    for (const sql of ["DELETE FROM points", "UPDATE points SET label = 'x'", "ATTACH DATABASE ':memory:' AS x"])
      expect(() => gpkg.all(sql, [], Date.now() + 1_000)).toThrow();
    expect(gpkg.all("SELECT count(*) FROM points", [], Date.now() + 1_000)).toEqual([[ROWS]]);
  });
});

describe("a query's faults that are the request's", () => {
  const query = (params: Record<string, string>) =>
    runQuery(
      { params: new Params(new Map(Object.entries({ f: "json", ...params }))) } as unknown as RestRequest,
      geoPackageDataset(gpkg, schema),
    );
  const refusal = async (params: Record<string, string>) => {
    const err = await query(params).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(400);
    return (err as ApiError).details;
  };

  it("a negative SUBSTRING length, named as the where or the having it came from", async () => {
    expect(await refusal({ where: "SUBSTRING(label FROM 1 FOR fid - 100000) = 'p'" })).toEqual([
      "'where' parameter is invalid",
      "SUBSTRING was given a negative length.",
    ]);
    const stats = JSON.stringify([{ statisticType: "count", onStatisticField: "fid", outStatisticFieldName: "n" }]);
    const having = await refusal({
      outStatistics: stats,
      groupByFieldsForStatistics: "label",
      having: "SUBSTRING(label FROM 1 FOR COUNT(fid) - 5) = 'p'",
    });
    expect(having[0]).toBe("'having' parameter is invalid");
  });

  it("an expression handing its functions too much text for the rows, named as the where", async () => {
    const details = await refusal({ where: `UPPER(CONCAT(label, '${"x".repeat(16_000)}')) = 'X'` });
    expect(details[0]).toBe("'where' parameter is invalid");
  });

  it("a spatial reference the geometry names itself, named as the geometry (inSR was not sent)", async () => {
    expect(await refusal({ geometry: '{"x":1,"y":2,"spatialReference":{"wkid":999999}}' })).toEqual([
      "'geometry' parameter is invalid",
      "spatial reference 999999 is not supported",
    ]);
  });
});
