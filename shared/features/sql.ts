// SQL for a query plan, in the two dialects mapgate reads: SQLite (GeoPackage, through node:sqlite) and
// PostgreSQL/PostGIS. Every value that came with the request is a bound parameter (`?N` for SQLite, `$N` for
// PostgreSQL, numbered so that text and parameters never drift apart); identifiers come only from the layer
// schema, quoted with quotes doubled; the only other text is this module's own. The emitted SQL holds no
// string literal at all, so no quote a client writes can ever close one.
//
// Conventions both dialects keep, so a layer answers the same from either source:
// - A date is whole epoch milliseconds (UTC) in every expression and every answer: SQLite converts GeoPackage's
//   ISO 8601 text with julianday(), PostgreSQL its date/timestamp/timestamptz columns with EXTRACT(EPOCH …)
//   (a timestamp without time zone is read as UTC), each rounded to the millisecond.
// - LIKE is case-sensitive, as PostgreSQL's is and as the standardized queries define it. SQLite's LIKE ignores
//   ASCII case, so it only narrows, and mapgate_like (registered from sqlite-functions.ts) decides. Without
//   ESCAPE no character escapes (PostgreSQL's default backslash is switched off).
// - Division is always in floating point and a division by zero gives NULL, never an error.
// - Ascending order puts NULLs first, descending last (SQLite's default; PostgreSQL is told so).
// Functions SQLite lacks, or has with other semantics, are called as mapgate_<name>: see sqlite-functions.ts.
import type { Geometry } from "geojson";
import type { Bounds, Field, LayerSchema } from "#shared/features/schema.ts";
import type { OrderTerm, QueryPlan, SpatialRelation, Statistic, StatisticType } from "#shared/features/plan.ts";
import { type Expr, type ExtractUnit, fieldValueType, type ValueType } from "#shared/features/where.ts";

export type Dialect = "sqlite" | "postgres";

/** The query geometry, already resolved into the dataset's coordinates by the caller. */
export interface SpatialFilter {
  /** The query geometry's envelope (not yet grown by `distance`). */
  readonly bbox: Bounds;
  readonly relation: SpatialRelation;
  readonly geometry: Geometry;
  /** The buffer around the query geometry, in the dataset's units. */
  readonly distance?: number;
  /**
   * Relate each feature's geometry repaired (a zero-width buffer, as the JTS path repairs what it cannot node):
   * asked for again after the database's geometry engine refused an invalid one, never first (it costs a buffer
   * per row).
   */
  readonly repair?: boolean;
}

export type ColumnRole = "field" | "geometry" | "statistic" | "count" | "ids" | "xmin" | "ymin" | "xmax" | "ymax";

export interface EmittedColumn {
  /** The column's name in the result rows (this module's own, never a client's). */
  readonly alias: string;
  readonly role: ColumnRole;
  /** The name the answer gives it: the field's name, the statistic's outStatisticFieldName, `count`, `xmin`, … */
  readonly name: string;
  readonly field?: Field;
}

export interface EmittedQuery {
  readonly sql: string;
  readonly params: unknown[];
  readonly columns: readonly EmittedColumn[];
  /** Features, statistics and distinct pages: the page size; the SQL fetches one row more. */
  readonly pageSize?: number;
}

/**
 * The function every SQLite statement with work per row calls (see conditions): the reader registers it, non-
 * deterministic, to abort the statement past its deadline.
 */
export const SQLITE_DEADLINE = "mapgate_deadline";

/**
 * The most operands joined by one run of AND or OR. SQLite parses a run as a left-deep tree and refuses trees
 * over 1000 levels deep, so longer runs (a client's long list of ORs) are grouped in parenthesized runs of this
 * many: AND and OR are associative, so both dialects read the groups as the run they replace.
 */
const MAX_RUN = 64;
/** The longest pattern SQLite's own LIKE accepts, in bytes (SQLITE_MAX_LIKE_PATTERN_LENGTH): longer ones fail. */
const SQLITE_LIKE_PATTERN_BYTES = 50_000;

/** The table alias every column is qualified with, so no field name can clash with a joined table's. */
const T = "t";

/** The places ROUND and TRUNCATE take at most either way: past them no double changes further. */
export const MAX_ROUND_PLACES = 400;
const MS_PER_DAY = 86_400_000;
/** EXTRACT's unit as SQLite's mapgate_extract takes it (a number, so the SQL holds no string literal). */
export const EXTRACT_CODES: Readonly<Record<ExtractUnit, number>> = {
  year: 1,
  month: 2,
  day: 3,
  hour: 4,
  minute: 5,
  second: 6,
};

/** Quotes an identifier: double quotes, embedded ones doubled; NUL cannot be quoted and is refused. */
export function quoteIdentifier(name: string): string {
  if (name.includes("\u0000")) throw new Error("an identifier cannot hold NUL");
  return `"${name.replaceAll('"', '""')}"`;
}

class Sql {
  readonly params: unknown[] = [];
  readonly dialect: Dialect;

  constructor(dialect: Dialect) {
    this.dialect = dialect;
  }

  get pg(): boolean {
    return this.dialect === "postgres";
  }

  /** A bound value; PostgreSQL gets the type too, since a bare `$n` in an expression may not be inferable. */
  bind(value: unknown, pgType?: string): string {
    this.params.push(value);
    const n = this.params.length;
    if (!this.pg) return `?${n}`;
    return pgType === undefined ? `$${n}` : `CAST($${n} AS ${pgType})`;
  }

  number(value: number): string {
    if (Number.isSafeInteger(value)) {
      // node:sqlite binds every JS number as a REAL; an integer bound as such keeps integer arithmetic and text.
      return this.pg ? this.bind(value, "bigint") : this.bind(BigInt(value));
    }
    return this.bind(value, "double precision");
  }

  text(value: string): string {
    return this.bind(value, "text");
  }

  get double(): string {
    return this.pg ? "double precision" : "REAL";
  }

  column(field: Field | string): string {
    return `${T}.${quoteIdentifier(typeof field === "string" ? field : field.column)}`;
  }

  /** A field's column as the field's type: the source's conversion applied (PostgreSQL's types only). */
  source(field: Field): string {
    const col = this.column(field);
    switch (field.convert) {
      case "boolean":
        return `CAST(CAST(${col} AS integer) AS smallint)`;
      case "guid":
        return `('{' || upper(CAST(${col} AS text)) || '}')`;
      case "text":
        return `CAST(${col} AS text)`;
      default:
        return col;
    }
  }

  /**
   * A field as expressions see it: dates become whole epoch milliseconds, rounded half away from zero in both
   * dialects (PostgreSQL keeps microseconds, which clients take for a broken date when fractional; ROUND of
   * EXTRACT's numeric rounds as SQLite's ROUND does). Expressions, order, statistics and answers all see this one
   * value, so a date a client was answered finds the same row again.
   */
  fieldValue(field: Field): string {
    const col = this.source(field);
    if (fieldValueType(field) !== "date") return col;
    return this.pg
      ? `CAST(ROUND(EXTRACT(EPOCH FROM ${col}) * 1000) AS double precision)`
      : `CAST(ROUND((julianday(${col}) - 2440587.5) * ${MS_PER_DAY}) AS INTEGER)`;
  }

  /** A field as answers carry it: numbers as JS numbers, GUIDs as text, dates as epoch milliseconds. */
  fieldOutput(field: Field): string {
    const type = fieldValueType(field);
    if (type === "date") return this.fieldValue(field);
    if (!this.pg) return this.source(field);
    // pg answers bigint and numeric as strings; a double is what the answer holds anyway.
    if (type === "number") return `CAST(${this.source(field)} AS double precision)`;
    if (type === "string") return `CAST(${this.source(field)} AS text)`;
    return this.source(field);
  }

  /** NULL where PostgreSQL needs to know its type to pick a function. */
  typed(e: Expr, want: "number" | "string" | "date"): string {
    if (e.type === "null" && this.pg) return `CAST(NULL AS ${want === "string" ? "text" : "double precision"})`;
    return this.expr(e);
  }

  expr(e: Expr): string {
    switch (e.kind) {
      case "field":
        return this.fieldValue(e.field);
      case "number":
        return this.number(e.value);
      case "string":
        return this.text(e.value);
      case "date":
        return this.number(e.value);
      case "null":
        return "NULL";
      case "compare":
        return `(${this.expr(e.left)} ${e.op} ${this.expr(e.right)})`;
      case "and":
      case "or": {
        const op = e.kind === "and" ? " AND " : " OR ";
        let run = e.parts.map((p) => this.expr(p));
        while (run.length > MAX_RUN) {
          const groups: string[] = [];
          for (let i = 0; i < run.length; i += MAX_RUN) groups.push(`(${run.slice(i, i + MAX_RUN).join(op)})`);
          run = groups;
        }
        return `(${run.join(op)})`;
      }
      case "not":
        return `(NOT ${this.expr(e.operand)})`;
      case "in":
        return `(${this.expr(e.operand)}${e.negated ? " NOT" : ""} IN (${e.list.map((x) => this.expr(x)).join(", ")}))`;
      case "between":
        return `(${this.expr(e.operand)}${e.negated ? " NOT" : ""} BETWEEN ${this.expr(e.low)} AND ${this.expr(e.high)})`;
      case "isNull":
        return `(${this.expr(e.operand)} IS${e.negated ? " NOT" : ""} NULL)`;
      case "like":
        return this.like(e);
      case "arithmetic": {
        let acc = this.typed(e.first, "number");
        for (const { op, operand } of e.rest) {
          const x = this.typed(operand, "number");
          acc = op === "/" ? `(CAST(${acc} AS ${this.double}) / NULLIF(${x}, 0))` : `(${acc} ${op} ${x})`;
        }
        return acc;
      }
      case "negate":
        return `(-${this.typed(e.operand, "number")})`;
      case "extract": {
        const x = this.typed(e.operand, "date");
        if (!this.pg) return `mapgate_extract(${EXTRACT_CODES[e.unit]}, ${x})`;
        const utc = this.text("UTC");
        return `CAST(EXTRACT(${e.unit.toUpperCase()} FROM (to_timestamp(${x} / 1000.0) AT TIME ZONE ${utc})) AS double precision)`;
      }
      case "trim": {
        const x = this.typed(e.operand, "string");
        // The characters to strip are a set: a literal one is bound with each character once (the databases walk
        // the whole text for every row).
        const set = e.chars?.kind === "string" ? this.text([...new Set(e.chars.value)].join("")) : undefined;
        const chars = e.chars === undefined ? "" : `, ${set ?? this.typed(e.chars, "string")}`;
        const fn = e.side === "leading" ? "ltrim" : e.side === "trailing" ? "rtrim" : this.pg ? "btrim" : "trim";
        return `${fn}(${x}${chars})`;
      }
      case "cast":
        return this.cast(e);
      case "call":
        return this.call(e);
      case "aggregate":
        return this.aggregate(e.name, e.operand);
    }
  }

  like(e: Extract<Expr, { kind: "like" }>): string {
    const x = this.typed(e.operand, "string");
    const not = e.negated ? "NOT " : "";
    if (this.pg) {
      const p = this.typed(e.pattern, "string");
      // ESCAPE '' switches off PostgreSQL's default escape character, the backslash.
      return `(${x} ${not}LIKE ${p} ESCAPE ${this.text(e.escape ?? "")})`;
    }
    // A literal pattern is bound with its runs of % made one (the same pattern): the pattern travels to
    // mapgate_like with every row it is tested on.
    const p =
      e.pattern.kind === "string" ? this.text(collapsePercents(e.pattern.value, e.escape)) : this.expr(e.pattern);
    const escape = e.escape === undefined ? undefined : this.text(e.escape);
    const decide = `mapgate_like(${x}, ${p}, ${escape ?? "NULL"})`;
    // SQLite's own LIKE (in C, cheaper) narrows first, but fails on a pattern over its length limit: it narrows
    // only by a literal pattern, whose length is known here; a computed one (UPPER can triple a text) is left to
    // mapgate_like alone.
    if (e.pattern.kind !== "string" || Buffer.byteLength(e.pattern.value) > SQLITE_LIKE_PATTERN_BYTES)
      return `(${not}${decide})`;
    // The parameters are referenced twice by number: bound once, read twice.
    const narrow = `${x} LIKE ${p}${escape === undefined ? "" : ` ESCAPE ${escape}`}`;
    return `(${not}(${narrow} AND ${decide}))`;
  }

  cast(e: Extract<Expr, { kind: "cast" }>): string {
    const from: ValueType = e.operand.type;
    const pg = this.pg;
    if (from === "null") {
      const type = e.target === "varchar" ? "text" : e.target === "integer" ? (pg ? "bigint" : "INTEGER") : this.double;
      return `CAST(NULL AS ${type})`;
    }
    const x = this.expr(e.operand);
    switch (e.target) {
      case "integer":
        // Both truncate toward zero (PostgreSQL's own cast would round).
        if (!pg) return `CAST(${x} AS INTEGER)`;
        return from === "string" ? `CAST(trunc(CAST(${x} AS numeric)) AS bigint)` : `CAST(trunc(${x}) AS bigint)`;
      case "float":
        return `CAST(${x} AS ${this.double})`;
      case "varchar": {
        const n = this.number(e.length ?? 1);
        return pg ? `left(CAST(${x} AS text), CAST(${n} AS integer))` : `substr(CAST(${x} AS TEXT), 1, ${n})`;
      }
      case "date":
        if (from === "string") {
          return pg
            ? `CAST(EXTRACT(EPOCH FROM CAST(${x} AS date)) * 1000 AS double precision)`
            : `CAST(ROUND((julianday(date(${x})) - 2440587.5) * ${MS_PER_DAY}) AS INTEGER)`;
        }
        return `(${pg ? "floor" : "mapgate_floor"}(${x} / ${MS_PER_DAY}.0) * ${MS_PER_DAY})`;
      case "timestamp":
        if (from === "string") {
          return pg
            ? `CAST(EXTRACT(EPOCH FROM CAST(${x} AS timestamp)) * 1000 AS double precision)`
            : `CAST(ROUND((julianday(${x}) - 2440587.5) * ${MS_PER_DAY}) AS INTEGER)`;
        }
        return x;
    }
  }

  call(e: Extract<Expr, { kind: "call" }>): string {
    const pg = this.pg;
    const num = (i: number) => this.typed(e.args[i] as Expr, "number");
    const str = (i: number) => this.typed(e.args[i] as Expr, "string");
    switch (e.name) {
      case "abs":
        // SQLite's abs() fails on the smallest 64-bit integer (what CAST(-1e300 AS INTEGER) saturates to).
        return pg ? `abs(${num(0)})` : `mapgate_abs(${num(0)})`;
      case "ceiling":
        return pg ? `ceiling(${num(0)})` : `mapgate_ceiling(${num(0)})`;
      case "floor":
        return pg ? `floor(${num(0)})` : `mapgate_floor(${num(0)})`;
      case "log":
      case "log10": {
        if (!pg) return `mapgate_${e.name === "log" ? "ln" : "log10"}(${num(0)})`;
        // PostgreSQL raises an error on a logarithm of zero or less; both dialects answer NULL.
        const x = num(0);
        return `(CASE WHEN ${x} > 0 THEN ${e.name === "log" ? "ln" : "log"}(CAST(${x} AS double precision)) END)`;
      }
      case "power":
        return pg
          ? `power(CAST(${num(0)} AS double precision), CAST(${num(1)} AS double precision))`
          : `mapgate_power(${num(0)}, ${num(1)})`;
      case "round":
      case "truncate": {
        const digits = e.args.length > 1 ? num(1) : this.number(0);
        if (!pg) return `mapgate_${e.name}(${num(0)}, ${digits})`;
        // Decimal rounding, half away from zero, as mapgate_round does it.
        const fn = e.name === "round" ? "round" : "trunc";
        // Past ±400 places no double changes further, and numeric would carry a billion digits (as mapgate_round).
        const places = `CAST(LEAST(GREATEST(CAST(${digits} AS bigint), -${MAX_ROUND_PLACES}), ${MAX_ROUND_PLACES}) AS integer)`;
        return `CAST(${fn}(CAST(${num(0)} AS numeric), ${places}) AS double precision)`;
      }
      case "mod":
        return pg
          ? `CAST(mod(CAST(${num(0)} AS numeric), NULLIF(CAST(${num(1)} AS numeric), 0)) AS double precision)`
          : `mapgate_mod(${num(0)}, ${num(1)})`;
      case "char_length":
        return pg ? `char_length(${str(0)})` : `length(${str(0)})`;
      case "concat":
        // PostgreSQL's concat() is only stable, so it is run again on every row (a 16,000-character argument on
        // 171,000 rows held the statement to its timeout); || over COALESCEs is immutable, folded once when
        // constant, and skips NULLs as concat does.
        return pg
          ? `(${e.args.map((_, i) => `COALESCE(${str(i)}, '')`).join(" || ")})`
          : `concat(${e.args.map((_, i) => str(i)).join(", ")})`;
      case "lower":
      case "upper":
        return pg ? `${e.name}(${str(0)})` : `mapgate_${e.name}(${str(0)})`;
      case "substring": {
        if (!pg) return `mapgate_substring(${e.args.map((a, i) => (i === 0 ? str(0) : num(i))).join(", ")})`;
        const length = e.args.length > 2 ? ` FOR CAST(${num(2)} AS integer)` : "";
        return `substring(${str(0)} FROM CAST(${num(1)} AS integer)${length})`;
      }
      case "position":
        return pg ? `strpos(${str(1)}, ${str(0)})` : `instr(${str(1)}, ${str(0)})`;
      case "coalesce":
      case "nullif":
        return `${e.name}(${e.args.map((a) => this.expr(a)).join(", ")})`;
    }
  }

  aggregate(name: StatisticType, field: Field | undefined, stat?: Statistic): string {
    const pg = this.pg;
    if (field === undefined) return pg ? "CAST(COUNT(*) AS double precision)" : "COUNT(*)";
    const x = this.fieldValue(field);
    const numeric = (sql: string) => (pg ? `CAST(${sql} AS double precision)` : sql);
    switch (name) {
      case "count":
        return numeric(`COUNT(${x})`);
      case "sum":
      case "avg":
        return numeric(`${name.toUpperCase()}(${x})`);
      case "min":
      case "max":
        return fieldValueType(field) === "number"
          ? numeric(`${name.toUpperCase()}(${x})`)
          : `${name.toUpperCase()}(${x})`;
      case "stddev":
        return pg ? numeric(`stddev_samp(${x})`) : `mapgate_stddev(${x})`;
      case "var":
        return pg ? numeric(`var_samp(${x})`) : `mapgate_var(${x})`;
      case "percentile_cont":
      case "percentile_disc": {
        const p = this.bind(stat?.percentile ?? 0.5, "double precision");
        const desc = stat?.descending ?? false;
        if (!pg) return `mapgate_${name}(${x}, ${p}, ${desc ? 1 : 0})`;
        return numeric(`${name}(${p}) WITHIN GROUP (ORDER BY ${x}${desc ? " DESC" : ""})`);
      }
    }
  }

  order(sql: string, descending: boolean, nullable: boolean): string {
    const dir = descending ? "DESC" : "ASC";
    return nullable ? `${sql} ${dir} NULLS ${descending ? "LAST" : "FIRST"}` : `${sql} ${dir}`;
  }

  /** Ordering by a field: the column itself (indexable), except SQLite dates, whose text may mix formats. */
  orderField(term: OrderTerm, oid: Field): string {
    const f = term.field;
    const sql = !this.pg && fieldValueType(f) === "date" ? this.fieldValue(f) : this.source(f);
    return this.order(sql, term.descending, f.nullable && f !== oid);
  }

  limit(pageSize: number, offset: number): string {
    // One row past the page tells the caller whether more follow (exceededTransferLimit).
    return `LIMIT ${this.number(pageSize + 1)} OFFSET ${this.number(offset)}`;
  }
}

/** A LIKE pattern with each run of unescaped % made one %, which matches what the run matches. */
export function collapsePercents(pattern: string, escape: string | undefined): string {
  let out = "";
  let afterPercent = false;
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === escape) {
      out += c + (chars[++i] ?? "");
      afterPercent = false;
    } else if (c !== "%" || !afterPercent) {
      out += c;
      afterPercent = c === "%";
    }
  }
  return out;
}

function table(schema: LayerSchema): string {
  return schema.table.map(quoteIdentifier).join(".");
}

function conditions(sql: Sql, plan: QueryPlan, schema: LayerSchema, oid: Field, spatial: SpatialFilter | undefined) {
  const out: string[] = [];
  if (plan.where !== undefined) out.push(sql.expr(plan.where));
  if (plan.objectIds !== undefined) {
    // One parameter for the whole list, however long.
    out.push(
      sql.pg
        ? `${sql.column(oid)} = ANY(${sql.bind(plan.objectIds, "bigint[]")})`
        : `${sql.column(oid)} IN (SELECT value FROM json_each(${sql.bind(JSON.stringify(plan.objectIds))}))`,
    );
  }
  if (plan.spatial !== undefined) {
    if (spatial === undefined) throw new Error("a query with a geometry needs its resolved spatial filter");
    const geometry = schema.geometry;
    if (geometry === undefined) throw new Error(`layer ${schema.name} has no geometry to filter on`);
    const d = spatial.distance ?? 0;
    const [xmin, ymin, xmax, ymax] = spatial.bbox;
    const box = [xmin - d, ymin - d, xmax + d, ymax + d].map((v) => sql.bind(v, "double precision"));
    const g0 = sql.column(geometry.column);
    if (sql.pg) {
      const srid = sql.bind(geometry.srid, "integer");
      out.push(`${g0} && ST_MakeEnvelope(${box.join(", ")}, ${srid})`);
      const g = spatial.repair ? `ST_Buffer(${g0}, 0)` : g0;
      if (spatial.relation !== "envelopeIntersects") {
        const q = `ST_SetSRID(ST_GeomFromGeoJSON(${sql.bind(JSON.stringify(spatial.geometry), "text")}), ${srid})`;
        const dist = d > 0 ? sql.bind(d, "double precision") : undefined;
        if (spatial.relation === "intersects" && dist === undefined && spatial.geometry.type === "MultiPoint") {
          // What meets any of many points: the index probed point by point, rather than every row in the
          // points' envelope tested against all of them (10,000 points over a world of places ran for minutes).
          const pk = quoteIdentifier(oid.column);
          const gc = quoteIdentifier(geometry.column);
          const g2 = spatial.repair ? `ST_Buffer(p.${gc}, 0)` : `p.${gc}`;
          out.push(
            `${sql.column(oid)} IN (SELECT p.${pk} FROM ${table(schema)} AS p JOIN ST_Dump(${q}) AS d ON p.${gc} && d.geom WHERE ST_Intersects(d.geom, ${g2}))`,
          );
        } else if (spatial.relation === "intersects") {
          out.push(dist === undefined ? `ST_Intersects(${q}, ${g})` : `ST_DWithin(${q}, ${g}, ${dist})`);
        } else {
          // The relation reads from the query geometry to the feature (see SPATIAL_RELATIONS).
          const qb = dist === undefined ? q : `ST_Buffer(${q}, ${dist})`;
          const fn = {
            contains: "ST_Contains",
            within: "ST_Within",
            crosses: "ST_Crosses",
            touches: "ST_Touches",
            overlaps: "ST_Overlaps",
          }[spatial.relation];
          out.push(`${fn}(${qb}, ${g})`);
        }
      }
    } else {
      const g = g0;
      if (geometry.index !== undefined) {
        // The R*Tree narrows (its float32 boxes are rounded outwards, so nothing is lost); its id is the key.
        const [bx0, by0, bx1, by1] = box as [string, string, string, string];
        out.push(
          `${sql.column(oid)} IN (SELECT id FROM ${quoteIdentifier(geometry.index)} WHERE minx <= ${bx1} AND maxx >= ${bx0} AND miny <= ${by1} AND maxy >= ${by0})`,
        );
      }
      // The exact test runs in JavaScript, on the blob, against the filter the reader registered for this query.
      if (spatial.relation !== "envelopeIntersects" || geometry.index === undefined)
        out.push(`mapgate_spatial(${g}) = 1`);
    }
  }
  // SQLite runs on the function's thread: a statement that filters or sorts calls the reader's deadline on
  // each row it examines, so a costly one ends at its deadline instead of holding the function. An unfiltered
  // count or extent keeps SQLite's shortcuts (bounded by the table's size, and fast).
  if (!sql.pg && (out.length > 0 || (plan.output !== "count" && plan.output !== "extent")))
    out.unshift(`${SQLITE_DEADLINE}() = 1`);
  return out.length === 0 ? "" : ` WHERE ${out.join(" AND ")}`;
}

/**
 * The SQL answering a plan in a dialect. `spatial` is the plan's geometry resolved into the dataset's
 * coordinates; it is required when the plan has one. For SQLite with a spatial filter, the reader registers
 * `mapgate_spatial(blob)` for the statement (1 when the feature passes the exact test of the relation, as
 * SPATIAL_RELATIONS defines it; for envelopeIntersects on a layer without R*Tree, the envelope test).
 */
export function emitQuery(
  dialect: Dialect,
  plan: QueryPlan,
  schema: LayerSchema,
  spatial?: SpatialFilter,
): EmittedQuery {
  const sql = new Sql(dialect);
  const oid = schema.fields.find((f) => f.name === schema.objectIdField);
  if (oid === undefined) throw new Error(`layer ${schema.name}: the object id field is not among its fields`);
  const from = ` FROM ${table(schema)} AS ${T}`;
  const columns: EmittedColumn[] = [];
  const select = (alias: string, expression: string, column: Omit<EmittedColumn, "alias">) => {
    columns.push({ alias, ...column });
    return `${expression} AS ${alias}`;
  };
  const fieldColumns = (fields: readonly Field[]) =>
    fields.map((f, i) => select(`c${i}`, sql.fieldOutput(f), { role: "field", name: f.name, field: f }));

  switch (plan.output) {
    case "features": {
      const list = fieldColumns(plan.fields);
      const geometry = schema.geometry;
      if (plan.returnGeometry && geometry !== undefined) {
        const g = sql.column(geometry.column);
        list.push(select("g", sql.pg ? `ST_AsBinary(${g})` : g, { role: "geometry", name: geometry.column }));
      }
      const where = conditions(sql, plan, schema, oid, spatial);
      const order = plan.orderBy.map((t) => sql.orderField(t, oid)).join(", ");
      const text = `SELECT ${list.join(", ")}${from}${where} ORDER BY ${order} ${sql.limit(plan.pageSize, plan.offset)}`;
      return { sql: text, params: sql.params, columns, pageSize: plan.pageSize };
    }
    case "count": {
      const n = select("n", sql.pg ? "CAST(COUNT(*) AS double precision)" : "COUNT(*)", {
        role: "count",
        name: "count",
      });
      const where = conditions(sql, plan, schema, oid, spatial);
      if (plan.distinctFields === undefined) return { sql: `SELECT ${n}${from}${where}`, params: sql.params, columns };
      const inner = plan.distinctFields.map((f, i) => `${sql.fieldValue(f)} AS d${i}`).join(", ");
      return { sql: `SELECT ${n} FROM (SELECT DISTINCT ${inner}${from}${where}) AS d`, params: sql.params, columns };
    }
    case "ids": {
      // Every id in one text, joined in order by the database (`1,2,3`, NULL for none): one value to read, not a
      // row (an array and a number) per feature, which held ~110 bytes per id of a table of millions in the
      // function's memory. The key is an integer column, so its text is its digits.
      const id = `CAST(${sql.source(oid)} AS ${sql.pg ? "text" : "TEXT"})`;
      const where = conditions(sql, plan, schema, oid, spatial);
      const order = plan.orderBy.map((t) => sql.orderField(t, oid)).join(", ");
      // SQLite's separator is a comma by default; PostgreSQL's is bound, since the SQL holds no string literal.
      const joined = sql.pg
        ? `string_agg(${id}, ${sql.text(",")} ORDER BY ${order})`
        : `group_concat(${id} ORDER BY ${order})`;
      const list = select("ids", joined, { role: "ids", name: oid.name, field: oid });
      return { sql: `SELECT ${list}${from}${where}`, params: sql.params, columns };
    }
    case "extent": {
      const geometry = schema.geometry;
      if (geometry === undefined) throw new Error(`layer ${schema.name} has no geometry`);
      const g = sql.column(geometry.column);
      const corners = ["xmin", "ymin", "xmax", "ymax"] as const;
      const count = plan.withCount ? `, ${sql.pg ? "CAST(COUNT(*) AS double precision)" : "COUNT(*)"} AS n` : "";
      // The corners, then the count, listed in the order every form below selects them: the answer reads each
      // value at its column's index.
      const selectCorners = (expression: (corner: (typeof corners)[number]) => string) => {
        const list = corners.map((c) => select(c, expression(c), { role: c, name: c }));
        if (plan.withCount) columns.push({ alias: "n", role: "count", name: "count" });
        return list;
      };
      if (sql.pg) {
        const where = conditions(sql, plan, schema, oid, spatial);
        const fn = { xmin: "ST_XMin", ymin: "ST_YMin", xmax: "ST_XMax", ymax: "ST_YMax" };
        const list = selectCorners((c) => `${fn[c]}(e)`);
        const text = `SELECT ${list.join(", ")}${count ? ", n" : ""} FROM (SELECT ST_Extent(${g}) AS e${count}${from}${where}) AS s`;
        return { sql: text, params: sql.params, columns };
      }
      if (geometry.index !== undefined) {
        const r = quoteIdentifier(geometry.index);
        const agg = { xmin: "MIN(r.minx)", ymin: "MIN(r.miny)", xmax: "MAX(r.maxx)", ymax: "MAX(r.maxy)" };
        const list = selectCorners((c) => agg[c]);
        const where = conditions(sql, plan, schema, oid, spatial);
        const text = `SELECT ${list.join(", ")}${count}${from} LEFT JOIN ${r} AS r ON r.id = ${sql.column(oid)}${where}`;
        return { sql: text, params: sql.params, columns };
      }
      const list = selectCorners((c) => `mapgate_${c}(${g})`);
      const where = conditions(sql, plan, schema, oid, spatial);
      return { sql: `SELECT ${list.join(", ")}${count}${from}${where}`, params: sql.params, columns };
    }
    case "statistics": {
      const list = plan.groupBy.map((f, i) =>
        select(`g${i}`, sql.fieldOutput(f), { role: "field", name: f.name, field: f }),
      );
      plan.statistics.forEach((s, i) =>
        list.push(
          select(`s${i}`, sql.aggregate(s.type, s.field, s), { role: "statistic", name: s.name, field: s.field }),
        ),
      );
      const where = conditions(sql, plan, schema, oid, spatial);
      const group = plan.groupBy.length === 0 ? "" : ` GROUP BY ${plan.groupBy.map((_, i) => i + 1).join(", ")}`;
      const having = plan.having === undefined ? "" : ` HAVING ${sql.expr(plan.having)}`;
      const terms = plan.orderBy.map((t) =>
        t.kind === "group"
          ? sql.order(`g${plan.groupBy.indexOf(t.field)}`, t.descending, t.field.nullable)
          : sql.order(`s${t.index}`, t.descending, true),
      );
      const order = terms.length === 0 ? "" : ` ORDER BY ${terms.join(", ")}`;
      const text = `SELECT ${list.join(", ")}${from}${where}${group}${having}${order} ${sql.limit(plan.pageSize, plan.offset)}`;
      return { sql: text, params: sql.params, columns, pageSize: plan.pageSize };
    }
    case "distinct": {
      const list = fieldColumns(plan.fields);
      const where = conditions(sql, plan, schema, oid, spatial);
      const order = plan.orderBy
        .map((t) => sql.order(`c${plan.fields.indexOf(t.field)}`, t.descending, t.field.nullable))
        .join(", ");
      const text = `SELECT DISTINCT ${list.join(", ")}${from}${where} ORDER BY ${order} ${sql.limit(plan.pageSize, plan.offset)}`;
      return { sql: text, params: sql.params, columns, pageSize: plan.pageSize };
    }
  }
}
