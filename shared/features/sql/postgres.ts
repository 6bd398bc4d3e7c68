// PostgreSQL/PostGIS's SQL: placeholders `$n` cast to their type (a bare one in an expression may not be
// inferable), dates as EXTRACT(EPOCH …) (a timestamp without time zone read as UTC), numbers answered as double
// precision (node-postgres answers bigint and numeric as strings), and the spatial test in SQL. The emitted SQL
// holds no string literal a request could reach: every value the request carries is bound.
import {
  type BindType,
  type CastType,
  type Clauses,
  MAX_ROUND_PLACES,
  MS_PER_DAY,
  qualified,
  quoteIdentifier,
  type SqlEmitter,
} from "#shared/features/sql/emitter.ts";
import type { Expr } from "#shared/features/where.ts";
import { toWkb } from "#shared/features/geometry/wkb-write.ts";

const TYPES: Readonly<Record<BindType, string>> = {
  bigint: "bigint",
  double: "double precision",
  integer: "integer",
  text: "text",
  "bigint[]": "bigint[]",
};
const CAST_TYPES: Readonly<Record<CastType, string>> = { integer: "bigint", double: "double precision", text: "text" };
const RELATIONS = {
  contains: "ST_Contains",
  within: "ST_Within",
  crosses: "ST_Crosses",
  touches: "ST_Touches",
  overlaps: "ST_Overlaps",
} as const;

const double = (sql: string) => `CAST(${sql} AS double precision)`;
const epochMs = (sql: string) => `CAST(EXTRACT(EPOCH FROM ${sql}) * 1000 AS double precision)`;

function call(c: Clauses, e: Extract<Expr, { kind: "call" }>): string {
  const num = (i: number) => c.typed(e.args[i] as Expr, "number");
  const str = (i: number) => c.typed(e.args[i] as Expr, "string");
  switch (e.name) {
    case "abs":
    case "ceiling":
    case "floor":
      return `${e.name}(${num(0)})`;
    case "log":
    case "log10": {
      // PostgreSQL raises an error on a logarithm of zero or less; both dialects answer NULL.
      const x = num(0);
      return `(CASE WHEN ${x} > 0 THEN ${e.name === "log" ? "ln" : "log"}(${double(x)}) END)`;
    }
    case "power":
      return `power(${double(num(0))}, ${double(num(1))})`;
    case "round":
    case "truncate": {
      const digits = e.args.length > 1 ? num(1) : c.number(0);
      // Decimal rounding, half away from zero, as mapgate_round does it.
      const fn = e.name === "round" ? "round" : "trunc";
      // Past ±400 places no double changes further, and numeric would carry a billion digits (as mapgate_round).
      const places = `CAST(LEAST(GREATEST(CAST(${digits} AS bigint), -${MAX_ROUND_PLACES}), ${MAX_ROUND_PLACES}) AS integer)`;
      return double(`${fn}(CAST(${num(0)} AS numeric), ${places})`);
    }
    case "mod":
      return double(`mod(CAST(${num(0)} AS numeric), NULLIF(CAST(${num(1)} AS numeric), 0))`);
    case "char_length":
      return `char_length(${str(0)})`;
    case "concat":
      // PostgreSQL's concat() is only stable, so it is run again on every row (a 16,000-character argument on
      // 171,000 rows held the statement to its timeout); || over COALESCEs is immutable, folded once when
      // constant, and skips NULLs as concat does.
      return `(${e.args.map((_, i) => `COALESCE(${str(i)}, '')`).join(" || ")})`;
    case "lower":
    case "upper":
      return `${e.name}(${str(0)})`;
    case "substring": {
      const length = e.args.length > 2 ? ` FOR CAST(${num(2)} AS integer)` : "";
      return `substring(${str(0)} FROM CAST(${num(1)} AS integer)${length})`;
    }
    case "position":
      return `strpos(${str(1)}, ${str(0)})`;
    case "coalesce":
    case "nullif":
      return `${e.name}(${e.args.map((a) => c.expr(a)).join(", ")})`;
  }
}

export const postgresEmitter: SqlEmitter = {
  dialect: "postgres",
  testsSpatialInSql: true,
  dateValue: (ms) => new Date(ms),
  identityKey: (column) => `${quoteIdentifier(column)} integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY`,
  // ISO WKB, made a geometry in the column's system by the database.
  geometryValue: (geometry) => Buffer.from(toWkb(geometry).wkb),
  geometryInput: (value, srid) => `ST_GeomFromWKB(${value}, ${srid()})`,
  placeholder: (n, type) => (type === undefined ? `$${n}` : `CAST($${n} AS ${TYPES[type]})`),
  parameter: (value) => value,
  typeName: (type) => CAST_TYPES[type],
  typedNull: (want) => `CAST(NULL AS ${want === "string" ? "text" : "double precision"})`,
  epochMs,
  // ROUND of EXTRACT's numeric rounds as SQLite's ROUND does.
  fieldEpochMs: (column) => `CAST(ROUND(EXTRACT(EPOCH FROM ${column}) * 1000) AS double precision)`,
  numeric: double,
  // pg answers bigint and numeric as strings; a double is what the answer holds anyway.
  output: (sql, type) => (type === "number" ? double(sql) : type === "string" ? `CAST(${sql} AS text)` : sql),
  sortKey: (column) => column,
  geometryOutput: (column) => `ST_AsBinary(${column})`,
  trimBoth: "btrim",
  extract: (c, unit, x) =>
    double(`EXTRACT(${unit.toUpperCase()} FROM (to_timestamp(${x} / 1000.0) AT TIME ZONE ${c.text("UTC")}))`),
  like(c, e) {
    const x = c.typed(e.operand, "string");
    const p = c.typed(e.pattern, "string");
    // ESCAPE '' switches off PostgreSQL's default escape character, the backslash.
    return `(${x} ${e.negated ? "NOT " : ""}LIKE ${p} ESCAPE ${c.text(e.escape ?? "")})`;
  },
  cast(c, e) {
    const from = e.operand.type;
    if (from === "null")
      return `CAST(NULL AS ${e.target === "varchar" ? "text" : e.target === "integer" ? "bigint" : "double precision"})`;
    const x = c.expr(e.operand);
    switch (e.target) {
      case "integer":
        // Truncated toward zero, as SQLite does (PostgreSQL's own cast would round).
        return from === "string" ? `CAST(trunc(CAST(${x} AS numeric)) AS bigint)` : `CAST(trunc(${x}) AS bigint)`;
      case "float":
        return double(x);
      case "varchar":
        return `left(CAST(${x} AS text), CAST(${c.number(e.length ?? 1)} AS integer))`;
      case "date":
        return from === "string" ? epochMs(`CAST(${x} AS date)`) : `(floor(${x} / ${MS_PER_DAY}.0) * ${MS_PER_DAY})`;
      case "timestamp":
        return from === "string" ? epochMs(`CAST(${x} AS timestamp)`) : x;
    }
  },
  call,
  statistic(c, name, x, stat) {
    if (name === "stddev" || name === "var") return double(`${name}_samp(${x})`);
    const p = c.bind(stat?.percentile ?? 0.5, "double");
    return double(`${name}(${p}) WITHIN GROUP (ORDER BY ${x}${stat?.descending ? " DESC" : ""})`);
  },
  idsIn: (c, column, ids) => `${column} = ANY(${c.bind(ids, "bigint[]")})`,
  // The separator is bound, since the SQL holds no string literal.
  joinIds: (c, id, order) => `string_agg(${id}, ${c.text(",")} ORDER BY ${order})`,
  spatial(c, s) {
    const g0 = qualified(s.geometryColumn);
    const srid = c.bind(s.srid, "integer");
    const out = [`${g0} && ST_MakeEnvelope(${s.box.join(", ")}, ${srid})`];
    if (s.filter.relation === "envelopeIntersects") return out;
    const g = s.filter.repair ? `ST_Buffer(${g0}, 0)` : g0;
    const q = `ST_SetSRID(ST_GeomFromGeoJSON(${c.bind(JSON.stringify(s.filter.geometry), "text")}), ${srid})`;
    const dist = s.distance > 0 ? c.bind(s.distance, "double") : undefined;
    if (s.filter.relation === "intersects" && dist === undefined && s.filter.geometry.type === "MultiPoint") {
      // What meets any of many points: the index probed point by point, rather than every row in the
      // points' envelope tested against all of them (10,000 points over a world of places ran for minutes).
      const pk = quoteIdentifier(s.oidColumn);
      const gc = quoteIdentifier(s.geometryColumn);
      const g2 = s.filter.repair ? `ST_Buffer(p.${gc}, 0)` : `p.${gc}`;
      out.push(
        `${qualified(s.oidColumn)} IN (SELECT p.${pk} FROM ${s.table} AS p JOIN ST_Dump(${q}) AS d ON p.${gc} && d.geom WHERE ST_Intersects(d.geom, ${g2}))`,
      );
    } else if (s.filter.relation === "intersects") {
      out.push(dist === undefined ? `ST_Intersects(${q}, ${g})` : `ST_DWithin(${q}, ${g}, ${dist})`);
    } else {
      // The relation reads from the query geometry to the feature (see SPATIAL_RELATIONS).
      const qb = dist === undefined ? q : `ST_Buffer(${q}, ${dist})`;
      out.push(`${RELATIONS[s.filter.relation]}(${qb}, ${g})`);
    }
    return out;
  },
  extent: (geometry) => ({
    envelope: `ST_Extent(${geometry})`,
    corners: { xmin: "ST_XMin(e)", ymin: "ST_YMin(e)", xmax: "ST_XMax(e)", ymax: "ST_YMax(e)" },
  }),
  // PostgreSQL's planner weighs its btree and GiST indexes by its own statistics.
  spatialFirst: undefined,
  // The database's statement_timeout bounds each statement.
  rowGuard: undefined,
};
