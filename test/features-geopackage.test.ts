// The GeoPackage reader on a real file: its schema as a layer, and what bounds a statement — the deadline every
// filtering statement calls, and the read-only connection under its authorizer.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeGeoPackage } from "#infra/local/demo/geopackage.ts";
import { GeoPackage, QueryTimeoutError } from "#shared/features/geopackage.ts";
import { planQuery } from "#shared/features/plan.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { emitQuery } from "#shared/features/sql.ts";

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

  it("refuses anything but reading, whatever the SQL", () => {
    for (const sql of ["DELETE FROM points", "UPDATE points SET label = 'x'", "ATTACH DATABASE ':memory:' AS x"])
      expect(() => gpkg.all(sql, [], Date.now() + 1_000)).toThrow();
    expect(gpkg.all("SELECT count(*) FROM points", [], Date.now() + 1_000)).toEqual([[ROWS]]);
  });
});
