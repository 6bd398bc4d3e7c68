// The seam between the dialect-neutral clause assembler (sql.ts) and each dialect's own SQL (sqlite.ts for
// GeoPackage through node:sqlite, postgres.ts for PostGIS): the assembler walks the plan and the expression tree,
// and asks the emitter only for what the dialects write differently (a placeholder, a type's name, a cast, a
// function, LIKE, a date's value, the geometry column, a count, the spatial test…). An open dataset carries its
// emitter, so nothing else asks which dialect it speaks.
//
// The statements that write rows (INSERT, UPDATE, DELETE: write.ts) assemble from the same parts (a placeholder
// and the value bound to it, the id list), plus what only writing needs of a dialect: a date's and a geometry's
// value as its driver binds them, and the geometry a statement writes.
import type { Geometry } from "geojson";
import type { SpatialRelation, Statistic } from "#shared/features/plan.ts";
import type { Bounds, FieldValueType } from "#shared/features/schema.ts";
import type { Expr, ExtractUnit } from "#shared/features/where.ts";

export type Dialect = "sqlite" | "postgres";

/** What a bound value is declared as, where the dialect needs to know (a bare `$n` may not be inferable). */
export type BindType = "bigint" | "double" | "integer" | "text" | "bigint[]";
/** The types an expression is cast to, named in each dialect's words. */
export type CastType = "integer" | "double" | "text";
/** The type an operand is read as, where a NULL must say which function it is for. */
export type OperandType = "number" | "string" | "date";
export type Corner = "xmin" | "ymin" | "xmax" | "ymax";

/** The places ROUND and TRUNCATE take at most either way: past them no double changes further. */
export const MAX_ROUND_PLACES = 400;
export const MS_PER_DAY = 86_400_000;

/** The table alias every column is qualified with, so no field name can clash with a joined table's. */
export const T = "t";

/** Quotes an identifier: double quotes, embedded ones doubled; NUL cannot be quoted and is refused. */
export function quoteIdentifier(name: string): string {
  if (name.includes("\u0000")) throw new Error("an identifier cannot hold NUL");
  return `"${name.replaceAll('"', '""')}"`;
}

/** A column of the queried table, qualified with its alias. */
export const qualified = (column: string) => `${T}.${quoteIdentifier(column)}`;

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

/** What an emitter writes into: the statement's parameters, and its operands' SQL (the assembler walks them). */
export interface Clauses {
  /** Binds a value as the statement's next parameter: its placeholder. */
  bind(value: unknown, type?: BindType): string;
  number(value: number): string;
  text(value: string): string;
  expr(e: Expr): string;
  /** An operand, a NULL typed where the dialect needs the type to pick a function. */
  typed(e: Expr, want: OperandType): string;
}

/** The spatial condition's parts, its values already bound in the order both dialects share. */
export interface SpatialClause {
  readonly filter: SpatialFilter;
  /** The filtered table, quoted. */
  readonly table: string;
  readonly geometryColumn: string;
  readonly srid: number;
  readonly index: string | undefined;
  readonly oidColumn: string;
  /** The envelope grown by the distance: placeholders of xmin, ymin, xmax, ymax. */
  readonly box: readonly [string, string, string, string];
  /** The distance, 0 when none. */
  readonly distance: number;
  /**
   * The rows come from an attribute index (access.ts): the spatial index is probed by each row's id rather than read
   * as a list of the window's ids first.
   */
  readonly probe: boolean;
  /**
   * The filter is a window (sql.ts's isWindow: an upright rectangle met by intersection, no distance): a feature
   * whose envelope lies inside it meets it with no exact test.
   */
  readonly window: boolean;
}

/** How a dialect finds the extent: corners over an aggregated envelope (`e`), or corners aggregated directly. */
export interface ExtentForm {
  readonly corners: Readonly<Record<Corner, string>>;
  /** The aggregate whose envelope the corners read, as `e`, in an inner query. */
  readonly envelope?: string;
  /** A table joined to the queried one (an R*Tree). */
  readonly join?: string;
}

export type StatisticFunction = "stddev" | "var" | "percentile_cont" | "percentile_disc";

/** One dialect's SQL: what the assembler asks of it. */
export interface SqlEmitter {
  readonly dialect: Dialect;
  /**
   * Whether the database tests a spatial relation exactly in SQL (PostGIS), given the query's geometry; else the
   * reader's spatial test does (SQLite, after the R*Tree narrowed the rows).
   */
  readonly testsSpatialInSql: boolean;
  /** The placeholder of the statement's nth parameter (from 1), declared as `type` where the dialect needs it. */
  placeholder(n: number, type: BindType | undefined): string;
  /** A value as the dialect's driver binds it for `type`. */
  parameter(value: unknown, type: BindType | undefined): unknown;
  typeName(type: CastType): string;
  /** NULL as an operand of `want`, where the dialect must know its type; undefined where it need not. */
  typedNull(want: OperandType): string | undefined;
  /** A date text cast in an expression, as epoch milliseconds, UTC. */
  epochMs(sql: string): string;
  /**
   * A date column as every expression, order, statistic and answer sees it: whole epoch milliseconds, UTC, rounded
   * half away from zero (PostgreSQL keeps microseconds, which clients take for a broken date when fractional).
   */
  fieldEpochMs(column: string): string;
  /** A number the answer reads, as the driver returns it as a JS number. */
  numeric(sql: string): string;
  /** A field's converted value, not a date, as answers carry it. */
  output(sql: string, type: FieldValueType | undefined): string;
  /** What a field is ordered by: its column (indexable) or its value as expressions see it. */
  sortKey(column: string, value: string, type: FieldValueType | undefined): string;
  /** The geometry column as the reader decodes it. */
  geometryOutput(column: string): string;
  /** The function trimming both sides. */
  readonly trimBoth: string;
  extract(c: Clauses, unit: ExtractUnit, operand: string): string;
  like(c: Clauses, e: Extract<Expr, { kind: "like" }>): string;
  cast(c: Clauses, e: Extract<Expr, { kind: "cast" }>): string;
  call(c: Clauses, e: Extract<Expr, { kind: "call" }>): string;
  statistic(c: Clauses, name: StatisticFunction, value: string, stat: Statistic | undefined): string;
  /** The key among a list of object ids (bound as one parameter, however long). */
  idsIn(c: Clauses, column: string, ids: readonly number[]): string;
  /** Every id in one text, joined in `order` (`1,2,3`; NULL for none). */
  joinIds(c: Clauses, id: string, order: string): string;
  /** The conditions of a spatial filter. */
  spatial(c: Clauses, s: SpatialClause): string[];
  /**
   * What follows the queried table's name to keep the database from an attribute index when the spatial index is
   * chosen first (SQLite's NOT INDEXED; rowid lookups stay allowed); undefined where the database chooses alone.
   */
  readonly spatialFirst: string | undefined;
  /**
   * A count of the features whose envelope meets the query's axis-aligned rectangle, from the spatial index alone
   * for those lying wholly inside it (no row read) and by the exact test for those crossing its edge; absent where
   * the dialect has no such form (the database counts as it plans). `where`: a condition on the columns of the
   * attribute index the rows come from (access.ts), its values bound once and read by both parts.
   */
  windowCount?(s: SpatialClause, where: string | undefined): string;
  extent(geometry: string, index: string | undefined, oidColumn: string): ExtentForm;
  /** The condition a statement examining rows starts with (SQLite's deadline); undefined when none. */
  readonly rowGuard: string | undefined;
  /** A date (epoch ms) as the driver binds it for a date column (GeoPackage's ISO 8601 text, a timestamptz). */
  dateValue(ms: number): unknown;
  /** A geometry (in the column's system, of its declared type) as the driver binds it for the statement. */
  geometryValue(geometry: Geometry, srid: number): unknown;
  /** The geometry a statement writes from its bound value, and its system (bound when the dialect asks for it). */
  geometryInput(value: string, srid: () => string): string;
  /**
   * A table's key column numbered by the database and never given again once taken (a deleted row's id stays its
   * own): the column's definition in a CREATE TABLE.
   */
  identityKey(column: string): string;
}
