// What PostgreSQL's planner does with the SQL mapgate emits for the features figures' page (an envelope, a where on
// an attribute, ordered by object id, a page of 1,000), on the demo's places copied twice into PostGIS (342,150 points,
// its GiST index and key as publishing makes them): EXPLAIN before and after a btree on the where's column and the
// key, the page's answer identical either way, and the walk stopping at the page's end once that index exists. The
// PostgreSQL emitter chooses no path itself (access.ts is SQLite's): these show the planner can take the better one.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeDemoGeoPackage } from "#infra/local/demo/world-geopackage.ts";
import { type OpenDataset, postGisDataset } from "#shared/features/dataset.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { planQuery } from "#shared/features/plan.ts";
import { PostGisDatabase } from "#shared/features/postgis.ts";
import { answerQuery } from "#shared/features/query.ts";
import { emitQuery } from "#shared/features/sql.ts";
import { copyGeoPackageTable, type Postgres, startPostgres } from "./helpers/postgres.ts";

let work: string;
let db: Postgres;
let pool: pg.Pool;
let places: OpenDataset;

/** Rows copied once more with their ids moved past the first copy's: a layer of a few hundred thousand rows. */
const SHIFT = 1_000_000;

beforeAll(async () => {
  db = await startPostgres();
  work = mkdtempSync(join(tmpdir(), "mapgate-plans-pg-"));
  const file = join(work, "world.gpkg");
  writeDemoGeoPackage(file);
  await copyGeoPackageTable(file, "places", db.admin);
  await db.admin.query(
    `INSERT INTO places SELECT fid + ${SHIFT}, geom, name, country, admin1, admin1_name, admin2, lat, lng FROM places`,
  );
  await db.admin.query("ANALYZE places");
  await db.admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${db.reader.user}`);
  pool = new pg.Pool({
    host: "127.0.0.1",
    port: db.port,
    database: db.database,
    user: db.reader.user,
    password: db.reader.password,
    max: 2,
    statement_timeout: 30_000,
    options: "-c default_transaction_read_only=on",
  });
  const database = new PostGisDatabase(pool, () => undefined);
  const schema = await database.schema("public.places");
  if (!schema || schema instanceof DatasetError) throw new Error("no places layer in PostGIS");
  places = postGisDataset(database, schema);
}, 180_000);

afterAll(async () => {
  await pool?.end();
  await db?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const PAGE = {
  where: "country = 'FR'",
  geometry: "-5,42,8,51",
  geometryType: "esriGeometryEnvelope",
  inSR: "4326",
  outFields: "*",
  resultRecordCount: "1000",
};
const params = (p: Record<string, string>) => ({ get: (n: string) => p[n] });

/**
 * The emitted statement's plan as PostgreSQL runs it (EXPLAIN ANALYZE: the rows each node really read, and the time),
 * with the planner's settings `set` for this statement alone.
 */
async function explain(p: Record<string, string>, set: Record<string, string> = {}): Promise<string[]> {
  const plan = planQuery(params(p), places.schema);
  const filter = {
    bbox: [-5, 42, 8, 51] as const,
    relation: "intersects" as const,
    geometry: {
      type: "Polygon" as const,
      coordinates: [
        [
          [-5, 42],
          [8, 42],
          [8, 51],
          [-5, 51],
          [-5, 42],
        ],
      ],
    },
  };
  const emitted = emitQuery("postgres", plan, places.schema, { ...filter, bbox: [-5, 42, 8, 51] });
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    for (const [name, value] of Object.entries(set)) await client.query(`SET LOCAL ${name} = ${value}`);
    const out = await client.query({
      text: `EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) ${emitted.sql}`,
      values: emitted.params,
    });
    // The envelope's literal (a long hexadecimal WKB) is of no interest beside the nodes.
    return out.rows.map((r: Record<string, string>) => String(Object.values(r)[0]).replace(/'[0-9A-F]{40,}'/g, "'…'"));
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

async function pageIds(p: Record<string, string>): Promise<number[]> {
  const a = await answerQuery(params(p), undefined, places);
  if (a.kind !== "features") throw new Error("not a page of features");
  return a.features.map((f) => Number(f.attributes.fid));
}

describe("the features figures' page on PostGIS", () => {
  it("reads a page in id order, stopping at its end, once the where's column and the key have a btree", async () => {
    const before = await explain(PAGE);
    const idsBefore = await pageIds(PAGE);
    console.log(`EXPLAIN ANALYZE before:\n${before.join("\n")}`);

    await db.admin.query("CREATE INDEX places_country_fid ON places (country, fid)");
    await db.admin.query("ANALYZE places");
    const after = await explain(PAGE);
    const idsAfter = await pageIds(PAGE);
    console.log(`EXPLAIN ANALYZE after:\n${after.join("\n")}`);
    // The walk in id order, as SQLite takes it: the planner's own estimate (the window's share taken as independent
    // of the country) prices it above the bitmaps; it is the plan it takes without them.
    const walk = await explain(PAGE, { enable_bitmapscan: "off", enable_sort: "off" });
    console.log(`EXPLAIN ANALYZE after, no bitmap scans or sorts:\n${walk.join("\n")}`);

    expect(idsAfter).toEqual(idsBefore);
    expect(idsAfter).toHaveLength(1000);
    // Before: the GiST index alone, every row of the window read and tested for the country.
    expect(before.join("\n")).toContain("Bitmap Index Scan on places_geom_idx");
    expect(before.join("\n")).not.toContain("places_country_fid");
    // After: both indexes, under a Limit: only rows of the country inside the window are read.
    expect(after[0]).toMatch(/^Limit/);
    expect(after.join("\n")).toContain("Bitmap Index Scan on places_country_fid");
    expect(after.join("\n")).toContain("Bitmap Index Scan on places_geom_idx");
    // The walk: the btree in id order under the Limit, no sort, stopping at the page's 1,001st row.
    expect(walk[0]).toMatch(/^Limit \(actual time=[\d.]+ rows=1001 /);
    expect(walk.join("\n")).toContain("Index Scan using places_country_fid on places t");
    expect(walk.join("\n")).not.toContain("Sort");
  });
});
