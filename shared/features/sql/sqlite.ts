// SQLite's SQL, as the GeoPackage reader runs it through node:sqlite: placeholders `?n`, integers bound as
// BigInt (node:sqlite binds every JS number as a REAL), GeoPackage's ISO 8601 dates read with julianday(), and
// the functions SQLite lacks, or has with other semantics, called as mapgate_<name> (sqlite-functions.ts). The
// exact spatial test runs in JavaScript on the blob (mapgate_spatial, which the reader registers per query),
// after the R*Tree narrows; every statement examining rows calls the reader's deadline on each row.
import {
  type CastType,
  type Clauses,
  MS_PER_DAY,
  qualified,
  quoteIdentifier,
  type SqlEmitter,
} from "#shared/features/sql/emitter.ts";
import type { Expr, ExtractUnit } from "#shared/features/where.ts";
import { encodeGeometry } from "#shared/features/geometry/wkb-write.ts";

/**
 * The function every SQLite statement with work per row calls (the assembler's row guard): the reader registers
 * it, non-deterministic, to abort the statement past its deadline.
 */
export const SQLITE_DEADLINE = "mapgate_deadline";

/** EXTRACT's unit as mapgate_extract takes it (a number, so the SQL holds no string literal). */
export const EXTRACT_CODES: Readonly<Record<ExtractUnit, number>> = {
  year: 1,
  month: 2,
  day: 3,
  hour: 4,
  minute: 5,
  second: 6,
};

/** The longest pattern SQLite's own LIKE accepts, in bytes (SQLITE_MAX_LIKE_PATTERN_LENGTH): longer ones fail. */
const SQLITE_LIKE_PATTERN_BYTES = 50_000;

const CAST_TYPES: Readonly<Record<CastType, string>> = { integer: "INTEGER", double: "REAL", text: "TEXT" };

/** A date text (or julianday's input) as epoch milliseconds. */
const epochMs = (sql: string) => `CAST(ROUND((julianday(${sql}) - 2440587.5) * ${MS_PER_DAY}) AS INTEGER)`;

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

function call(c: Clauses, e: Extract<Expr, { kind: "call" }>): string {
  const num = (i: number) => c.typed(e.args[i] as Expr, "number");
  const str = (i: number) => c.typed(e.args[i] as Expr, "string");
  switch (e.name) {
    case "abs": // SQLite's abs() fails on the smallest 64-bit integer (what CAST(-1e300 AS INTEGER) saturates to).
    case "ceiling":
    case "floor":
    case "mod":
    case "power":
      return `mapgate_${e.name}(${e.args.map((_, i) => num(i)).join(", ")})`;
    case "log":
    case "log10":
      return `mapgate_${e.name === "log" ? "ln" : "log10"}(${num(0)})`;
    case "round":
    case "truncate": {
      const digits = e.args.length > 1 ? num(1) : c.number(0);
      return `mapgate_${e.name}(${num(0)}, ${digits})`;
    }
    case "char_length":
      return `length(${str(0)})`;
    case "concat":
      return `concat(${e.args.map((_, i) => str(i)).join(", ")})`;
    case "lower":
    case "upper":
      return `mapgate_${e.name}(${str(0)})`;
    case "substring":
      return `mapgate_substring(${e.args.map((_, i) => (i === 0 ? str(0) : num(i))).join(", ")})`;
    case "position":
      return `instr(${str(1)}, ${str(0)})`;
    case "coalesce":
    case "nullif":
      return `${e.name}(${e.args.map((a) => c.expr(a)).join(", ")})`;
  }
}

/** An R*Tree entry's box meets the window (xmin, ymin, xmax, ymax placeholders); `at` qualifies its columns. */
const meets = (at: string, [x0, y0, x1, y1]: readonly [string, string, string, string]) =>
  `${at}minx <= ${x1} AND ${at}maxx >= ${x0} AND ${at}miny <= ${y1} AND ${at}maxy >= ${y0}`;
/**
 * The exact test inside an R*Tree probe (`x`), for an entry found: a term naming only the outer row would be tested
 * before the probe. With `inside`, an entry inside the window is taken without it.
 */
const probedTest = (tested: string, inside?: string) =>
  `(CASE WHEN ${inside ?? "x.id IS NULL"} THEN ${inside ? 1 : 0} ELSE ${tested} END)`;

/** The exact test of a row, in JavaScript on its blob, against the filter the reader registered for the query. */
const exactTest = (s: { geometryColumn: string }) => `mapgate_spatial(${qualified(s.geometryColumn)}) = 1`;

/** An R*Tree entry inside a rectangle, edges included. */
const insideBox = (at: string, [x0, y0, x1, y1]: readonly [string, string, string, string]) =>
  `${at}minx >= ${x0} AND ${at}maxx <= ${x1} AND ${at}miny >= ${y0} AND ${at}maxy <= ${y1}`;

export const sqliteEmitter: SqlEmitter = {
  dialect: "sqlite",
  testsSpatialInSql: false,
  placeholder: (n) => `?${n}`,
  // GeoPackage's DATETIME: ISO 8601 text in UTC, as the writer keeps dates.
  dateValue: (ms) => new Date(ms).toISOString(),
  // AUTOINCREMENT: SQLite's INTEGER PRIMARY KEY alone gives the highest id again once its row is deleted.
  identityKey: (column) => `${quoteIdentifier(column)} INTEGER PRIMARY KEY AUTOINCREMENT`,
  // A GeoPackage geometry blob (its header names the system): the R*Tree triggers index it as they index GDAL's.
  geometryValue: (geometry, srid) => encodeGeometry(geometry, srid).bytes,
  geometryInput: (value) => value,
  // node:sqlite binds every JS number as a REAL; an integer bound as such keeps integer arithmetic and text.
  parameter: (value, type) => (type === "bigint" && typeof value === "number" ? BigInt(value) : value),
  typeName: (type) => CAST_TYPES[type],
  // SQLite's functions take an untyped NULL.
  typedNull: () => undefined,
  epochMs,
  fieldEpochMs: epochMs,
  numeric: (sql) => sql,
  output: (sql) => sql,
  // A date column's text may mix formats: ordered by its value, not its text.
  sortKey: (column, value, type) => (type === "date" ? value : column),
  geometryOutput: (column) => column,
  trimBoth: "trim",
  extract: (_c, unit, x) => `mapgate_extract(${EXTRACT_CODES[unit]}, ${x})`,
  like(c, e) {
    const x = c.typed(e.operand, "string");
    const not = e.negated ? "NOT " : "";
    // SQLite's LIKE ignores ASCII case, so it only narrows, and mapgate_like decides (case-sensitive, as
    // PostgreSQL's). A literal pattern is bound with its runs of % made one (the same pattern): the pattern
    // travels to mapgate_like with every row it is tested on.
    const p = e.pattern.kind === "string" ? c.text(collapsePercents(e.pattern.value, e.escape)) : c.expr(e.pattern);
    const escape = e.escape === undefined ? undefined : c.text(e.escape);
    const decide = `mapgate_like(${x}, ${p}, ${escape ?? "NULL"})`;
    // SQLite's own LIKE (in C, cheaper) narrows first, but fails on a pattern over its length limit: it narrows
    // only by a literal pattern, whose length is known here; a computed one (UPPER can triple a text) is left to
    // mapgate_like alone.
    if (e.pattern.kind !== "string" || Buffer.byteLength(e.pattern.value) > SQLITE_LIKE_PATTERN_BYTES)
      return `(${not}${decide})`;
    // The parameters are referenced twice by number: bound once, read twice.
    const narrow = `${x} LIKE ${p}${escape === undefined ? "" : ` ESCAPE ${escape}`}`;
    return `(${not}(${narrow} AND ${decide}))`;
  },
  cast(c, e) {
    const from = e.operand.type;
    if (from === "null")
      return `CAST(NULL AS ${e.target === "varchar" ? "text" : e.target === "integer" ? "INTEGER" : "REAL"})`;
    const x = c.expr(e.operand);
    switch (e.target) {
      case "integer": // Truncated toward zero, as PostgreSQL is told to.
        return `CAST(${x} AS INTEGER)`;
      case "float":
        return `CAST(${x} AS REAL)`;
      case "varchar":
        return `substr(CAST(${x} AS TEXT), 1, ${c.number(e.length ?? 1)})`;
      case "date":
        return from === "string" ? epochMs(`date(${x})`) : `(mapgate_floor(${x} / ${MS_PER_DAY}.0) * ${MS_PER_DAY})`;
      case "timestamp":
        return from === "string" ? epochMs(x) : x;
    }
  },
  call,
  statistic(c, name, x, stat) {
    if (name === "stddev" || name === "var") return `mapgate_${name}(${x})`;
    const p = c.bind(stat?.percentile ?? 0.5, "double");
    return `mapgate_${name}(${x}, ${p}, ${stat?.descending ? 1 : 0})`;
  },
  // One parameter for the whole list, however long.
  idsIn: (c, column, ids) => `${column} IN (SELECT value FROM json_each(${c.bind(JSON.stringify(ids))}))`,
  // SQLite's separator is a comma by default.
  joinIds: (_c, id, order) => `group_concat(${id} ORDER BY ${order})`,
  spatial(_c, s) {
    const tested = exactTest(s);
    if (s.index === undefined) return [tested];
    // The R*Tree narrows (its float32 boxes are rounded outwards, so nothing is lost); its id is the key. Rows an
    // attribute index yields probe it by their id (one entry each); otherwise the window's ids are read first.
    // Probed, the exact test is made in the probe, on an entry found (probedTest): SQLite tests a row's own terms
    // before its subqueries, so beside the probe it ran on every row the walk yielded, in the window or not. In a
    // window, an entry inside it is a feature that meets it (its true envelope lies inside the stored one, and an
    // entry is a non-empty geometry): only the entries on its edge are tested, as a window's count does. A list of
    // the window's ids has no entry at hand; a second list, of the ids inside, was measured: built whole, it cost a
    // world tile's statement more than the exact tests it saved.
    const rtree = quoteIdentifier(s.index);
    const id = qualified(s.oidColumn);
    const exact = s.filter.relation !== "envelopeIntersects";
    if (s.probe) {
      const test = !exact ? "" : ` AND ${probedTest(tested, s.window ? insideBox("x.", s.box) : undefined)}`;
      return [`EXISTS (SELECT 1 FROM ${rtree} AS x WHERE x.id = ${id} AND ${meets("x.", s.box)}${test})`];
    }
    const window = `${id} IN (SELECT id FROM ${rtree} WHERE ${meets("", s.box)})`;
    return exact ? [window, tested] : [window];
  },
  // NOT INDEXED keeps SQLite from walking an attribute index when the window is the smaller read (it cannot tell);
  // the key's rowid lookups stay allowed.
  spatialFirst: " NOT INDEXED",
  windowCount(s, where) {
    if (s.index === undefined) throw new Error("a count from the spatial index needs one");
    // A non-empty geometry whose envelope lies inside the rectangle meets it: such entries are counted in the R*Tree
    // alone (its boxes are rounded outwards, so a stored box inside means the true one is). Only the rows whose box
    // crosses the rectangle's edge are read and tested. With a where on an index's columns, its entries are walked
    // and each probed in the R*Tree by id: the table's rows are read only for the edge's exact test.
    const rtree = quoteIdentifier(s.index);
    const inside = (at: string) => insideBox(at, s.box);
    const guard = `${SQLITE_DEADLINE}() = 1`;
    const id = qualified(s.oidColumn);
    const tested = exactTest(s);
    if (where === undefined) {
      const edge = `SELECT id FROM ${rtree} WHERE ${meets("", s.box)} AND NOT (${inside("")})`;
      const crossing = `SELECT count(*) FROM ${s.table} AS t WHERE ${guard} AND ${id} IN (${edge}) AND ${tested}`;
      return `(SELECT count(*) FROM ${rtree} WHERE ${inside("")}) + (${crossing})`;
    }
    const probe = (test: string) => `EXISTS (SELECT 1 FROM ${rtree} AS x WHERE x.id = ${id} AND ${test})`;
    const within = `SELECT count(*) FROM ${s.table} AS t WHERE ${guard} AND ${where} AND ${probe(inside("x."))}`;
    const crossing =
      `SELECT count(*) FROM ${s.table} AS t WHERE ${guard} AND ${where} ` +
      `AND ${probe(`${meets("x.", s.box)} AND NOT (${inside("x.")}) AND ${probedTest(tested)}`)}`;
    return `(${within}) + (${crossing})`;
  },
  extent(geometry, index, oidColumn) {
    if (index === undefined) {
      const corner = (c: string) => `mapgate_${c}(${geometry})`;
      return { corners: { xmin: corner("xmin"), ymin: corner("ymin"), xmax: corner("xmax"), ymax: corner("ymax") } };
    }
    return {
      corners: { xmin: "MIN(r.minx)", ymin: "MIN(r.miny)", xmax: "MAX(r.maxx)", ymax: "MAX(r.maxy)" },
      join: ` LEFT JOIN ${quoteIdentifier(index)} AS r ON r.id = ${oidColumn}`,
    };
  },
  // SQLite runs on the function's thread: a statement that filters or sorts calls the reader's deadline on each
  // row it examines, so a costly one ends at its deadline instead of holding the function.
  rowGuard: `${SQLITE_DEADLINE}() = 1`,
};
