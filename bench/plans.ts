// What SQLite reads for the features figures' page (`BENCH_ONLY=plans`): the demo's `places`, the envelope of
// Western Europe with `country = 'FR'`, ordered by object id, a page of 1,000 (bench/features.ts). Mapgate's own
// statement, made by its plan and SQL emitter on the path its reader chooses by the layer's statistics
// (shared/features/access.ts: the figures it chose on are printed), beside the other plans SQLite could take for the
// same answer, written by hand here, on a copy of the layer's file (which has an index on `country`, as the demo's
// does):
//   - mapgate's statement with no path chosen (SQLite's own plan, as before the choice);
//   - R*Tree first, forced: every point in the envelope, then the where, then the order (a sort) and the page;
//   - the R*Tree's ids as a list probing the index on (country): only rows of the value are read;
//   - attribute index first: `country = 'FR'` through the index on (country), whose entries are in object id order
//     within a value, each looked up in the R*Tree by id, so the page ends after its 1,000th point inside the
//     envelope: no sort, no list of the envelope's ids (the path mapgate chooses here);
//   - table order: the table read in object id order, the where and the envelope tested on each row until the page
//     is full.
// Each row: SQLite's EXPLAIN QUERY PLAN, the rows the statement examined (counted by the row guard mapgate's
// statements carry, a function called once per row tested), the exact spatial tests it made, the median time of
// the SELECT alone; and, beside them, the time of turning the page into Esri JSON text alone (the answer's
// objects and one JSON.stringify), the floor under any plan. Every plan must answer mapgate's ids.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { chooseAccess } from "#shared/features/access.ts";
import { GeoPackage } from "#shared/features/geopackage.ts";
import { fromEsriGeometry } from "#shared/features/geometry/esri-json.ts";
import { prepareSpatialFilter } from "#shared/features/geometry/spatial.ts";
import { decodeGeoPackageGeometry } from "#shared/features/geometry/wkb.ts";
import { MAX_RECORD_COUNT, STANDARD_MAX_RECORD_COUNT, TILE_MAX_RECORD_COUNT } from "#shared/features/layer-json.ts";
import { planQuery } from "#shared/features/plan.ts";
import { emitQuery } from "#shared/features/sql.ts";
import { sqliteEmitter, SQLITE_DEADLINE } from "#shared/features/sql/sqlite.ts";
import { startEngine } from "../test/helpers/engine.ts";
import { median } from "./stats.ts";

const TABLE = "places";
const PAGE = 1000;
const ENVELOPE = [-5, 42, 8, 51] as const;
const WHERE_VALUE = "FR";
/** Timed runs of each statement (after one untimed). */
const RUNS = 25;

interface Measured {
  readonly name: string;
  readonly plan: string;
  readonly examined: number;
  readonly tests: number;
  readonly rows: number;
  readonly ms: number;
}

export async function plansBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "mapgate-plans-"));
  const file = join(dir, "world.gpkg");
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN" } });
  try {
    copyFileSync(join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH), file);
  } finally {
    await engine.stop();
    rmSync(engine.dataDir, { recursive: true, force: true });
  }
  try {
    measure(file, await mapgateStatement(file));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Mapgate's statement for the page, as its query step makes it: the plan, the envelope's filter, the emitter. */
async function mapgateStatement(file: string) {
  const reader = await GeoPackage.open(file, "plans");
  try {
    const schema = reader.schema(TABLE);
    if (!schema || !("fields" in schema) || !schema.geometry) throw new Error(`no ${TABLE} layer`);
    const params = new URLSearchParams({
      where: `country = '${WHERE_VALUE}'`,
      geometry: ENVELOPE.join(","),
      geometryType: "esriGeometryEnvelope",
      inSR: "4326",
      spatialRel: "esriSpatialRelIntersects",
      outFields: "*",
      resultRecordCount: String(PAGE),
      f: "json",
    });
    const plan = planQuery({ get: (n) => params.get(n) ?? undefined }, schema, {
      maxRecordCount: MAX_RECORD_COUNT,
      standardMaxRecordCount: STANDARD_MAX_RECORD_COUNT,
      tileMaxRecordCount: TILE_MAX_RECORD_COUNT,
    });
    if (plan.output !== "features" || !plan.spatial)
      throw new Error("the plan is not a page of features in an envelope");
    const geometry = fromEsriGeometry(plan.spatial.geometry, plan.spatial.geometryType).geometry;
    const spatial = prepareSpatialFilter("esriSpatialRelIntersects", geometry, { distance: 0, srid: 4326 });
    const filter = { bbox: spatial.bounds, relation: "intersects" as const, geometry };
    const stats = reader.statistics(schema);
    const oid = plan.fields[0];
    if (!stats || !oid) throw new Error(`no statistics for ${TABLE}`);
    const chosen = chooseAccess(plan, oid, spatial.bounds, stats);
    const emitted = emitQuery(sqliteEmitter, plan, schema, filter, chosen?.path);
    const unchosen = emitQuery(sqliteEmitter, plan, schema, filter);
    const fields = plan.fields.map((f) => ({ name: f.name, type: f.type, alias: f.alias }));
    const choice = chosen
      ? `${chosen.path.kind === "attributeIndex" ? `the index on ${chosen.path.field.name}` : "the R*Tree"} first: about ${Math.round(chosen.estimate.walked).toLocaleString("en")} index entries walked to the page's end, against about ${Math.round(chosen.estimate.windowRows).toLocaleString("en")} in the window (from ${stats.sample.length.toLocaleString("en")} sampled rows of ${stats.rows.toLocaleString("en")}; ${stats.count("country", WHERE_VALUE).toLocaleString("en")} rows of '${WHERE_VALUE}')`
      : "none (no attribute index serves the where)";
    return { emitted, unchosen, choice, test: spatial.test, fields, objectIdField: schema.objectIdField };
  } finally {
    reader.db.close();
  }
}

function measure(file: string, m: Awaited<ReturnType<typeof mapgateStatement>>): void {
  const db = new DatabaseSync(file);
  // The demo's own index on country (infra/local/demo/world-geopackage.ts); the file is not analysed, as served.
  const index = `${TABLE}_country_idx`;
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?").get(index))
    throw new Error(`the demo's ${TABLE} has no index ${index}`);
  let examined = 0;
  let tests = 0;
  db.function(SQLITE_DEADLINE, { deterministic: false }, () => {
    examined++;
    return 1;
  });
  db.function("mapgate_spatial", { deterministic: false }, (blob) => {
    tests++;
    return blob instanceof Uint8Array && m.test(decodeGeoPackageGeometry(blob).geometry) ? 1 : 0;
  });
  // Mapgate's select list (the layer's columns, the geometry last), from the table aliased `t` as its statement has it.
  const selected = m.emitted.sql.slice("SELECT ".length, m.emitted.sql.indexOf(" FROM "));
  const [xmin, ymin, xmax, ymax] = ENVELOPE;
  const box = `minx <= ${xmax} AND maxx >= ${xmin} AND miny <= ${ymax} AND maxy >= ${ymin}`;
  const guard = `${SQLITE_DEADLINE}() = 1`;
  const variants: { name: string; sql: string; params: SQLInputValue[] }[] = [
    { name: "mapgate's statement", sql: m.emitted.sql, params: m.emitted.params as SQLInputValue[] },
    { name: "mapgate's, no path chosen", sql: m.unchosen.sql, params: m.unchosen.params as SQLInputValue[] },
    {
      name: "R*Tree first (forced)",
      sql:
        `SELECT ${selected} FROM rtree_${TABLE}_geom AS r CROSS JOIN ${TABLE} AS t ON t.fid = r.id ` +
        `WHERE ${box} AND ${guard} AND t.country = ? AND mapgate_spatial(t.geom) = 1 ORDER BY t.fid LIMIT ${PAGE + 1}`,
      params: [WHERE_VALUE],
    },
    {
      name: "R*Tree list, country index",
      sql:
        `SELECT ${selected} FROM ${TABLE} AS t INDEXED BY ${index} WHERE t.country = ? AND ${guard} ` +
        `AND t.fid IN (SELECT id FROM rtree_${TABLE}_geom WHERE ${box}) AND mapgate_spatial(t.geom) = 1 ORDER BY t.fid LIMIT ${PAGE + 1}`,
      params: [WHERE_VALUE],
    },
    {
      name: "country index, id order",
      sql:
        `SELECT ${selected} FROM ${TABLE} AS t INDEXED BY ${index} WHERE t.country = ? AND ${guard} ` +
        `AND EXISTS (SELECT 1 FROM rtree_${TABLE}_geom AS r WHERE r.id = t.fid AND ${box}) ` +
        `AND mapgate_spatial(t.geom) = 1 ORDER BY t.fid LIMIT ${PAGE + 1}`,
      params: [WHERE_VALUE],
    },
    {
      name: "table in object id order",
      sql:
        `SELECT ${selected} FROM ${TABLE} AS t NOT INDEXED WHERE ${guard} AND t.country = ? AND mapgate_spatial(t.geom) = 1 ` +
        `ORDER BY t.fid LIMIT ${PAGE + 1}`,
      params: [WHERE_VALUE],
    },
  ];
  const ids = (rows: unknown[][]) => rows.map((r) => r[0]).join();
  let reference: string | undefined;
  let page: unknown[][] = [];
  const statements: StatementSync[] = [];
  const counted = variants.map((v) => {
    const statement: StatementSync = db.prepare(v.sql);
    statements.push(statement);
    statement.setReturnArrays(true);
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${v.sql}`).all(...v.params) as { detail: string }[])
      .map((r) => r.detail)
      .join("; ");
    examined = 0;
    tests = 0;
    const rows = statement.all(...v.params) as unknown as unknown[][];
    reference ??= ids(rows);
    if (ids(rows) !== reference) throw new Error(`${v.name} answered other points than mapgate's statement`);
    if (page.length === 0) page = rows;
    return { name: v.name, plan, examined, tests, rows: rows.length };
  });
  // CPU time (the machine is shared: a neighbour's burst stretches wall time, not this thread's CPU), the variants
  // taken in turns so that any slowdown falls on all of them.
  const times: number[][] = variants.map(() => []);
  for (let i = 0; i < RUNS; i++)
    variants.forEach((v, k) => {
      const start = process.cpuUsage();
      statements[k]?.all(...v.params);
      const used = process.cpuUsage(start);
      times[k]?.push((used.user + used.system) / 1000);
    });
  const results: Measured[] = counted.map((c, k) => ({ ...c, ms: median(times[k] ?? []) }));
  db.close();

  // The page as Esri JSON text alone: the answer's objects from the rows, then one JSON.stringify of them.
  const geometryAt = m.emitted.columns.findIndex((c) => c.role === "geometry");
  const fieldAt = m.emitted.columns.flatMap((c, i) => (c.role === "field" ? [[c.name, i] as const] : []));
  const toAnswer = () => ({
    objectIdFieldName: m.objectIdField,
    geometryType: "esriGeometryPoint",
    spatialReference: { wkid: 4326, latestWkid: 4326 },
    fields: m.fields,
    features: page.slice(0, PAGE).map((row) => {
      const attributes: Record<string, unknown> = {};
      for (const [name, i] of fieldAt) attributes[name] = row[i];
      const g = decodeGeoPackageGeometry(row[geometryAt] as Uint8Array).geometry;
      const [x, y] = g?.type === "Point" ? g.coordinates : [];
      return { attributes, geometry: { x, y } };
    }),
    exceededTransferLimit: page.length > PAGE,
  });
  const serialize: number[] = [];
  const stringify: number[] = [];
  let bytes = 0;
  const cpuMs = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  };
  for (let i = 0; i < RUNS; i++) {
    const t = cpuMs();
    const answer = toAnswer();
    const t1 = cpuMs();
    bytes = Buffer.byteLength(JSON.stringify(answer));
    const t2 = cpuMs();
    serialize.push(t2 - t);
    stringify.push(t2 - t1);
  }

  console.log(
    `\nWhat the plan reads: '${TABLE}' (171,075 points), envelope ${ENVELOPE.join(",")} + country = '${WHERE_VALUE}', ordered by object id, a page of ${PAGE.toLocaleString("en")}; node:sqlite, one connection, the SELECT's CPU time, median of ${RUNS} runs each taken in turns`,
  );
  console.log(`mapgate's choice: ${m.choice}`);
  console.log(
    `${"plan".padEnd(28)}${"examined".padStart(10)}${"exact tests".padStart(12)}${"rows".padStart(7)}${"CPU ms".padStart(11)}   EXPLAIN QUERY PLAN`,
  );
  for (const r of results)
    console.log(
      `${r.name.padEnd(28)}${String(r.examined).padStart(10)}${String(r.tests).padStart(12)}${String(r.rows).padStart(7)}${r.ms.toFixed(2).padStart(11)}   ${r.plan}`,
    );
  console.log(
    `the page as Esri JSON alone (${(bytes / 1024).toFixed(0)} KiB): ${median(serialize).toFixed(2)} ms of CPU (objects from the rows and JSON.stringify; the stringify alone ${median(stringify).toFixed(2)} ms)`,
  );
  console.log(
    `  examined: rows the statement's row guard was called on; the machine is shared, so compare times within this run. Load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
}
