// SQL for a query plan, assembled once for both dialects mapgate reads: SQLite (GeoPackage, through node:sqlite)
// and PostgreSQL/PostGIS. This module walks the plan and the expression tree and joins the clauses; what the
// dialects write differently it asks of the dataset's emitter (sql/sqlite.ts, sql/postgres.ts, behind the
// interface of sql/emitter.ts). Every value that came with the request is a bound parameter (`?N` for SQLite,
// `$N` for PostgreSQL, numbered so that text and parameters never drift apart); identifiers come only from the
// layer schema, quoted with quotes doubled; the only other text is the emitters' own. The emitted SQL holds no
// string literal a request can reach, so no quote a client writes can ever close one.
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
import type { AccessPath } from "#shared/features/access.ts";
import type { OrderTerm, QueryPlan, Statistic, StatisticType } from "#shared/features/plan.ts";
import { type Field, fieldValueType, type LayerSchema } from "#shared/features/schema.ts";
import {
  type BindType,
  type Clauses,
  type Dialect,
  type OperandType,
  qualified,
  quoteIdentifier,
  type SpatialClause,
  type SpatialFilter,
  type SqlEmitter,
  T,
} from "#shared/features/sql/emitter.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import type { Expr } from "#shared/features/where.ts";
import { nodes } from "#shared/features/where-tree.ts";

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

/** The emitter of each dialect, for callers that name the dialect. */
const EMITTERS: Readonly<Record<Dialect, SqlEmitter>> = { sqlite: sqliteEmitter, postgres: postgresEmitter };

/**
 * The most operands joined by one run of AND or OR. SQLite parses a run as a left-deep tree and refuses trees
 * over 1000 levels deep, so longer runs (a client's long list of ORs) are grouped in parenthesized runs of this
 * many: AND and OR are associative, so both dialects read the groups as the run they replace.
 */
const MAX_RUN = 64;

/** One statement being assembled: its parameters, and the clauses every dialect shares. */
class Statement implements Clauses {
  readonly params: unknown[] = [];
  readonly emitter: SqlEmitter;

  constructor(emitter: SqlEmitter) {
    this.emitter = emitter;
  }

  bind(value: unknown, type?: BindType): string {
    this.params.push(this.emitter.parameter(value, type));
    return this.emitter.placeholder(this.params.length, type);
  }

  number(value: number): string {
    return this.bind(value, Number.isSafeInteger(value) ? "bigint" : "double");
  }

  text(value: string): string {
    return this.bind(value, "text");
  }

  column(field: Field): string {
    return qualified(field.column);
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
    return fieldValueType(field) === "date" ? this.emitter.fieldEpochMs(col) : col;
  }

  /** A field as answers carry it: numbers as JS numbers, GUIDs as text, dates as epoch milliseconds. */
  fieldOutput(field: Field): string {
    const type = fieldValueType(field);
    return type === "date" ? this.fieldValue(field) : this.emitter.output(this.source(field), type);
  }

  typed(e: Expr, want: OperandType): string {
    return (e.type === "null" ? this.emitter.typedNull(want) : undefined) ?? this.expr(e);
  }

  expr(e: Expr): string {
    switch (e.kind) {
      case "field":
        return this.fieldValue(e.field);
      case "number":
      case "date":
        return this.number(e.value);
      case "string":
        return this.text(e.value);
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
        return this.emitter.like(this, e);
      case "arithmetic": {
        let acc = this.typed(e.first, "number");
        for (const { op, operand } of e.rest) {
          const x = this.typed(operand, "number");
          acc =
            op === "/"
              ? `(CAST(${acc} AS ${this.emitter.typeName("double")}) / NULLIF(${x}, 0))`
              : `(${acc} ${op} ${x})`;
        }
        return acc;
      }
      case "negate":
        return `(-${this.typed(e.operand, "number")})`;
      case "extract":
        return this.emitter.extract(this, e.unit, this.typed(e.operand, "date"));
      case "trim": {
        const x = this.typed(e.operand, "string");
        // The characters to strip are a set: a literal one is bound with each character once (the databases walk
        // the whole text for every row).
        const set = e.chars?.kind === "string" ? this.text([...new Set(e.chars.value)].join("")) : undefined;
        const chars = e.chars === undefined ? "" : `, ${set ?? this.typed(e.chars, "string")}`;
        const fn = e.side === "leading" ? "ltrim" : e.side === "trailing" ? "rtrim" : this.emitter.trimBoth;
        return `${fn}(${x}${chars})`;
      }
      case "cast":
        return this.emitter.cast(this, e);
      case "call":
        return this.emitter.call(this, e);
      case "aggregate":
        return this.aggregate(e.name, e.operand);
    }
  }

  aggregate(name: StatisticType, field: Field | undefined, stat?: Statistic): string {
    if (field === undefined) return this.count();
    const x = this.fieldValue(field);
    switch (name) {
      case "count":
      case "sum":
      case "avg":
        return this.emitter.numeric(`${name.toUpperCase()}(${x})`);
      case "min":
      case "max": {
        const sql = `${name.toUpperCase()}(${x})`;
        return fieldValueType(field) === "number" ? this.emitter.numeric(sql) : sql;
      }
      default:
        return this.emitter.statistic(this, name, x, stat);
    }
  }

  /** COUNT(*), as the answer reads it. */
  count(): string {
    return this.emitter.numeric("COUNT(*)");
  }

  order(sql: string, descending: boolean, nullable: boolean): string {
    const dir = descending ? "DESC" : "ASC";
    return nullable ? `${sql} ${dir} NULLS ${descending ? "LAST" : "FIRST"}` : `${sql} ${dir}`;
  }

  /** Ordering by a field: the column itself (indexable) where the dialect can, else the field's value. */
  orderField(term: OrderTerm, oid: Field): string {
    const f = term.field;
    const key = this.emitter.sortKey(this.source(f), this.fieldValue(f), fieldValueType(f));
    return this.order(key, term.descending, f.nullable && f !== oid);
  }

  limit(pageSize: number, offset: number): string {
    // One row past the page tells the caller whether more follow (exceededTransferLimit).
    return `LIMIT ${this.number(pageSize + 1)} OFFSET ${this.number(offset)}`;
  }
}

function table(schema: LayerSchema): string {
  return schema.table.map(quoteIdentifier).join(".");
}

/**
 * Whether a spatial filter is an axis-aligned rectangle met by intersection (an envelope in the layer's own
 * coordinates, with no distance): the features whose envelope lies inside it meet it, with no exact test.
 */
export function isWindow(filter: SpatialFilter): boolean {
  if (filter.relation !== "intersects" || filter.repair || (filter.distance ?? 0) !== 0) return false;
  const g = filter.geometry;
  const [xmin, ymin, xmax, ymax] = filter.bbox;
  if (g.type !== "Polygon" || g.coordinates.length !== 1 || !(xmin < xmax && ymin < ymax)) return false;
  const ring = g.coordinates[0] ?? [];
  const corners = [
    [xmin, ymin],
    [xmax, ymin],
    [xmax, ymax],
    [xmin, ymax],
    [xmin, ymin],
  ];
  return (
    ring.length === 5 && ring.every((p, i) => p[0] === corners[i]?.[0] && p[1] === corners[i]?.[1] && p.length === 2)
  );
}

/** The spatial clause of a plan's filter, its window's corners bound. */
function spatialClause(
  sql: Statement,
  schema: LayerSchema,
  oid: Field,
  spatial: SpatialFilter,
  access: AccessPath | undefined,
): SpatialClause {
  const geometry = schema.geometry;
  if (geometry === undefined) throw new Error(`layer ${schema.name} has no geometry to filter on`);
  const d = spatial.distance ?? 0;
  const [xmin, ymin, xmax, ymax] = spatial.bbox;
  const box = [xmin - d, ymin - d, xmax + d, ymax + d].map((v) => sql.bind(v, "double"));
  return {
    filter: spatial,
    table: table(schema),
    geometryColumn: geometry.column,
    srid: geometry.srid,
    index: geometry.index,
    oidColumn: oid.column,
    box: box as [string, string, string, string],
    distance: d,
    probe: access?.kind === "attributeIndex",
    window: isWindow(spatial),
  };
}

function conditions(
  sql: Statement,
  plan: QueryPlan,
  schema: LayerSchema,
  oid: Field,
  spatial: SpatialFilter | undefined,
  access?: AccessPath,
) {
  const out: string[] = [];
  if (plan.where !== undefined) out.push(sql.expr(plan.where));
  if (plan.objectIds !== undefined) out.push(sql.emitter.idsIn(sql, sql.column(oid), plan.objectIds));
  if (plan.spatial !== undefined) {
    if (spatial === undefined) throw new Error("a query with a geometry needs its resolved spatial filter");
    out.push(...sql.emitter.spatial(sql, spatialClause(sql, schema, oid, spatial, access)));
  }
  // A statement that filters or sorts guards each row it examines (SQLite's deadline). An unfiltered count or
  // extent keeps the database's shortcuts (bounded by the table's size, and fast).
  const guard = sql.emitter.rowGuard;
  if (guard !== undefined && (out.length > 0 || (plan.output !== "count" && plan.output !== "extent")))
    out.unshift(guard);
  return out.length === 0 ? "" : ` WHERE ${out.join(" AND ")}`;
}

/**
 * The SQL answering a plan in a dialect. `spatial` is the plan's geometry resolved into the dataset's
 * coordinates; it is required when the plan has one. For SQLite with a spatial filter, the reader registers
 * `mapgate_spatial(blob)` for the statement (1 when the feature passes the exact test of the relation, as
 * SPATIAL_RELATIONS defines it; for envelopeIntersects on a layer without R*Tree, the envelope test). `access` is
 * the path chosen by the layer's statistics (access.ts), when the dataset chose one.
 */
export function emitQuery(
  dialect: SqlEmitter | Dialect,
  plan: QueryPlan,
  schema: LayerSchema,
  spatial?: SpatialFilter,
  access?: AccessPath,
): EmittedQuery {
  const sql = new Statement(typeof dialect === "string" ? EMITTERS[dialect] : dialect);
  const oid = schema.fields.find((f) => f.name === schema.objectIdField);
  if (oid === undefined) throw new Error(`layer ${schema.name}: the object id field is not among its fields`);
  const hint = access?.kind === "spatialIndex" && spatial !== undefined ? (sql.emitter.spatialFirst ?? "") : "";
  const from = ` FROM ${table(schema)} AS ${T}${hint}`;
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
        const g = sql.emitter.geometryOutput(qualified(geometry.column));
        list.push(select("g", g, { role: "geometry", name: geometry.column }));
      }
      const where = conditions(sql, plan, schema, oid, spatial, access);
      const order = plan.orderBy.map((t) => sql.orderField(t, oid)).join(", ");
      const text = `SELECT ${list.join(", ")}${from}${where} ORDER BY ${order} ${sql.limit(plan.pageSize, plan.offset)}`;
      return { sql: text, params: sql.params, columns, pageSize: plan.pageSize };
    }
    case "count": {
      const emitter = sql.emitter;
      // A where the rows' attribute index answers alone (every field it names is the index's).
      const onIndex =
        access?.kind === "attributeIndex" &&
        plan.where !== undefined &&
        [...nodes(plan.where)].every((e) => e.kind !== "field" || e.field === access.field);
      if (
        emitter.windowCount !== undefined &&
        spatial !== undefined &&
        schema.geometry?.index !== undefined &&
        (plan.where === undefined || onIndex) &&
        plan.objectIds === undefined &&
        plan.distinctFields === undefined &&
        isWindow(spatial)
      ) {
        // A window counted in the spatial index (and the attribute index), reading only the rows on its edge.
        const where = plan.where === undefined ? undefined : sql.expr(plan.where);
        const count = emitter.windowCount(spatialClause(sql, schema, oid, spatial, access), where);
        const n = select("n", sql.emitter.numeric(`(${count})`), { role: "count", name: "count" });
        return { sql: `SELECT ${n}`, params: sql.params, columns };
      }
      const n = select("n", sql.count(), { role: "count", name: "count" });
      const where = conditions(sql, plan, schema, oid, spatial, access);
      if (plan.distinctFields === undefined) return { sql: `SELECT ${n}${from}${where}`, params: sql.params, columns };
      const inner = plan.distinctFields.map((f, i) => `${sql.fieldValue(f)} AS d${i}`).join(", ");
      return { sql: `SELECT ${n} FROM (SELECT DISTINCT ${inner}${from}${where}) AS d`, params: sql.params, columns };
    }
    case "ids": {
      // Every id in one text, joined in order by the database (`1,2,3`, NULL for none): one value to read, not a
      // row (an array and a number) per feature, which held ~110 bytes per id of a table of millions in the
      // function's memory. The key is an integer column, so its text is its digits.
      const id = `CAST(${sql.source(oid)} AS ${sql.emitter.typeName("text")})`;
      const where = conditions(sql, plan, schema, oid, spatial, access);
      const order = plan.orderBy.map((t) => sql.orderField(t, oid)).join(", ");
      const joined = sql.emitter.joinIds(sql, id, order);
      const list = select("ids", joined, { role: "ids", name: oid.name, field: oid });
      return { sql: `SELECT ${list}${from}${where}`, params: sql.params, columns };
    }
    case "extent": {
      const geometry = schema.geometry;
      if (geometry === undefined) throw new Error(`layer ${schema.name} has no geometry`);
      const form = sql.emitter.extent(qualified(geometry.column), geometry.index, sql.column(oid));
      const corners = ["xmin", "ymin", "xmax", "ymax"] as const;
      const count = plan.withCount ? `, ${sql.count()} AS n` : "";
      // The corners, then the count, listed in the order either form selects them: the answer reads each value
      // at its column's index.
      const list = corners.map((c) => select(c, form.corners[c], { role: c, name: c }));
      if (plan.withCount) columns.push({ alias: "n", role: "count", name: "count" });
      const where = conditions(sql, plan, schema, oid, spatial, access);
      const text =
        form.envelope === undefined
          ? `SELECT ${list.join(", ")}${count}${from}${form.join ?? ""}${where}`
          : `SELECT ${list.join(", ")}${count ? ", n" : ""} FROM (SELECT ${form.envelope} AS e${count}${from}${where}) AS s`;
      return { sql: text, params: sql.params, columns };
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
      const where = conditions(sql, plan, schema, oid, spatial, access);
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
      const where = conditions(sql, plan, schema, oid, spatial, access);
      const order = plan.orderBy
        .map((t) => sql.order(`c${plan.fields.indexOf(t.field)}`, t.descending, t.field.nullable))
        .join(", ");
      const text = `SELECT DISTINCT ${list.join(", ")}${from}${where} ORDER BY ${order} ${sql.limit(plan.pageSize, plan.offset)}`;
      return { sql: text, params: sql.params, columns, pageSize: plan.pageSize };
    }
  }
}
