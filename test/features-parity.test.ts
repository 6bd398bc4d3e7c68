// The same rows in a GeoPackage and in PostGIS answer a `where` alike, including the wheres whose arguments a
// function cannot take (POWER past a double or with no real result, SUBSTRING past 32-bit positions, a LIKE
// pattern ending in its escape, a NUL in a string): one 400 with the same reason from both, whether the argument
// is a literal (judged by the parser, no SQL run) or computed from the row (SQLite's functions refuse what
// PostgreSQL refuses, in the same words). The query step runs on the real GeoPackage reader and on a throwaway
// PostgreSQL + PostGIS cluster on loopback through the reader's own read-only pool. And returnIdsOnly answers
// alike from both, without holding a row per id: its memory measured on a million rows.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { GeoPackage } from "#shared/features/geopackage.ts";
import { PostGisDatabase } from "#shared/features/postgis.ts";
import { idList, runQuery } from "#shared/features/query.ts";
import { geoPackageDataset, type OpenDataset, postGisDataset } from "#shared/features/dataset.ts";
import { ApiError } from "#shared/errors.ts";
import { Params } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { citiesLayer } from "./helpers/feature-layer.ts";
import { copyGeoPackageTable, type Postgres, startPostgres } from "./helpers/postgres.ts";

let work: string;
let gpkg: GeoPackage;
let db: Postgres;
let pool: pg.Pool;
let fromFile: OpenDataset;
let fromDb: OpenDataset;

beforeAll(async () => {
  db = await startPostgres();
  work = mkdtempSync(join(tmpdir(), "mapgate-parity-"));
  const file = join(work, "cities.gpkg");
  writeGeoPackage(file, [citiesLayer]);
  gpkg = await GeoPackage.open(file, "v1");
  const fileSchema = gpkg.schema("cities");
  if (!fileSchema || fileSchema instanceof DatasetError) throw new Error("no cities layer in the GeoPackage");
  fromFile = geoPackageDataset(gpkg, fileSchema);
  await copyGeoPackageTable(file, "cities", db.admin);
  await db.admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${db.reader.user}`);
  // The reader's pool as postgis.ts makes it: the read-only login, read-only sessions.
  pool = new pg.Pool({
    host: "127.0.0.1",
    port: db.port,
    database: db.database,
    user: db.reader.user,
    password: db.reader.password,
    max: 2,
    statement_timeout: 10_000,
    options: "-c default_transaction_read_only=on",
  });
  const database = new PostGisDatabase(pool, () => undefined);
  const dbSchema = await database.schema("public.cities");
  if (!dbSchema || dbSchema instanceof DatasetError) throw new Error("no cities layer in PostGIS");
  fromDb = postGisDataset(database, dbSchema);
}, 60_000);

afterAll(async () => {
  gpkg?.close();
  await pool?.end();
  await db?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

type Outcome = { answer: unknown } | { error: { code: number; message: string; details: readonly string[] } };

/** What a query answers (its JSON) or refuses (the envelope's parts); anything but the 400 envelope fails. */
async function outcome(dataset: OpenDataset, params: Record<string, string>): Promise<Outcome> {
  const req = { params: new Params(new Map(Object.entries({ f: "json", ...params }))) } as unknown as RestRequest;
  try {
    return { answer: await runQuery(req, dataset) };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { error: { code: err.code, message: err.message, details: err.details } };
  }
}

const refused = (reason: string): Outcome => ({
  error: { code: 400, message: "Unable to complete operation.", details: ["'where' parameter is invalid", reason] },
});
const reasonLike = (pattern: RegExp) =>
  expect.objectContaining({
    error: expect.objectContaining({ details: ["'where' parameter is invalid", expect.stringMatching(pattern)] }),
  });

const NUL = "\u0000";
const RANGE = /^A number in the expression is out of range/;
const POWER = /^POWER has no real result/;
const ESCAPE = /^A LIKE pattern cannot end with its ESCAPE character/;
const NEGATIVE = /^SUBSTRING was given a negative length/;
const NUL_STRING = /^A string cannot hold the NUL character/;

/** Each where, and what both sources answer: a count, or the 400 with a reason of this form. */
const CASES: [string, number | RegExp][] = [
  // The forms one source counted and the other refused; literal arguments, judged before any SQL runs.
  ["POWER(10, 400) > 1", RANGE],
  ["POWER(-8, 0.5) > 1", POWER],
  ["POWER(0, -1) > 1", POWER],
  ["SUBSTRING(name, 1e300, 1) = 'a'", RANGE],
  ["name LIKE '!' ESCAPE '!'", ESCAPE],
  [`name = 'a${NUL}b'`, NUL_STRING],
  // Neighbours: the edges of each rule, literal and computed.
  ["POWER(10, -400) > 1", RANGE],
  ["POWER(10, 308) > 1", 8],
  ["POWER(-8, 3) < 0", 8],
  ["POWER(0, 0) = 1", 8],
  ["POWER(2, -1074) > 0", 8],
  ["POWER(area, 400) > 1", RANGE],
  ["POWER(area, -4000) >= 0", RANGE],
  ["POWER(-area, 0.5) > 1", POWER],
  ["POWER(pop - pop, -1) > 1", POWER],
  ["POWER(area, 2) > 10000", 1],
  ["SUBSTRING(name, 2147483648, 1) = 'a'", RANGE],
  ["SUBSTRING(name, -2147483649, 1) = 'a'", RANGE],
  ["SUBSTRING(name, 2147483647, 1) = ''", 7],
  ["SUBSTRING(name, 1, -1) = 'a'", NEGATIVE],
  ["SUBSTRING(name, 1, -0.4) = ''", 7],
  ["SUBSTRING(name FROM 2.5 FOR 2) = 'ar'", 2],
  ["SUBSTRING(name FROM -1.5 FOR 4) = 'P'", 1],
  ["SUBSTRING(name FROM 1 FOR pop - 1000000) = 'a'", NEGATIVE],
  ["SUBSTRING(name FROM pop * 10000) = 'a'", RANGE],
  ["name LIKE 'a!' ESCAPE '!'", ESCAPE],
  ["name LIKE '!%' ESCAPE '!'", 0],
  ["name LIKE '%!%' ESCAPE '!'", 1],
  // A computed pattern fails where PostgreSQL's matcher fails: on reaching the dangling escape with text left.
  ["name LIKE CONCAT(kind, '!') ESCAPE '!'", 0],
  // Each name matches itself with no text left, but the % of "O'Hare 100%" reaches the escape with one left.
  ["name LIKE CONCAT(name, '!') ESCAPE '!'", ESCAPE],
  ["name LIKE CONCAT(SUBSTRING(name FROM 1 FOR 1), '!') ESCAPE '!'", ESCAPE],
  [`name LIKE N'%${NUL}%'`, NUL_STRING],
  ["1=1", 8],
];

describe("a GeoPackage and PostGIS holding the same rows answer a where alike", () => {
  it.each(CASES)("%j", async (where, expected) => {
    const params = { where, returnCountOnly: "true" };
    const [a, b] = await Promise.all([outcome(fromFile, params), outcome(fromDb, params)]);
    expect(b).toEqual(a);
    expect(a).toEqual(typeof expected === "number" ? { answer: { count: expected } } : reasonLike(expected));
  });

  it("the same rows, not only the same count, where positions are rounded half to even", async () => {
    for (const where of ["SUBSTRING(name FROM 2.5 FOR 2) = 'ar'", "SUBSTRING(name FROM -1.5 FOR 4) = 'P'"]) {
      const params = { where, outFields: "fid,name", orderByFields: "fid", returnGeometry: "false" };
      const [a, b] = await Promise.all([outcome(fromFile, params), outcome(fromDb, params)]);
      expect(b).toEqual(a);
    }
  });

  it("names the reason with the position of a literal argument", async () => {
    expect(await outcome(fromFile, { where: "POWER(0, -1) > 1" })).toEqual(
      refused(
        "POWER has no real result for these arguments (zero to a negative power, or a negative number to a fractional one) at position 1.",
      ),
    );
  });
});

describe("returnIdsOnly", () => {
  it("answers the same ids, in the asked order, from both; none as an empty list", async () => {
    const cases: [Record<string, string>, number[]][] = [
      [{ where: "1=1" }, [1, 2, 3, 4, 5, 6, 7, 8]],
      [{ where: "pop > 300000", orderByFields: "pop" }, [8, 4, 2, 1]],
      // NULLs first ascending, last descending, as every other answer orders them.
      [{ orderByFields: "name DESC" }, [3, 4, 1, 6, 2, 7, 8, 5]],
      [{ where: "pop < 0" }, []],
      [{ objectIds: "7,3,99" }, [3, 7]],
    ];
    for (const [params, ids] of cases) {
      const query = { returnIdsOnly: "true", ...params };
      const [a, b] = await Promise.all([outcome(fromFile, query), outcome(fromDb, query)]);
      expect(a, JSON.stringify(params)).toEqual({ answer: { objectIdFieldName: "fid", objectIds: ids } });
      expect(b).toEqual(a);
    }
  });

  it("reads a joined text of ids of any sign, and one past 2^53 as Number() rounds it", () => {
    expect(idList("1,-20,300")).toEqual([1, -20, 300]);
    expect(idList("9007199254740993,-9223372036854775808")).toEqual([9007199254740992, -9223372036854775808]);
    expect(idList("")).toEqual([]);
  });

  it("holds no row per id: a million ids take a few bytes each beside the answer's text", async () => {
    const ROWS = 1_000_000;
    await db.admin.query(
      `CREATE TABLE public.many (id integer PRIMARY KEY, v double precision);
       INSERT INTO public.many SELECT g, g * 0.5 FROM generate_series(1, ${ROWS}) AS g;
       ANALYZE public.many; GRANT SELECT ON public.many TO ${db.reader.user}`,
    );
    const file = join(work, "many.gpkg");
    writeGeoPackage(file, [{ name: "many", columns: [{ name: "v", type: "DOUBLE" }], rows: [] }]);
    const writer = new DatabaseSync(file);
    writer.exec(
      `WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ${ROWS}) INSERT INTO many SELECT x, x * 0.5 FROM g`,
    );
    writer.close();
    const many = await GeoPackage.open(file, "v1");
    try {
      const database = new PostGisDatabase(pool, () => undefined);
      const [fileSchema, dbSchema] = [many.schema("many"), await database.schema("public.many")];
      if (!fileSchema || fileSchema instanceof DatasetError || !dbSchema || dbSchema instanceof DatasetError)
        throw new Error("no many layer");
      // The heap is collected before each query and sampled while it runs (its peak over the heap before).
      setFlagsFromString("--expose-gc");
      const gc = runInNewContext("gc") as () => void;
      const peak = async (dataset: OpenDataset) => {
        gc();
        const before = process.memoryUsage().heapUsed;
        let most = before;
        const sample = () => (most = Math.max(most, process.memoryUsage().heapUsed));
        const timer = setInterval(sample, 1);
        try {
          const answer = (await runQuery(
            {
              params: new Params(
                new Map([
                  ["f", "json"],
                  ["where", "v > 0"],
                  ["returnIdsOnly", "true"],
                ]),
              ),
            } as never,
            dataset,
          )) as { objectIds: number[] };
          sample();
          expect(answer.objectIds).toHaveLength(ROWS);
          expect(answer.objectIds[ROWS - 1]).toBe(ROWS);
          return (most - before) / ROWS;
        } finally {
          clearInterval(timer);
        }
      };
      // A row per id (an array and a number, ~80 to 110 bytes) held ~110 MB here; the joined text, the numbers and
      // their JSON take ~25 (PostGIS) to ~45 (the GeoPackage's sort) bytes an id.
      expect(await peak(postGisDataset(database, dbSchema))).toBeLessThan(64);
      expect(await peak(geoPackageDataset(many, fileSchema))).toBeLessThan(64);
    } finally {
      many.close();
    }
  }, 30_000);
});
