// Golden SQL: the exact text each dialect's emitter writes, one line per case with its input beside it (the
// table-driven form of pg_featureserv's cql_test.go), for every rule of the where language and every plan output.
// The behaviour tests (features-sql, features-parity, the e2e tests) prove what the SQL selects; these pin the text
// itself, so a change of either emitter shows here as the lines it changes, case by case.
import type { Geometry } from "geojson";
import { describe, expect, it } from "vitest";
import type { AccessPath } from "#shared/features/access.ts";
import { planQuery } from "#shared/features/plan.ts";
import type { Field, LayerSchema } from "#shared/features/schema.ts";
import { emitQuery } from "#shared/features/sql.ts";
import { restrictPlan, viewRestriction, viewSchema } from "#shared/features/view.ts";
import type { ViewLayer } from "#shared/stores/services.ts";
import type { Dialect, SpatialFilter } from "#shared/features/sql/emitter.ts";
import { citiesSchema } from "./helpers/feature-layer.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import {
  deleteRows,
  reachableByGlobalId,
  reachableIds,
  editingTableDdl,
  insertRow,
  insertRows,
  recordEdit,
  recordLayerEditing,
  updateRow,
  type WriteRow,
  type WriteTarget,
} from "#shared/features/sql/write.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import {
  attachTableDdl,
  attachTableName,
  deleteAttachments,
  deleteAttachmentsOf,
  findAttachment,
  insertAttachment,
  selectAttachments,
  updateAttachment,
} from "#shared/features/sql/attachments.ts";

const NOW = Date.UTC(2024, 4, 6, 7, 8, 9, 10);

/** A column the source converts into its field's type (PostgreSQL's boolean, uuid and JSON). */
const converted = (name: string, type: Field["type"], convert: Field["convert"]): Field => ({
  name,
  type,
  alias: name,
  nullable: true,
  column: name,
  convert,
});

/** The cities layer (a quoted column, dates, a spatial index) and three converted columns. */
const layer: LayerSchema = {
  ...citiesSchema,
  fields: [
    ...citiesSchema.fields,
    converted("flag", "esriFieldTypeSmallInteger", "boolean"),
    converted("uid", "esriFieldTypeGUID", "guid"),
    converted("doc", "esriFieldTypeString", "text"),
  ],
};
/** The same layer without a spatial index (a GeoPackage without R*Tree). */
const unindexed: LayerSchema = {
  ...layer,
  geometry: { column: "geom", type: "esriGeometryPoint", hasZ: false, hasM: false, srid: 4326 },
};

const POLYGON: Geometry = {
  type: "Polygon",
  coordinates: [
    [
      [0, 0],
      [2, 0],
      [2, 1],
      [0, 0],
    ],
  ],
};
const MULTIPOINT: Geometry = {
  type: "MultiPoint",
  coordinates: [
    [0, 0],
    [2, 1],
  ],
};
/** A run of ORs longer than one group (MAX_RUN): grouped in parentheses. */
const LONG_OR = Array.from({ length: 66 }, () => "pop IS NULL").join(" OR ");

const plan = (params: Record<string, string>, schema = layer) =>
  planQuery(new Map(Object.entries(params)), schema, { now: NOW });

/**
 * Every placeholder the text holds names one of its parameters (SQLite's spatial filter without an index binds the
 * box it does not read, so a parameter may go unreferenced).
 */
function expectBound(dialect: Dialect, sql: string, params: readonly unknown[]) {
  const used = [...sql.matchAll(dialect === "sqlite" ? /\?(\d+)/g : /\$(\d+)/g)].map((m) => Number(m[1]));
  for (const n of used) expect(n >= 1 && n <= params.length, `placeholder ${n} of ${params.length}`).toBe(true);
}

/** The condition a where text becomes: the WHERE clause of a features query, without SQLite's deadline call. */
function condition(dialect: Dialect, where: string): string {
  const { sql, params } = emitQuery(dialect, plan({ where, outFields: "objectid", returnGeometry: "false" }), layer);
  expectBound(dialect, sql, params);
  const clause = sql.slice(sql.indexOf(" WHERE ") + " WHERE ".length, sql.lastIndexOf(" ORDER BY "));
  return dialect === "sqlite" ? clause.replace(/^mapgate_deadline\(\) = 1 AND /, "") : clause;
}

// prettier-ignore
const WHERE: readonly (readonly [where: string, sqlite: string, postgres: string])[] = [
  ['pop = 520000', '(t."pop" = ?1)', '(t."pop" = CAST($1 AS bigint))'],
  ['pop <> 520000', '(t."pop" <> ?1)', '(t."pop" <> CAST($1 AS bigint))'],
  ['pop < 1.5', '(t."pop" < ?1)', '(t."pop" < CAST($1 AS double precision))'],
  ['pop <= 340000', '(t."pop" <= ?1)', '(t."pop" <= CAST($1 AS bigint))'],
  ['pop > 340000', '(t."pop" > ?1)', '(t."pop" > CAST($1 AS bigint))'],
  ['pop >= -3', '(t."pop" >= ?1)', '(t."pop" >= CAST($1 AS bigint))'],
  ['pop > 1 AND area < 50', '((t."pop" > ?1) AND (t."area" < ?2))', '((t."pop" > CAST($1 AS bigint)) AND (t."area" < CAST($2 AS bigint)))'],
  ['pop > 1 OR area < 5', '((t."pop" > ?1) OR (t."area" < ?2))', '((t."pop" > CAST($1 AS bigint)) OR (t."area" < CAST($2 AS bigint)))'],
  ['NOT pop > 1', '(NOT (t."pop" > ?1))', '(NOT (t."pop" > CAST($1 AS bigint)))'],
  ['pop IN (0, 25000)', '(t."pop" IN (?1, ?2))', '(t."pop" IN (CAST($1 AS bigint), CAST($2 AS bigint)))'],
  ['pop NOT IN (0, 25000)', '(t."pop" NOT IN (?1, ?2))', '(t."pop" NOT IN (CAST($1 AS bigint), CAST($2 AS bigint)))'],
  ['pop BETWEEN 1 AND 2', '(t."pop" BETWEEN ?1 AND ?2)', '(t."pop" BETWEEN CAST($1 AS bigint) AND CAST($2 AS bigint))'],
  ['pop NOT BETWEEN 1 AND 2', '(t."pop" NOT BETWEEN ?1 AND ?2)', '(t."pop" NOT BETWEEN CAST($1 AS bigint) AND CAST($2 AS bigint))'],
  ['name IS NULL', '(t."name" IS NULL)', '(t."name" IS NULL)'],
  ['name IS NOT NULL', '(t."name" IS NOT NULL)', '(t."name" IS NOT NULL)'],
  [`name LIKE 'P%%a'`, '((t."name" LIKE ?1 AND mapgate_like(t."name", ?1, NULL)))', '(t."name" LIKE CAST($1 AS text) ESCAPE CAST($2 AS text))'],
  [`name NOT LIKE 'P%'`, '(NOT (t."name" LIKE ?1 AND mapgate_like(t."name", ?1, NULL)))', '(t."name" NOT LIKE CAST($1 AS text) ESCAPE CAST($2 AS text))'],
  [`name LIKE '%!%' ESCAPE '!'`, '((t."name" LIKE ?1 ESCAPE ?2 AND mapgate_like(t."name", ?1, ?2)))', '(t."name" LIKE CAST($1 AS text) ESCAPE CAST($2 AS text))'],
  ['name LIKE UPPER(kind)', '(mapgate_like(t."name", mapgate_upper(t."ki""nd"), NULL))', '(t."name" LIKE upper(t."ki""nd") ESCAPE CAST($1 AS text))'],
  [`name = 'O''Hare'`, '(t."name" = ?1)', '(t."name" = CAST($1 AS text))'],
  ['pop + 1 * 2 > 3 - 1', '((t."pop" + (?1 * ?2)) > (?3 - ?4))', '((t."pop" + (CAST($1 AS bigint) * CAST($2 AS bigint))) > (CAST($3 AS bigint) - CAST($4 AS bigint)))'],
  ['pop / 2 = 1', '((CAST(t."pop" AS REAL) / NULLIF(?1, 0)) = ?2)', '((CAST(t."pop" AS double precision) / NULLIF(CAST($1 AS bigint), 0)) = CAST($2 AS bigint))'],
  ['-pop < 1', '((-t."pop") < ?1)', '((-t."pop") < CAST($1 AS bigint))'],
  ['NULL + pop > 1', '((NULL + t."pop") > ?1)', '((CAST(NULL AS double precision) + t."pop") > CAST($1 AS bigint))'],
  [`founded > date '2001-03-04'`, '(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) > ?1)', '(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) > CAST($1 AS bigint))'],
  [`founded = timestamp '2001-03-04 05:06:07'`, '(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) = ?1)', '(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) = CAST($1 AS bigint))'],
  ['day < CURRENT_DATE', '(CAST(ROUND((julianday(t."day") - 2440587.5) * 86400000) AS INTEGER) < ?1)', '(CAST(ROUND(EXTRACT(EPOCH FROM t."day") * 1000) AS double precision) < CAST($1 AS bigint))'],
  [`kind = 'x'`, '(t."ki""nd" = ?1)', '(t."ki""nd" = CAST($1 AS text))'],
  ['flag = 1', '(CAST(CAST(t."flag" AS integer) AS smallint) = ?1)', '(CAST(CAST(t."flag" AS integer) AS smallint) = CAST($1 AS bigint))'],
  [`uid = '{00000000-0000-0000-0000-000000000000}'`, `(('{' || upper(CAST(t."uid" AS text)) || '}') = ?1)`, `(('{' || upper(CAST(t."uid" AS text)) || '}') = CAST($1 AS text))`],
  [`doc = 'x'`, '(CAST(t."doc" AS text) = ?1)', '(CAST(t."doc" AS text) = CAST($1 AS text))'],
  ['EXTRACT(YEAR FROM founded) = 2001', '(mapgate_extract(1, CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER)) = ?1)', '(CAST(EXTRACT(YEAR FROM (to_timestamp(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) / 1000.0) AT TIME ZONE CAST($1 AS text))) AS double precision) = CAST($2 AS bigint))'],
  ['EXTRACT(SECOND FROM day) = 0', '(mapgate_extract(6, CAST(ROUND((julianday(t."day") - 2440587.5) * 86400000) AS INTEGER)) = ?1)', '(CAST(EXTRACT(SECOND FROM (to_timestamp(CAST(ROUND(EXTRACT(EPOCH FROM t."day") * 1000) AS double precision) / 1000.0) AT TIME ZONE CAST($1 AS text))) AS double precision) = CAST($2 AS bigint))'],
  [`TRIM(name) = 'a'`, '(trim(t."name") = ?1)', '(btrim(t."name") = CAST($1 AS text))'],
  [`TRIM(LEADING 'xx' FROM name) = 'a'`, '(ltrim(t."name", ?1) = ?2)', '(ltrim(t."name", CAST($1 AS text)) = CAST($2 AS text))'],
  [`TRIM(TRAILING FROM name) = 'a'`, '(rtrim(t."name") = ?1)', '(rtrim(t."name") = CAST($1 AS text))'],
  [`TRIM(BOTH kind FROM name) = 'a'`, '(trim(t."name", t."ki""nd") = ?1)', '(btrim(t."name", t."ki""nd") = CAST($1 AS text))'],
  ['CAST(area AS INTEGER) = 1', '(CAST(t."area" AS INTEGER) = ?1)', '(CAST(trunc(t."area") AS bigint) = CAST($1 AS bigint))'],
  ['CAST(name AS INTEGER) = 1', '(CAST(t."name" AS INTEGER) = ?1)', '(CAST(trunc(CAST(t."name" AS numeric)) AS bigint) = CAST($1 AS bigint))'],
  ['CAST(pop AS FLOAT) = 1', '(CAST(t."pop" AS REAL) = ?1)', '(CAST(t."pop" AS double precision) = CAST($1 AS bigint))'],
  [`CAST(pop AS VARCHAR(3)) = 'a'`, '(substr(CAST(t."pop" AS TEXT), 1, ?1) = ?2)', '(left(CAST(t."pop" AS text), CAST(CAST($1 AS bigint) AS integer)) = CAST($2 AS text))'],
  ['CAST(name AS DATE) = founded', '(CAST(ROUND((julianday(date(t."name")) - 2440587.5) * 86400000) AS INTEGER) = CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER))', '(CAST(EXTRACT(EPOCH FROM CAST(t."name" AS date)) * 1000 AS double precision) = CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision))'],
  ['CAST(founded AS DATE) = founded', '((mapgate_floor(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) / 86400000.0) * 86400000) = CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER))', '((floor(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) / 86400000.0) * 86400000) = CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision))'],
  ['CAST(name AS TIMESTAMP) = founded', '(CAST(ROUND((julianday(t."name") - 2440587.5) * 86400000) AS INTEGER) = CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER))', '(CAST(EXTRACT(EPOCH FROM CAST(t."name" AS timestamp)) * 1000 AS double precision) = CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision))'],
  ['CAST(founded AS TIMESTAMP) = founded', '(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) = CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER))', '(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) = CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision))'],
  ['CAST(NULL AS INTEGER) IS NULL', '(CAST(NULL AS INTEGER) IS NULL)', '(CAST(NULL AS bigint) IS NULL)'],
  ['CAST(NULL AS VARCHAR(2)) IS NULL', '(CAST(NULL AS text) IS NULL)', '(CAST(NULL AS text) IS NULL)'],
  ['CAST(NULL AS FLOAT) IS NULL', '(CAST(NULL AS REAL) IS NULL)', '(CAST(NULL AS double precision) IS NULL)'],
  ['ABS(pop) = 1', '(mapgate_abs(t."pop") = ?1)', '(abs(t."pop") = CAST($1 AS bigint))'],
  ['CEILING(area) = 1', '(mapgate_ceiling(t."area") = ?1)', '(ceiling(t."area") = CAST($1 AS bigint))'],
  ['FLOOR(area) = 1', '(mapgate_floor(t."area") = ?1)', '(floor(t."area") = CAST($1 AS bigint))'],
  ['LOG(area) = 1', '(mapgate_ln(t."area") = ?1)', '((CASE WHEN t."area" > 0 THEN ln(CAST(t."area" AS double precision)) END) = CAST($1 AS bigint))'],
  ['LOG10(area) = 1', '(mapgate_log10(t."area") = ?1)', '((CASE WHEN t."area" > 0 THEN log(CAST(t."area" AS double precision)) END) = CAST($1 AS bigint))'],
  ['POWER(area, 2) = 1', '(mapgate_power(t."area", ?1) = ?2)', '(power(CAST(t."area" AS double precision), CAST(CAST($1 AS bigint) AS double precision)) = CAST($2 AS bigint))'],
  ['ROUND(area) = 1', '(mapgate_round(t."area", ?1) = ?2)', '(CAST(round(CAST(t."area" AS numeric), CAST(LEAST(GREATEST(CAST(CAST($1 AS bigint) AS bigint), -400), 400) AS integer)) AS double precision) = CAST($2 AS bigint))'],
  ['ROUND(area, 2) = 1', '(mapgate_round(t."area", ?1) = ?2)', '(CAST(round(CAST(t."area" AS numeric), CAST(LEAST(GREATEST(CAST(CAST($1 AS bigint) AS bigint), -400), 400) AS integer)) AS double precision) = CAST($2 AS bigint))'],
  ['TRUNCATE(area, 1) = 1', '(mapgate_truncate(t."area", ?1) = ?2)', '(CAST(trunc(CAST(t."area" AS numeric), CAST(LEAST(GREATEST(CAST(CAST($1 AS bigint) AS bigint), -400), 400) AS integer)) AS double precision) = CAST($2 AS bigint))'],
  ['MOD(pop, 3) = 1', '(mapgate_mod(t."pop", ?1) = ?2)', '(CAST(mod(CAST(t."pop" AS numeric), NULLIF(CAST(CAST($1 AS bigint) AS numeric), 0)) AS double precision) = CAST($2 AS bigint))'],
  ['CHAR_LENGTH(name) = 1', '(length(t."name") = ?1)', '(char_length(t."name") = CAST($1 AS bigint))'],
  [`CONCAT(name, kind) = 'a'`, '(concat(t."name", t."ki""nd") = ?1)', `((COALESCE(t."name", '') || COALESCE(t."ki""nd", '')) = CAST($1 AS text))`],
  [`LOWER(name) = 'a'`, '(mapgate_lower(t."name") = ?1)', '(lower(t."name") = CAST($1 AS text))'],
  ['UPPER(NULL) IS NULL', '(mapgate_upper(NULL) IS NULL)', '(upper(CAST(NULL AS text)) IS NULL)'],
  [`SUBSTRING(name FROM 2) = 'a'`, '(mapgate_substring(t."name", ?1) = ?2)', '(substring(t."name" FROM CAST(CAST($1 AS bigint) AS integer)) = CAST($2 AS text))'],
  [`SUBSTRING(name FROM 2 FOR 3) = 'a'`, '(mapgate_substring(t."name", ?1, ?2) = ?3)', '(substring(t."name" FROM CAST(CAST($2 AS bigint) AS integer) FOR CAST(CAST($1 AS bigint) AS integer)) = CAST($3 AS text))'],
  [`POSITION('a' IN name) = 1`, '(instr(t."name", ?1) = ?2)', '(strpos(t."name", CAST($1 AS text)) = CAST($2 AS bigint))'],
  ['COALESCE(pop, 0) = 1', '(coalesce(t."pop", ?1) = ?2)', '(coalesce(t."pop", CAST($1 AS bigint)) = CAST($2 AS bigint))'],
  [`NULLIF(name, 'a') IS NULL`, '(nullif(t."name", ?1) IS NULL)', '(nullif(t."name", CAST($1 AS text)) IS NULL)'],
  ['pop != 1', '(t."pop" <> ?1)', '(t."pop" <> CAST($1 AS bigint))'],
  [`name = N'Zürich'`, '(t."name" = ?1)', '(t."name" = CAST($1 AS text))'],
  ['founded < CURRENT_TIMESTAMP', '(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) < ?1)', '(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) < CAST($1 AS bigint))'],
  ['(pop = 1 OR pop = 2) AND NOT (area > 3)', '(((t."pop" = ?1) OR (t."pop" = ?2)) AND (NOT (t."area" > ?3)))', '(((t."pop" = CAST($1 AS bigint)) OR (t."pop" = CAST($2 AS bigint))) AND (NOT (t."area" > CAST($3 AS bigint))))'],
  ['pop - 1 - 2 * 3 / 4 < 0', '(((t."pop" - ?1) - (CAST((?2 * ?3) AS REAL) / NULLIF(?4, 0))) < ?5)', '(((t."pop" - CAST($1 AS bigint)) - (CAST((CAST($2 AS bigint) * CAST($3 AS bigint)) AS double precision) / NULLIF(CAST($4 AS bigint), 0))) < CAST($5 AS bigint))'],
  ['CAST(area AS DOUBLE PRECISION) = 1', '(CAST(t."area" AS REAL) = ?1)', '(CAST(t."area" AS double precision) = CAST($1 AS bigint))'],
  ['CAST(pop AS SMALLINT) = 1', '(CAST(t."pop" AS INTEGER) = ?1)', '(CAST(trunc(t."pop") AS bigint) = CAST($1 AS bigint))'],
  [`CAST(pop AS CHAR(2)) = 'a'`, '(substr(CAST(t."pop" AS TEXT), 1, ?1) = ?2)', '(left(CAST(t."pop" AS text), CAST(CAST($1 AS bigint) AS integer)) = CAST($2 AS text))'],
  [LONG_OR, '(((t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL)) OR ((t."pop" IS NULL) OR (t."pop" IS NULL)))', '(((t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL) OR (t."pop" IS NULL)) OR ((t."pop" IS NULL) OR (t."pop" IS NULL)))'],
];

// prettier-ignore
const PLANS: readonly (readonly [name: string, schema: LayerSchema, params: Record<string, string>, sqlite: string, postgres: string])[] = [
  ['features', layer, { outFields: 'objectid,name,pop,founded,flag,uid', orderByFields: 'name DESC, founded' }, `SELECT t."objectid" AS c0, t."name" AS c1, t."pop" AS c2, CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) AS c3, CAST(CAST(t."flag" AS integer) AS smallint) AS c4, ('{' || upper(CAST(t."uid" AS text)) || '}') AS c5, t."geom" AS g FROM "cities" AS t WHERE mapgate_deadline() = 1 ORDER BY t."name" DESC NULLS LAST, CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER) ASC NULLS FIRST, t."objectid" ASC LIMIT ?1 OFFSET ?2`, `SELECT CAST(t."objectid" AS double precision) AS c0, CAST(t."name" AS text) AS c1, CAST(t."pop" AS double precision) AS c2, CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision) AS c3, CAST(CAST(CAST(t."flag" AS integer) AS smallint) AS double precision) AS c4, CAST(('{' || upper(CAST(t."uid" AS text)) || '}') AS text) AS c5, ST_AsBinary(t."geom") AS g FROM "cities" AS t ORDER BY t."name" DESC NULLS LAST, t."founded" ASC NULLS FIRST, t."objectid" ASC LIMIT CAST($1 AS bigint) OFFSET CAST($2 AS bigint)`],
  ['features page', layer, { where: 'pop > 1', outFields: 'area', resultOffset: '10', resultRecordCount: '5' }, 'SELECT t."objectid" AS c0, t."area" AS c1, t."geom" AS g FROM "cities" AS t WHERE mapgate_deadline() = 1 AND (t."pop" > ?1) ORDER BY t."objectid" ASC LIMIT ?2 OFFSET ?3', 'SELECT CAST(t."objectid" AS double precision) AS c0, CAST(t."area" AS double precision) AS c1, ST_AsBinary(t."geom") AS g FROM "cities" AS t WHERE (t."pop" > CAST($1 AS bigint)) ORDER BY t."objectid" ASC LIMIT CAST($2 AS bigint) OFFSET CAST($3 AS bigint)'],
  ['features by ids', layer, { objectIds: '3,1,2', outFields: 'objectid', returnGeometry: 'false' }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT value FROM json_each(?1)) ORDER BY t."objectid" ASC LIMIT ?2 OFFSET ?3', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."objectid" = ANY(CAST($1 AS bigint[])) ORDER BY t."objectid" ASC LIMIT CAST($2 AS bigint) OFFSET CAST($3 AS bigint)'],
  ['count', layer, { returnCountOnly: 'true' }, 'SELECT COUNT(*) AS n FROM "cities" AS t', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t'],
  ['count filtered', layer, { where: 'pop > 1', returnCountOnly: 'true' }, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND (t."pop" > ?1)', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE (t."pop" > CAST($1 AS bigint))'],
  ['count distinct', layer, { outFields: 'name,day', returnDistinctValues: 'true', returnCountOnly: 'true' }, 'SELECT COUNT(*) AS n FROM (SELECT DISTINCT t."name" AS d0, CAST(ROUND((julianday(t."day") - 2440587.5) * 86400000) AS INTEGER) AS d1 FROM "cities" AS t) AS d', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM (SELECT DISTINCT t."name" AS d0, CAST(ROUND(EXTRACT(EPOCH FROM t."day") * 1000) AS double precision) AS d1 FROM "cities" AS t) AS d'],
  ['ids', layer, { returnIdsOnly: 'true' }, 'SELECT group_concat(CAST(t."objectid" AS TEXT) ORDER BY t."objectid" ASC) AS ids FROM "cities" AS t WHERE mapgate_deadline() = 1', 'SELECT string_agg(CAST(t."objectid" AS text), CAST($1 AS text) ORDER BY t."objectid" ASC) AS ids FROM "cities" AS t'],
  ['ids ordered', layer, { where: 'pop > 1', returnIdsOnly: 'true', orderByFields: 'pop DESC' }, 'SELECT group_concat(CAST(t."objectid" AS TEXT) ORDER BY t."pop" DESC NULLS LAST, t."objectid" ASC) AS ids FROM "cities" AS t WHERE mapgate_deadline() = 1 AND (t."pop" > ?1)', 'SELECT string_agg(CAST(t."objectid" AS text), CAST($2 AS text) ORDER BY t."pop" DESC NULLS LAST, t."objectid" ASC) AS ids FROM "cities" AS t WHERE (t."pop" > CAST($1 AS bigint))'],
  ['extent', layer, { returnExtentOnly: 'true' }, 'SELECT MIN(r.minx) AS xmin, MIN(r.miny) AS ymin, MAX(r.maxx) AS xmax, MAX(r.maxy) AS ymax FROM "cities" AS t LEFT JOIN "rtree_cities_geom" AS r ON r.id = t."objectid"', 'SELECT ST_XMin(e) AS xmin, ST_YMin(e) AS ymin, ST_XMax(e) AS xmax, ST_YMax(e) AS ymax FROM (SELECT ST_Extent(t."geom") AS e FROM "cities" AS t) AS s'],
  ['extent with count', layer, { where: 'pop > 1', returnExtentOnly: 'true', returnCountOnly: 'true' }, 'SELECT MIN(r.minx) AS xmin, MIN(r.miny) AS ymin, MAX(r.maxx) AS xmax, MAX(r.maxy) AS ymax, COUNT(*) AS n FROM "cities" AS t LEFT JOIN "rtree_cities_geom" AS r ON r.id = t."objectid" WHERE mapgate_deadline() = 1 AND (t."pop" > ?1)', 'SELECT ST_XMin(e) AS xmin, ST_YMin(e) AS ymin, ST_XMax(e) AS xmax, ST_YMax(e) AS ymax, n FROM (SELECT ST_Extent(t."geom") AS e, CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE (t."pop" > CAST($1 AS bigint))) AS s'],
  ['statistics', layer, { outStatistics: '[{"statisticType":"count","onStatisticField":"objectid","outStatisticFieldName":"n"}]' }, 'SELECT COUNT(t."objectid") AS s0 FROM "cities" AS t WHERE mapgate_deadline() = 1 LIMIT ?1 OFFSET ?2', 'SELECT CAST(COUNT(t."objectid") AS double precision) AS s0 FROM "cities" AS t LIMIT CAST($1 AS bigint) OFFSET CAST($2 AS bigint)'],
  ['statistics each type', layer, { outStatistics: '[{"statisticType":"count","onStatisticField":"pop","outStatisticFieldName":"count"},{"statisticType":"sum","onStatisticField":"pop","outStatisticFieldName":"sum"},{"statisticType":"avg","onStatisticField":"pop","outStatisticFieldName":"avg"},{"statisticType":"min","onStatisticField":"pop","outStatisticFieldName":"min"},{"statisticType":"max","onStatisticField":"pop","outStatisticFieldName":"max"},{"statisticType":"stddev","onStatisticField":"pop","outStatisticFieldName":"stddev"},{"statisticType":"var","onStatisticField":"pop","outStatisticFieldName":"var"}]' }, 'SELECT COUNT(t."pop") AS s0, SUM(t."pop") AS s1, AVG(t."pop") AS s2, MIN(t."pop") AS s3, MAX(t."pop") AS s4, mapgate_stddev(t."pop") AS s5, mapgate_var(t."pop") AS s6 FROM "cities" AS t WHERE mapgate_deadline() = 1 LIMIT ?1 OFFSET ?2', 'SELECT CAST(COUNT(t."pop") AS double precision) AS s0, CAST(SUM(t."pop") AS double precision) AS s1, CAST(AVG(t."pop") AS double precision) AS s2, CAST(MIN(t."pop") AS double precision) AS s3, CAST(MAX(t."pop") AS double precision) AS s4, CAST(stddev_samp(t."pop") AS double precision) AS s5, CAST(var_samp(t."pop") AS double precision) AS s6 FROM "cities" AS t LIMIT CAST($1 AS bigint) OFFSET CAST($2 AS bigint)'],
  ['statistics min of date', layer, { outStatistics: '[{"statisticType":"min","onStatisticField":"founded","outStatisticFieldName":"first"}]' }, 'SELECT MIN(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER)) AS s0 FROM "cities" AS t WHERE mapgate_deadline() = 1 LIMIT ?1 OFFSET ?2', 'SELECT MIN(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision)) AS s0 FROM "cities" AS t LIMIT CAST($1 AS bigint) OFFSET CAST($2 AS bigint)'],
  ['statistics percentiles', layer, { outStatistics: '[{"statisticType":"percentile_cont","onStatisticField":"pop","outStatisticFieldName":"p","statisticParameters":{"value":0.25}},{"statisticType":"percentile_disc","onStatisticField":"pop","outStatisticFieldName":"q","statisticParameters":{"value":0.5,"orderBy":"DESC"}}]' }, 'SELECT mapgate_percentile_cont(t."pop", ?1, 0) AS s0, mapgate_percentile_disc(t."pop", ?2, 1) AS s1 FROM "cities" AS t WHERE mapgate_deadline() = 1 LIMIT ?3 OFFSET ?4', 'SELECT CAST(percentile_cont(CAST($1 AS double precision)) WITHIN GROUP (ORDER BY t."pop") AS double precision) AS s0, CAST(percentile_disc(CAST($2 AS double precision)) WITHIN GROUP (ORDER BY t."pop" DESC) AS double precision) AS s1 FROM "cities" AS t LIMIT CAST($3 AS bigint) OFFSET CAST($4 AS bigint)'],
  ['statistics grouped', layer, { outStatistics: '[{"statisticType":"sum","onStatisticField":"area","outStatisticFieldName":"total"}]', groupByFieldsForStatistics: 'name,day', orderByFields: 'total DESC, name' }, 'SELECT t."name" AS g0, CAST(ROUND((julianday(t."day") - 2440587.5) * 86400000) AS INTEGER) AS g1, SUM(t."area") AS s0 FROM "cities" AS t WHERE mapgate_deadline() = 1 GROUP BY 1, 2 ORDER BY s0 DESC NULLS LAST, g0 ASC NULLS FIRST, g1 ASC NULLS FIRST LIMIT ?1 OFFSET ?2', 'SELECT CAST(t."name" AS text) AS g0, CAST(ROUND(EXTRACT(EPOCH FROM t."day") * 1000) AS double precision) AS g1, CAST(SUM(t."area") AS double precision) AS s0 FROM "cities" AS t GROUP BY 1, 2 ORDER BY s0 DESC NULLS LAST, g0 ASC NULLS FIRST, g1 ASC NULLS FIRST LIMIT CAST($1 AS bigint) OFFSET CAST($2 AS bigint)'],
  ['statistics having', layer, { outStatistics: '[{"statisticType":"count","onStatisticField":"pop","outStatisticFieldName":"n"}]', groupByFieldsForStatistics: 'kind', having: `COUNT(*) > 1 AND SUM(pop) < 2 AND MAX(founded) > date '2001-01-01'` }, 'SELECT t."ki""nd" AS g0, COUNT(t."pop") AS s0 FROM "cities" AS t WHERE mapgate_deadline() = 1 GROUP BY 1 HAVING ((COUNT(*) > ?1) AND (SUM(t."pop") < ?2) AND (MAX(CAST(ROUND((julianday(t."founded") - 2440587.5) * 86400000) AS INTEGER)) > ?3)) ORDER BY g0 ASC NULLS FIRST LIMIT ?4 OFFSET ?5', 'SELECT CAST(t."ki""nd" AS text) AS g0, CAST(COUNT(t."pop") AS double precision) AS s0 FROM "cities" AS t GROUP BY 1 HAVING ((CAST(COUNT(*) AS double precision) > CAST($1 AS bigint)) AND (CAST(SUM(t."pop") AS double precision) < CAST($2 AS bigint)) AND (MAX(CAST(ROUND(EXTRACT(EPOCH FROM t."founded") * 1000) AS double precision)) > CAST($3 AS bigint))) ORDER BY g0 ASC NULLS FIRST LIMIT CAST($4 AS bigint) OFFSET CAST($5 AS bigint)'],
  ['statistics having, each aggregate', layer, { outStatistics: '[{"statisticType":"avg","onStatisticField":"area","outStatisticFieldName":"a"}]', groupByFieldsForStatistics: 'kind', having: `AVG(area) > 1 OR MIN(name) = 'a' OR STDDEV(pop) > 0 OR VAR(pop) > 0 OR COUNT(pop) > 0` }, 'SELECT t."ki""nd" AS g0, AVG(t."area") AS s0 FROM "cities" AS t WHERE mapgate_deadline() = 1 GROUP BY 1 HAVING ((AVG(t."area") > ?1) OR (MIN(t."name") = ?2) OR (mapgate_stddev(t."pop") > ?3) OR (mapgate_var(t."pop") > ?4) OR (COUNT(t."pop") > ?5)) ORDER BY g0 ASC NULLS FIRST LIMIT ?6 OFFSET ?7', 'SELECT CAST(t."ki""nd" AS text) AS g0, CAST(AVG(t."area") AS double precision) AS s0 FROM "cities" AS t GROUP BY 1 HAVING ((CAST(AVG(t."area") AS double precision) > CAST($1 AS bigint)) OR (MIN(t."name") = CAST($2 AS text)) OR (CAST(stddev_samp(t."pop") AS double precision) > CAST($3 AS bigint)) OR (CAST(var_samp(t."pop") AS double precision) > CAST($4 AS bigint)) OR (CAST(COUNT(t."pop") AS double precision) > CAST($5 AS bigint))) ORDER BY g0 ASC NULLS FIRST LIMIT CAST($6 AS bigint) OFFSET CAST($7 AS bigint)'],
  ['distinct', layer, { outFields: 'name,kind', returnDistinctValues: 'true', returnGeometry: 'false', orderByFields: 'kind DESC' }, 'SELECT DISTINCT t."name" AS c0, t."ki""nd" AS c1 FROM "cities" AS t WHERE mapgate_deadline() = 1 ORDER BY c1 DESC NULLS LAST, c0 ASC NULLS FIRST LIMIT ?1 OFFSET ?2', 'SELECT DISTINCT CAST(t."name" AS text) AS c0, CAST(t."ki""nd" AS text) AS c1 FROM "cities" AS t ORDER BY c1 DESC NULLS LAST, c0 ASC NULLS FIRST LIMIT CAST($1 AS bigint) OFFSET CAST($2 AS bigint)'],
  ['extent, no spatial index', unindexed, { returnExtentOnly: "true", returnCountOnly: "true" }, 'SELECT mapgate_xmin(t."geom") AS xmin, mapgate_ymin(t."geom") AS ymin, mapgate_xmax(t."geom") AS xmax, mapgate_ymax(t."geom") AS ymax, COUNT(*) AS n FROM "cities" AS t', 'SELECT ST_XMin(e) AS xmin, ST_YMin(e) AS ymin, ST_XMax(e) AS xmax, ST_YMax(e) AS ymax, n FROM (SELECT ST_Extent(t."geom") AS e, CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t) AS s'],
];

// The query geometry's envelope is [0, 0, 2, 1] in every case; each plan selects objectid with no geometry.
// prettier-ignore
const SPATIAL: readonly (readonly [name: string, schema: LayerSchema, filter: SpatialFilter, sqlite: string, postgres: string])[] = [
  ['envelopeIntersects', layer, { bbox: [0, 0, 2, 1], relation: 'envelopeIntersects', geometry: POLYGON }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) ORDER BY t."objectid" ASC LIMIT CAST($6 AS bigint) OFFSET CAST($7 AS bigint)'],
  ['envelopeIntersects, no spatial index', unindexed, { bbox: [0, 0, 2, 1], relation: 'envelopeIntersects', geometry: POLYGON }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) ORDER BY t."objectid" ASC LIMIT CAST($6 AS bigint) OFFSET CAST($7 AS bigint)'],
  ['intersects', layer, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: POLYGON }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($7 AS bigint) OFFSET CAST($8 AS bigint)'],
  ['intersects, no spatial index', unindexed, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: POLYGON }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($7 AS bigint) OFFSET CAST($8 AS bigint)'],
  ['intersects a multipoint', layer, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: MULTIPOINT }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND t."objectid" IN (SELECT p."objectid" FROM "cities" AS p JOIN ST_Dump(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer))) AS d ON p."geom" && d.geom WHERE ST_Intersects(d.geom, p."geom")) ORDER BY t."objectid" ASC LIMIT CAST($7 AS bigint) OFFSET CAST($8 AS bigint)'],
  ['intersects a multipoint, repaired', layer, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: MULTIPOINT, repair: true }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND t."objectid" IN (SELECT p."objectid" FROM "cities" AS p JOIN ST_Dump(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer))) AS d ON p."geom" && d.geom WHERE ST_Intersects(d.geom, ST_Buffer(p."geom", 0))) ORDER BY t."objectid" ASC LIMIT CAST($7 AS bigint) OFFSET CAST($8 AS bigint)'],
  ['intersects within a distance', layer, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: POLYGON, distance: 0.5 }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_DWithin(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom", CAST($7 AS double precision)) ORDER BY t."objectid" ASC LIMIT CAST($8 AS bigint) OFFSET CAST($9 AS bigint)'],
  ['contains', layer, { bbox: [0, 0, 2, 1], relation: 'contains', geometry: POLYGON }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Contains(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($7 AS bigint) OFFSET CAST($8 AS bigint)'],
  ['within a distance, repaired', layer, { bbox: [0, 0, 2, 1], relation: 'within', geometry: POLYGON, distance: 0.5, repair: true }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Within(ST_Buffer(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), CAST($7 AS double precision)), ST_Buffer(t."geom", 0)) ORDER BY t."objectid" ASC LIMIT CAST($8 AS bigint) OFFSET CAST($9 AS bigint)'],
  ['touches', layer, { bbox: [0, 0, 2, 1], relation: 'touches', geometry: POLYGON }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?5 OFFSET ?6', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Touches(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($7 AS bigint) OFFSET CAST($8 AS bigint)'],
];

describe("golden SQL: each rule of the where language", () => {
  for (const [where, sqlite, postgres] of WHERE) {
    it(where.length > 60 ? `${where.slice(0, 57)}...` : where, () => {
      expect(condition("sqlite", where)).toBe(sqlite);
      expect(condition("postgres", where)).toBe(postgres);
    });
  }
});

describe("golden SQL: each plan output", () => {
  for (const [name, schema, params, sqlite, postgres] of PLANS) {
    it(name, () => {
      for (const [dialect, expected] of [
        ["sqlite", sqlite],
        ["postgres", postgres],
      ] as const) {
        const emitted = emitQuery(dialect, plan(params, schema), schema);
        expectBound(dialect, emitted.sql, emitted.params);
        expect(emitted.sql).toBe(expected);
      }
    });
  }
});

describe("golden SQL: each spatial filter", () => {
  const spatialPlan = plan({ geometry: "0,0,2,1", outFields: "objectid", returnGeometry: "false" });
  for (const [name, schema, filter, sqlite, postgres] of SPATIAL) {
    it(name, () => {
      for (const [dialect, expected] of [
        ["sqlite", sqlite],
        ["postgres", postgres],
      ] as const) {
        const emitted = emitQuery(dialect, spatialPlan, schema, filter);
        expectBound(dialect, emitted.sql, emitted.params);
        expect(emitted.sql).toBe(expected);
      }
    });
  }
});

/** The envelope [0, 0, 2, 1] as the query geometry (an axis-aligned rectangle in the layer's coordinates). */
const RECTANGLE: Geometry = {
  type: "Polygon",
  coordinates: [
    [
      [0, 0],
      [2, 0],
      [2, 1],
      [0, 1],
      [0, 0],
    ],
  ],
};
const NAME = layer.fields.find((f) => f.name === "name") as Field;

// The path a reader chose by the layer's statistics (access.ts), and the counts a window answers from its index alone.
// PostgreSQL's text never changes with the path: its planner weighs its own indexes.
// prettier-ignore
const ACCESS: readonly (readonly [name: string, params: Record<string, string>, filter: SpatialFilter, access: AccessPath | undefined, sqlite: string, postgres: string])[] = [
  ['attribute index first: the R*Tree probed by id, the walk in id order, the window\'s edge tested', { where: "name = 'a' AND pop > 1" }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: RECTANGLE }, { kind: 'attributeIndex', field: NAME }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."name" = ?1) AND (t."pop" > ?2)) AND EXISTS (SELECT 1 FROM "rtree_cities_geom" AS x WHERE x.id = t."objectid" AND x.minx <= ?5 AND x.maxx >= ?3 AND x.miny <= ?6 AND x.maxy >= ?4 AND (CASE WHEN x.minx >= ?3 AND x.maxx <= ?5 AND x.miny >= ?4 AND x.maxy <= ?6 THEN 1 ELSE mapgate_spatial(t."geom") = 1 END)) ORDER BY t."objectid" ASC LIMIT ?7 OFFSET ?8', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE ((t."name" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint))) AND t."geom" && ST_MakeEnvelope(CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS double precision), CAST($6 AS double precision), CAST($7 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($8 AS text)), CAST($7 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($9 AS bigint) OFFSET CAST($10 AS bigint)'],
  ['attribute index first, a triangle: the exact test made in the probe, on an entry found', { where: "name = 'a' AND pop > 1" }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: POLYGON }, { kind: 'attributeIndex', field: NAME }, 'SELECT t."objectid" AS c0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."name" = ?1) AND (t."pop" > ?2)) AND EXISTS (SELECT 1 FROM "rtree_cities_geom" AS x WHERE x.id = t."objectid" AND x.minx <= ?5 AND x.maxx >= ?3 AND x.miny <= ?6 AND x.maxy >= ?4 AND (CASE WHEN x.id IS NULL THEN 0 ELSE mapgate_spatial(t."geom") = 1 END)) ORDER BY t."objectid" ASC LIMIT ?7 OFFSET ?8', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE ((t."name" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint))) AND t."geom" && ST_MakeEnvelope(CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS double precision), CAST($6 AS double precision), CAST($7 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($8 AS text)), CAST($7 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($9 AS bigint) OFFSET CAST($10 AS bigint)'],
  ['spatial index first: no attribute index, every entry of the window tested', { where: "name = 'a'" }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: RECTANGLE }, { kind: 'spatialIndex' }, 'SELECT t."objectid" AS c0 FROM "cities" AS t NOT INDEXED WHERE mapgate_deadline() = 1 AND (t."name" = ?1) AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?4 AND maxx >= ?2 AND miny <= ?5 AND maxy >= ?3) AND mapgate_spatial(t."geom") = 1 ORDER BY t."objectid" ASC LIMIT ?6 OFFSET ?7', 'SELECT CAST(t."objectid" AS double precision) AS c0 FROM "cities" AS t WHERE (t."name" = CAST($1 AS text)) AND t."geom" && ST_MakeEnvelope(CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS double precision), CAST($6 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($7 AS text)), CAST($6 AS integer)), t."geom") ORDER BY t."objectid" ASC LIMIT CAST($8 AS bigint) OFFSET CAST($9 AS bigint)'],
  ['a count of a window: inside from the R*Tree alone, the edge tested', { returnCountOnly: 'true' }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: RECTANGLE }, undefined, 'SELECT ((SELECT count(*) FROM "rtree_cities_geom" WHERE minx >= ?1 AND maxx <= ?3 AND miny >= ?2 AND maxy <= ?4) + (SELECT count(*) FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2 AND NOT (minx >= ?1 AND maxx <= ?3 AND miny >= ?2 AND maxy <= ?4)) AND mapgate_spatial(t."geom") = 1)) AS n', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom")'],
  ['a count of a window with a where on the walked index: its entries and the R*Tree, the edge\'s rows read', { returnCountOnly: 'true', where: "name = 'a'" }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: RECTANGLE }, { kind: 'attributeIndex', field: NAME }, 'SELECT ((SELECT count(*) FROM "cities" AS t WHERE mapgate_deadline() = 1 AND (t."name" = ?1) AND EXISTS (SELECT 1 FROM "rtree_cities_geom" AS x WHERE x.id = t."objectid" AND x.minx >= ?2 AND x.maxx <= ?4 AND x.miny >= ?3 AND x.maxy <= ?5)) + (SELECT count(*) FROM "cities" AS t WHERE mapgate_deadline() = 1 AND (t."name" = ?1) AND EXISTS (SELECT 1 FROM "rtree_cities_geom" AS x WHERE x.id = t."objectid" AND x.minx <= ?4 AND x.maxx >= ?2 AND x.miny <= ?5 AND x.maxy >= ?3 AND NOT (x.minx >= ?2 AND x.maxx <= ?4 AND x.miny >= ?3 AND x.maxy <= ?5) AND (CASE WHEN x.id IS NULL THEN 0 ELSE mapgate_spatial(t."geom") = 1 END)))) AS n', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE (t."name" = CAST($1 AS text)) AND t."geom" && ST_MakeEnvelope(CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS double precision), CAST($6 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($7 AS text)), CAST($6 AS integer)), t."geom")'],
  ['a count of a window with a where on another field too: the rows read, the edge tested', { returnCountOnly: 'true', where: "name = 'a' AND pop > 1" }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: RECTANGLE }, { kind: 'attributeIndex', field: NAME }, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."name" = ?1) AND (t."pop" > ?2)) AND EXISTS (SELECT 1 FROM "rtree_cities_geom" AS x WHERE x.id = t."objectid" AND x.minx <= ?5 AND x.maxx >= ?3 AND x.miny <= ?6 AND x.maxy >= ?4 AND (CASE WHEN x.minx >= ?3 AND x.maxx <= ?5 AND x.miny >= ?4 AND x.maxy <= ?6 THEN 1 ELSE mapgate_spatial(t."geom") = 1 END))', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE ((t."name" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint))) AND t."geom" && ST_MakeEnvelope(CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS double precision), CAST($6 AS double precision), CAST($7 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($8 AS text)), CAST($7 AS integer)), t."geom")'],
  ['a count within a distance: no rectangle, the rows read', { returnCountOnly: 'true' }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: RECTANGLE, distance: 0.5 }, undefined, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_DWithin(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom", CAST($7 AS double precision))'],
  ['a count of a triangle: no rectangle, the rows read', { returnCountOnly: 'true' }, { bbox: [0, 0, 2, 1], relation: 'intersects', geometry: POLYGON }, undefined, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2) AND mapgate_spatial(t."geom") = 1', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer)) AND ST_Intersects(ST_SetSRID(ST_GeomFromGeoJSON(CAST($6 AS text)), CAST($5 AS integer)), t."geom")'],
  ['a count of a rectangle by envelopeIntersects: the R*Tree as before', { returnCountOnly: 'true' }, { bbox: [0, 0, 2, 1], relation: 'envelopeIntersects', geometry: RECTANGLE }, undefined, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND t."objectid" IN (SELECT id FROM "rtree_cities_geom" WHERE minx <= ?3 AND maxx >= ?1 AND miny <= ?4 AND maxy >= ?2)', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE t."geom" && ST_MakeEnvelope(CAST($1 AS double precision), CAST($2 AS double precision), CAST($3 AS double precision), CAST($4 AS double precision), CAST($5 AS integer))'],
];

describe("golden SQL: each access path", () => {
  for (const [name, params, filter, access, sqlite, postgres] of ACCESS) {
    it(name, () => {
      const asked = plan({ geometry: "0,0,2,1", outFields: "objectid", returnGeometry: "false", ...params });
      for (const [dialect, expected] of [
        ["sqlite", sqlite],
        ["postgres", postgres],
      ] as const) {
        const emitted = emitQuery(dialect, asked, layer, filter, access);
        expectBound(dialect, emitted.sql, emitted.params);
        expect(emitted.sql).toBe(expected);
      }
    });
  }
});

/** The write statements' targets: a GeoPackage table, and a service schema's table whose name needs quoting. */
const GPKG: WriteTarget = { table: ["cities"], idColumn: "fid", geometry: { column: "geom", srid: 4326 } };
const PG: WriteTarget = { table: ["h_x", 'we"ird'], idColumn: "OBJECTID", geometry: { column: "geom", srid: 4326 } };
const ROW: WriteRow = {
  values: { name: "Oslo", pop: 700000, area: 454, founded: 0 },
  kinds: { name: "string", pop: "integer", area: "double", founded: "date" },
  geometry: { type: "Point", coordinates: [10.7, 59.9] },
};
type Write = (e: typeof sqliteEmitter, t: WriteTarget, schema: string | undefined) => EmittedQuery;
const statement = (sql: string): EmittedQuery => ({ sql, params: [], columns: [] });

/** One line per case: what each dialect writes for an edit (the values bound, the identifiers quoted). */
const WRITES: readonly [string, Write, string, string][] = [
  [
    "insert: values of each kind and a geometry",
    (e, t) => insertRow(e, t, ROW),
    'INSERT INTO "cities" ("name", "pop", "area", "founded", "geom") VALUES (?1, ?2, ?3, ?4, ?5) RETURNING "fid"',
    'INSERT INTO "h_x"."we""ird" ("name", "pop", "area", "founded", "geom") VALUES (CAST($1 AS text), CAST($2 AS bigint), CAST($3 AS double precision), $4, ST_GeomFromWKB($5, CAST($6 AS integer))) RETURNING "OBJECTID"',
  ],
  [
    "insert of several rows: each row's values in the first row's column order, a geometry emptied, the srid bound once",
    (e, t) =>
      insertRows(e, t, [
        ROW,
        { values: { founded: 5, area: null, pop: 1, name: "Bergen" }, kinds: ROW.kinds, geometry: null },
        { ...ROW, geometry: { type: "Point", coordinates: [5.3, 60.4] } },
      ]),
    'INSERT INTO "cities" ("name", "pop", "area", "founded", "geom") VALUES (?1, ?2, ?3, ?4, ?5), (?6, ?7, NULL, ?8, NULL), (?9, ?10, ?11, ?12, ?13) RETURNING "fid"',
    'INSERT INTO "h_x"."we""ird" ("name", "pop", "area", "founded", "geom") VALUES (CAST($1 AS text), CAST($2 AS bigint), CAST($3 AS double precision), $4, ST_GeomFromWKB($5, CAST($6 AS integer))), (CAST($7 AS text), CAST($8 AS bigint), NULL, $9, NULL), (CAST($10 AS text), CAST($11 AS bigint), CAST($12 AS double precision), $13, ST_GeomFromWKB($14, CAST($6 AS integer))) RETURNING "OBJECTID"',
  ],
  [
    "insert: nothing but the key",
    (e, t) => insertRow(e, t, { values: {}, kinds: {} }),
    'INSERT INTO "cities" DEFAULT VALUES RETURNING "fid"',
    'INSERT INTO "h_x"."we""ird" DEFAULT VALUES RETURNING "OBJECTID"',
  ],
  [
    "update: a value and the geometry emptied",
    (e, t) => updateRow(e, t, 7, { values: { name: null }, kinds: { name: "string" }, geometry: null }),
    'UPDATE "cities" SET "name" = NULL, "geom" = NULL WHERE "fid" = ?1 RETURNING "fid"',
    'UPDATE "h_x"."we""ird" SET "name" = NULL, "geom" = NULL WHERE "OBJECTID" = CAST($1 AS bigint) RETURNING "OBJECTID"',
  ],
  [
    "update: nothing to change (whether the row exists)",
    (e, t) => updateRow(e, t, 7, { values: {}, kinds: {} }),
    'SELECT "fid" FROM "cities" WHERE "fid" = ?1',
    'SELECT "OBJECTID" FROM "h_x"."we""ird" WHERE "OBJECTID" = CAST($1 AS bigint)',
  ],
  [
    "delete: a list of ids, one parameter",
    (e, t) => deleteRows(e, t, [1, 2]),
    'DELETE FROM "cities" WHERE "fid" IN (SELECT value FROM json_each(?1)) RETURNING "fid"',
    'DELETE FROM "h_x"."we""ird" WHERE "OBJECTID" = ANY(CAST($1 AS bigint[])) RETURNING "OBJECTID"',
  ],
  [
    "reachable: ids the caller's ownership rule lets them reach (their own, or anonymous callers')",
    (e, t) =>
      reachableIds(e, t, [1, 2], { column: "Creator", scope: { all: false, username: "ann", anonymous: true } }),
    'SELECT "fid" FROM "cities" WHERE "fid" IN (SELECT value FROM json_each(?1)) AND ("Creator" = ?2 OR "Creator" IS NULL OR "Creator" = ?3)',
    'SELECT "OBJECTID" FROM "h_x"."we""ird" WHERE "OBJECTID" = ANY(CAST($1 AS bigint[])) AND ("Creator" = CAST($2 AS text) OR "Creator" IS NULL OR "Creator" = CAST($3 AS text))',
  ],
  [
    "reachable: a feature by its global id, no rule reaching none",
    (e, t) =>
      reachableByGlobalId(e, t, "GlobalID", "{A}", { column: "Creator", scope: { all: false, anonymous: false } }),
    'SELECT "fid" FROM "cities" WHERE "GlobalID" = ?1 AND 1 = 0',
    'SELECT "OBJECTID" FROM "h_x"."we""ird" WHERE "GlobalID" = CAST($1 AS text) AND 1 = 0',
  ],
  [
    "editing record: its table",
    (_e, _t, schema) => statement(editingTableDdl(schema)),
    'CREATE TABLE IF NOT EXISTS "mapgate_editing" (table_name TEXT PRIMARY KEY, global_id_field TEXT, creator_field TEXT, creation_date_field TEXT, editor_field TEXT, edit_date_field TEXT, last_edit BIGINT NOT NULL)',
    'CREATE TABLE IF NOT EXISTS "h_x"."mapgate_editing" (table_name TEXT PRIMARY KEY, global_id_field TEXT, creator_field TEXT, creation_date_field TEXT, editor_field TEXT, edit_date_field TEXT, last_edit BIGINT NOT NULL)',
  ],
  [
    "editing record: an edit's moment",
    (e, _t, schema) => recordEdit(e, schema, "cities", 5),
    'INSERT INTO "mapgate_editing" (table_name, last_edit) VALUES (?1, ?2) ON CONFLICT (table_name) DO UPDATE SET last_edit = excluded.last_edit',
    'INSERT INTO "h_x"."mapgate_editing" (table_name, last_edit) VALUES (CAST($1 AS text), CAST($2 AS bigint)) ON CONFLICT (table_name) DO UPDATE SET last_edit = excluded.last_edit',
  ],
  [
    "editing record: a new layer's fields",
    (e, _t, schema) => recordLayerEditing(e, schema, "cities", { globalIdField: "GlobalID" }, 5),
    'INSERT INTO "mapgate_editing" (table_name, global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit) VALUES (?1, ?2, NULL, NULL, NULL, NULL, ?3) ON CONFLICT (table_name) DO UPDATE SET global_id_field = excluded.global_id_field, creator_field = excluded.creator_field, creation_date_field = excluded.creation_date_field, editor_field = excluded.editor_field, edit_date_field = excluded.edit_date_field, last_edit = excluded.last_edit',
    'INSERT INTO "h_x"."mapgate_editing" (table_name, global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit) VALUES (CAST($1 AS text), CAST($2 AS text), NULL, NULL, NULL, NULL, CAST($3 AS bigint)) ON CONFLICT (table_name) DO UPDATE SET global_id_field = excluded.global_id_field, creator_field = excluded.creator_field, creation_date_field = excluded.creation_date_field, editor_field = excluded.editor_field, edit_date_field = excluded.edit_date_field, last_edit = excluded.last_edit',
  ],
];

describe("golden SQL: each write statement", () => {
  for (const [name, write, sqlite, postgres] of WRITES) {
    it(name, () => {
      const lite = write(sqliteEmitter, GPKG, undefined);
      expectBound("sqlite", lite.sql, lite.params);
      expect(lite.sql).toBe(sqlite);
      const pg = write(postgresEmitter, PG, "h_x");
      expectBound("postgres", pg.sql, pg.params);
      expect(pg.sql).toBe(postgres);
    });
  }
  it("binds each value as its dialect keeps it: a date as GeoPackage text or a timestamp, a geometry as a blob", () => {
    const lite = insertRow(sqliteEmitter, GPKG, ROW);
    expect(lite.params.slice(0, 4)).toEqual(["Oslo", 700000n, 454, "1970-01-01T00:00:00.000Z"]);
    // A GeoPackage geometry: 'GP', its header naming EPSG:4326, then the WKB.
    expect(
      Buffer.from(lite.params[4] as Uint8Array)
        .subarray(0, 2)
        .toString(),
    ).toBe("GP");
    const pg = insertRow(postgresEmitter, PG, ROW);
    expect(pg.params.slice(0, 4)).toEqual(["Oslo", 700000, 454, new Date(0)]);
    expect((pg.params[4] as Buffer)[0]).toBe(1);
    expect(pg.params[5]).toBe(4326);
  });
  it("a multi-row INSERT binds the same values as one INSERT a row", () => {
    const other: WriteRow = { ...ROW, values: { ...ROW.values, name: "Bergen", founded: 86_400_000 } };
    for (const [emitter, target] of [
      [sqliteEmitter, GPKG],
      [postgresEmitter, PG],
    ] as const) {
      const each = [...insertRow(emitter, target, ROW).params, ...insertRow(emitter, target, other).params];
      const many = insertRows(emitter, target, [ROW, other]).params;
      // PostgreSQL binds the srid once for every row.
      expect(many).toEqual(emitter === postgresEmitter ? each.slice(0, -1) : each);
    }
  });
  it("a multi-row INSERT refuses rows that write different columns (its caller groups them)", () => {
    const fewer: WriteRow = { values: { name: "x" }, kinds: { name: "string" }, geometry: null };
    expect(() => insertRows(sqliteEmitter, GPKG, [ROW, fewer])).toThrow(/differ/);
    expect(() => insertRows(sqliteEmitter, GPKG, [ROW, { ...ROW, geometry: undefined }])).toThrow(/differ/);
    expect(() => insertRows(sqliteEmitter, GPKG, [])).toThrow(/no rows/);
  });
});

/**
 * A hosted view of the cities layer: its definition query names fields the view hides (kind, pop), which the caller's
 * own query may not name; it is ANDed after the caller's where, as a tree, so the emitters bind its values too.
 */
const TOWNS: ViewLayer = {
  name: "towns",
  sourceLayerId: 0,
  definitionQuery: "kind = 'town' AND pop > 1000",
  fields: ["name", "area"],
};
const viewPlan = (params: Record<string, string>) =>
  restrictPlan(
    planQuery(new Map(Object.entries(params)), viewSchema(citiesSchema, TOWNS), { now: NOW }),
    viewRestriction(citiesSchema, TOWNS),
  );

// prettier-ignore
const VIEW_PLANS: readonly (readonly [name: string, params: Record<string, string>, sqlite: string, postgres: string])[] = [
  ['features, every visible field', { where: "name LIKE 'P%'", outFields: '*', returnGeometry: 'false' }, 'SELECT t."objectid" AS c0, t."name" AS c1, t."area" AS c2 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND (((t."name" LIKE ?1 AND mapgate_like(t."name", ?1, NULL))) AND ((t."ki""nd" = ?2) AND (t."pop" > ?3))) ORDER BY t."objectid" ASC LIMIT ?4 OFFSET ?5', 'SELECT CAST(t."objectid" AS double precision) AS c0, CAST(t."name" AS text) AS c1, CAST(t."area" AS double precision) AS c2 FROM "cities" AS t WHERE ((t."name" LIKE CAST($1 AS text) ESCAPE CAST($2 AS text)) AND ((t."ki""nd" = CAST($3 AS text)) AND (t."pop" > CAST($4 AS bigint)))) ORDER BY t."objectid" ASC LIMIT CAST($5 AS bigint) OFFSET CAST($6 AS bigint)'],
  ['count', { returnCountOnly: 'true' }, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."ki""nd" = ?1) AND (t."pop" > ?2))', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE ((t."ki""nd" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint)))'],
  ['count, a where that holds for every row', { where: '1=1', returnCountOnly: 'true' }, 'SELECT COUNT(*) AS n FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."ki""nd" = ?1) AND (t."pop" > ?2))', 'SELECT CAST(COUNT(*) AS double precision) AS n FROM "cities" AS t WHERE ((t."ki""nd" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint)))'],
  ['ids', { where: 'area > 2', returnIdsOnly: 'true' }, 'SELECT group_concat(CAST(t."objectid" AS TEXT) ORDER BY t."objectid" ASC) AS ids FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."area" > ?1) AND ((t."ki""nd" = ?2) AND (t."pop" > ?3)))', 'SELECT string_agg(CAST(t."objectid" AS text), CAST($4 AS text) ORDER BY t."objectid" ASC) AS ids FROM "cities" AS t WHERE ((t."area" > CAST($1 AS bigint)) AND ((t."ki""nd" = CAST($2 AS text)) AND (t."pop" > CAST($3 AS bigint))))'],
  ['extent', { returnExtentOnly: 'true' }, 'SELECT MIN(r.minx) AS xmin, MIN(r.miny) AS ymin, MAX(r.maxx) AS xmax, MAX(r.maxy) AS ymax FROM "cities" AS t LEFT JOIN "rtree_cities_geom" AS r ON r.id = t."objectid" WHERE mapgate_deadline() = 1 AND ((t."ki""nd" = ?1) AND (t."pop" > ?2))', 'SELECT ST_XMin(e) AS xmin, ST_YMin(e) AS ymin, ST_XMax(e) AS xmax, ST_YMax(e) AS ymax FROM (SELECT ST_Extent(t."geom") AS e FROM "cities" AS t WHERE ((t."ki""nd" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint)))) AS s'],
  ['statistics grouped', { outStatistics: '[{"statisticType":"sum","onStatisticField":"area","outStatisticFieldName":"total"}]', groupByFieldsForStatistics: 'name' }, 'SELECT t."name" AS g0, SUM(t."area") AS s0 FROM "cities" AS t WHERE mapgate_deadline() = 1 AND ((t."ki""nd" = ?1) AND (t."pop" > ?2)) GROUP BY 1 ORDER BY g0 ASC NULLS FIRST LIMIT ?3 OFFSET ?4', 'SELECT CAST(t."name" AS text) AS g0, CAST(SUM(t."area") AS double precision) AS s0 FROM "cities" AS t WHERE ((t."ki""nd" = CAST($1 AS text)) AND (t."pop" > CAST($2 AS bigint))) GROUP BY 1 ORDER BY g0 ASC NULLS FIRST LIMIT CAST($3 AS bigint) OFFSET CAST($4 AS bigint)'],
];

describe("golden SQL: a hosted view's plan additions", () => {
  for (const [name, params, sqlite, postgres] of VIEW_PLANS) {
    it(name, () => {
      for (const [dialect, expected] of [
        ["sqlite", sqlite],
        ["postgres", postgres],
      ] as const) {
        const emitted = emitQuery(dialect, viewPlan(params), viewSchema(citiesSchema, TOWNS));
        expectBound(dialect, emitted.sql, emitted.params);
        expect(emitted.sql).toBe(expected);
      }
    });
  }

  it("binds the definition query's values as parameters, never as text", () => {
    const emitted = emitQuery("postgres", viewPlan({ returnCountOnly: "true" }), viewSchema(citiesSchema, TOWNS));
    expect(emitted.params).toEqual(["town", 1000]);
    expect(emitted.sql).not.toContain("town");
  });

  it("refuses a hidden field wherever a query names one, as an unknown field", () => {
    for (const params of [
      { outFields: "pop" } as Record<string, string>,
      { where: "pop > 1" },
      { where: "kind = 'town'" },
      { orderByFields: "pop DESC" },
      { outStatistics: '[{"statisticType":"sum","onStatisticField":"pop","outStatisticFieldName":"p"}]' },
      {
        outStatistics: '[{"statisticType":"count","onStatisticField":"name","outStatisticFieldName":"n"}]',
        groupByFieldsForStatistics: "kind",
      },
      { outFields: "name", returnDistinctValues: "true", orderByFields: "pop" },
    ])
      expect(() => viewPlan(params), JSON.stringify(params)).toThrow(expect.objectContaining({ code: 400 }));
  });

  it("shows the object id whatever the view's fields say, and its display field among the visible ones", () => {
    const schema = viewSchema(citiesSchema, { ...TOWNS, fields: ["area"] });
    expect(schema.fields.map((f) => f.name)).toEqual(["objectid", "area"]);
    expect(schema.displayField).toBe("objectid");
    expect(schema.name).toBe("towns");
  });
});

/** One line per case: what each dialect writes for a layer's attachments (`<table>__ATTACH`, every value bound). */
const ATTACH_GPKG = ["Sites"];
const ATTACH_PG = ["h_x", 'Si"tes'];
const NEW = { globalId: "{G}", name: "a.jpg", contentType: "image/jpeg", size: 3, keywords: "k", key: "0f" };
const ATTACHMENTS: readonly [
  string,
  (e: typeof sqliteEmitter, t: readonly string[]) => EmittedQuery,
  string,
  string,
][] = [
  [
    "table: its key numbered by the database, never given again",
    (e, t) => statement(attachTableDdl(e, t).join("; ")),
    'CREATE TABLE "Sites__ATTACH" ("ATTACHMENTID" INTEGER PRIMARY KEY AUTOINCREMENT, "REL_OBJECTID" BIGINT NOT NULL, "REL_GLOBALID" TEXT, "GLOBALID" TEXT NOT NULL UNIQUE, "ATT_NAME" TEXT NOT NULL, "CONTENT_TYPE" TEXT NOT NULL, "DATA_SIZE" BIGINT NOT NULL, "KEYWORDS" TEXT, "DATA_KEY" TEXT NOT NULL); CREATE INDEX "Sites__ATTACH_rel" ON "Sites__ATTACH" ("REL_OBJECTID")',
    'CREATE TABLE "h_x"."Si""tes__ATTACH" ("ATTACHMENTID" integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "REL_OBJECTID" BIGINT NOT NULL, "REL_GLOBALID" TEXT, "GLOBALID" TEXT NOT NULL UNIQUE, "ATT_NAME" TEXT NOT NULL, "CONTENT_TYPE" TEXT NOT NULL, "DATA_SIZE" BIGINT NOT NULL, "KEYWORDS" TEXT, "DATA_KEY" TEXT NOT NULL); CREATE INDEX "Si""tes__ATTACH_rel" ON "h_x"."Si""tes__ATTACH" ("REL_OBJECTID")',
  ],
  [
    "insert: of a feature by object id, taken from its row",
    (e, t) => insertAttachment(e, { table: t, idColumn: "OBJECTID", globalIdColumn: "GlobalID" }, { objectId: 7 }, NEW),
    'INSERT INTO "Sites__ATTACH" ("REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY") SELECT "OBJECTID", "GlobalID", ?1, ?2, ?3, ?4, ?5, ?6 FROM "Sites" WHERE "OBJECTID" = ?7 RETURNING "ATTACHMENTID", "REL_OBJECTID"',
    'INSERT INTO "h_x"."Si""tes__ATTACH" ("REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY") SELECT "OBJECTID", "GlobalID", CAST($1 AS text), CAST($2 AS text), CAST($3 AS text), CAST($4 AS bigint), CAST($5 AS text), CAST($6 AS text) FROM "h_x"."Si""tes" WHERE "OBJECTID" = CAST($7 AS bigint) RETURNING "ATTACHMENTID", "REL_OBJECTID"',
  ],
  [
    "find: one attachment of a feature, locked for a change",
    (e, t) => findAttachment(e, t, { id: 2, parentId: 7 }, true),
    'SELECT "ATTACHMENTID", "REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY" FROM "Sites__ATTACH" WHERE "ATTACHMENTID" = ?1 AND "REL_OBJECTID" = ?2',
    'SELECT "ATTACHMENTID", "REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY" FROM "h_x"."Si""tes__ATTACH" WHERE "ATTACHMENTID" = CAST($1 AS bigint) AND "REL_OBJECTID" = CAST($2 AS bigint) FOR UPDATE',
  ],
  [
    "update: a new file, keywords kept when none are sent",
    (e, t) => updateAttachment(e, t, 2, { ...NEW, keywords: null }),
    'UPDATE "Sites__ATTACH" SET "ATT_NAME" = ?1, "CONTENT_TYPE" = ?2, "DATA_SIZE" = ?3, "KEYWORDS" = "KEYWORDS", "DATA_KEY" = ?4 WHERE "ATTACHMENTID" = ?5 RETURNING "ATTACHMENTID"',
    'UPDATE "h_x"."Si""tes__ATTACH" SET "ATT_NAME" = CAST($1 AS text), "CONTENT_TYPE" = CAST($2 AS text), "DATA_SIZE" = CAST($3 AS bigint), "KEYWORDS" = "KEYWORDS", "DATA_KEY" = CAST($4 AS text) WHERE "ATTACHMENTID" = CAST($5 AS bigint) RETURNING "ATTACHMENTID"',
  ],
  [
    "delete: by id, answering the bytes' keys",
    (e, t) => deleteAttachments(e, t, [1, 2]),
    'DELETE FROM "Sites__ATTACH" WHERE "ATTACHMENTID" IN (SELECT value FROM json_each(?1)) RETURNING "ATTACHMENTID", "DATA_KEY"',
    'DELETE FROM "h_x"."Si""tes__ATTACH" WHERE "ATTACHMENTID" = ANY(CAST($1 AS bigint[])) RETURNING "ATTACHMENTID", "DATA_KEY"',
  ],
  [
    "delete: every attachment of deleted features",
    (e, t) => deleteAttachmentsOf(e, t, [7]),
    'DELETE FROM "Sites__ATTACH" WHERE "REL_OBJECTID" IN (SELECT value FROM json_each(?1)) RETURNING "DATA_KEY"',
    'DELETE FROM "h_x"."Si""tes__ATTACH" WHERE "REL_OBJECTID" = ANY(CAST($1 AS bigint[])) RETURNING "DATA_KEY"',
  ],
  [
    "select: by features, a type family and an exact type, a size range and a keyword",
    (e, t) =>
      selectAttachments(e, t, {
        parentIds: [7],
        types: ["image", "text/plain"],
        size: [1, 9],
        keywords: ["Valve"],
        limit: 10,
      }),
    `SELECT "ATTACHMENTID", "REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY" FROM "Sites__ATTACH" WHERE "REL_OBJECTID" IN (SELECT value FROM json_each(?1)) AND (lower("CONTENT_TYPE") LIKE ?2 OR (lower("CONTENT_TYPE") = ?3 OR lower("CONTENT_TYPE") LIKE ?4)) AND "DATA_SIZE" BETWEEN ?5 AND ?6 AND ((',' || replace(lower(COALESCE("KEYWORDS", '')), ' ', '') || ',') LIKE ?7) ORDER BY "REL_OBJECTID", "ATTACHMENTID" LIMIT ?8`,
    `SELECT "ATTACHMENTID", "REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY" FROM "h_x"."Si""tes__ATTACH" WHERE "REL_OBJECTID" = ANY(CAST($1 AS bigint[])) AND (lower("CONTENT_TYPE") LIKE CAST($2 AS text) OR (lower("CONTENT_TYPE") = CAST($3 AS text) OR lower("CONTENT_TYPE") LIKE CAST($4 AS text))) AND "DATA_SIZE" BETWEEN CAST($5 AS bigint) AND CAST($6 AS bigint) AND ((',' || replace(lower(COALESCE("KEYWORDS", '')), ' ', '') || ',') LIKE CAST($7 AS text)) ORDER BY "REL_OBJECTID", "ATTACHMENTID" LIMIT CAST($8 AS bigint)`,
  ],
];

describe("golden SQL: each attachment statement", () => {
  for (const [name, write, sqlite, postgres] of ATTACHMENTS) {
    it(name, () => {
      const lite = write(sqliteEmitter, ATTACH_GPKG);
      expectBound("sqlite", lite.sql, lite.params);
      expect(lite.sql).toBe(sqlite);
      const pg = write(postgresEmitter, ATTACH_PG);
      expectBound("postgres", pg.sql, pg.params);
      expect(pg.sql).toBe(postgres);
    });
  }
  it("names a long layer's attachment table within PostgreSQL's 63 bytes, apart from another long name", () => {
    const a = attachTableName("x".repeat(60), postgresEmitter);
    const b = attachTableName(`${"x".repeat(59)}y`, postgresEmitter);
    expect(Buffer.byteLength(a)).toBeLessThanOrEqual(63);
    expect(a.endsWith("__ATTACH")).toBe(true);
    expect(a).not.toBe(b);
    expect(attachTableName("x".repeat(60), sqliteEmitter)).toBe(`${"x".repeat(60)}__ATTACH`);
  });
});
