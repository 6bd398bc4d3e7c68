// A GeoPackage layer's extent read from its R*Tree's root node (shared/features/geopackage.ts rtreeExtent): the same
// four numbers a scan of the index gives, after inserts, deletes of the rows holding the extremes, and updates, on a
// tree several levels deep; none for an empty index; a root node that does not read as one is scanned, meeting the
// index's own error.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { encodeGeometry } from "#shared/features/geometry/wkb-write.ts";
import { rtreeExtent } from "#shared/features/geopackage.ts";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { registerSpatialFunctions } from "#shared/hosted/geopackage-store.ts";

const dir = mkdtempSync(join(tmpdir(), "mapgate-rtree-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const INDEX = "rtree_sites_geom";

/** A layer of `n` points spread over the world (the writer fills the R*Tree), open for writing as edits open it. */
function layer(name: string, n: number): DatabaseSync {
  const path = join(dir, `${name}.gpkg`);
  writeGeoPackage(path, [
    {
      name: "sites",
      geometryType: "POINT",
      srsId: 4326,
      columns: [{ name: "n", type: "INTEGER" }],
      rows: Array.from({ length: n }, (_, i) => ({
        values: { n: i },
        geometry: { type: "Point" as const, coordinates: [((i * 37) % 340) - 170 + i / n, ((i * 11) % 160) - 80] },
      })),
    },
  ]);
  const db = new DatabaseSync(path, { enableForeignKeyConstraints: false });
  registerSpatialFunctions(db);
  return db;
}

const scanned = (db: DatabaseSync) =>
  Object.values(
    db.prepare(`SELECT min(minx), min(miny), max(maxx), max(maxy) FROM "${INDEX}"`).get() as Record<string, unknown>,
  );
const depth = (db: DatabaseSync) =>
  Buffer.from(
    (db.prepare(`SELECT data FROM "${INDEX}_node" WHERE nodeno = 1`).get() as { data: Uint8Array }).data,
  ).readUInt16BE(0);
const point = (x: number, y: number) => encodeGeometry({ type: "Point", coordinates: [x, y] }, 4326).bytes;

describe("a GeoPackage layer's extent from its R*Tree's root node", () => {
  it("equals a scan of the index on a tree several levels deep, as rows come and go", () => {
    const db = layer("deep", 5000);
    expect(depth(db)).toBeGreaterThanOrEqual(1);
    expect(rtreeExtent(db, INDEX)).toEqual(scanned(db));
    // The rows holding each extreme deleted: the boxes above them shrink.
    for (const [column, order] of [
      ["minx", "ASC"],
      ["maxx", "DESC"],
      ["miny", "ASC"],
      ["maxy", "DESC"],
    ] as const) {
      db.exec(`DELETE FROM sites WHERE fid IN (SELECT id FROM "${INDEX}" ORDER BY ${column} ${order} LIMIT 40)`);
      expect(rtreeExtent(db, INDEX)).toEqual(scanned(db));
    }
    db.prepare("INSERT INTO sites (n, geom) VALUES (?, ?)").run(-1, point(179.5, -89.25));
    expect(rtreeExtent(db, INDEX)).toEqual(scanned(db));
    expect(rtreeExtent(db, INDEX)?.[2]).toBe(179.5);
    db.prepare("UPDATE sites SET geom = ? WHERE n = -1").run(point(0.5, 0.5));
    expect(rtreeExtent(db, INDEX)).toEqual(scanned(db));
    db.close();
  });

  it("is none once every row is gone, and a point's own box when one is left", () => {
    const db = layer("few", 3);
    db.exec("DELETE FROM sites WHERE n > 0");
    expect(rtreeExtent(db, INDEX)).toEqual([-170, -80, -170, -80]);
    db.exec("DELETE FROM sites");
    expect(scanned(db)).toEqual([null, null, null, null]);
    expect(rtreeExtent(db, INDEX)).toBeUndefined();
    db.close();
  });

  it("answers no made-up extent from a root node that does not read as one: the index's own error, as a scan meets", () => {
    const db = layer("odd", 10);
    // A root node claiming more cells than it holds (a file another tool wrote oddly).
    const data = Buffer.from(
      (db.prepare(`SELECT data FROM "${INDEX}_node" WHERE nodeno = 1`).get() as { data: Uint8Array }).data,
    );
    data.writeUInt16BE(60000, 2);
    // Shadow tables are written only outside SQLite's defensive mode.
    db.enableDefensive(false);
    db.prepare(`UPDATE "${INDEX}_node" SET data = ? WHERE nodeno = 1`).run(data);
    expect(() => scanned(db)).toThrow(/malformed/);
    expect(() => rtreeExtent(db, INDEX)).toThrow(/malformed/);
    db.close();
  });
});
