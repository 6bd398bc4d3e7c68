// The functions the SQLite SQL of sql/sqlite.ts calls as mapgate_<name>: those SQLite lacks (sample deviation and
// variance, percentiles, EXTRACT, a case-sensitive LIKE) and those it has with semantics of its own (lower/upper
// only for ASCII, round only to whole digits after the point, substr counting from the end for a negative
// start, abs failing on the smallest integer), written to answer as PostgreSQL does. The GeoPackage reader
// registers them on each connection (counting the text each call is handed):
//   for (const f of SQLITE_FUNCTIONS) db.function(f.name, { deterministic: true, varargs: f.varargs }, f.fn);
//   for (const a of SQLITE_AGGREGATES) db.aggregate(a.name, { ...a.options });
// mapgate_spatial is not here: it depends on each query's geometry, so the reader registers it per query.
import { ARGUMENT_FAULTS } from "#shared/features/errors.ts";
import { MAX_ROUND_PLACES } from "#shared/features/sql/emitter.ts";
import { EXTRACT_CODES } from "#shared/features/sql/sqlite.ts";
import { powerFault, type ScalarFunction, sqlInteger } from "#shared/features/where.ts";

/**
 * A function of the query given a value it cannot take (SUBSTRING with a negative length, POWER past a double):
 * a fault of the request, raised where PostgreSQL raises its data exception for the same value and worded as the
 * PostgreSQL reader words that (ARGUMENT_FAULTS), so the reader answers it as the request's parameter's fault.
 */
export class ExpressionError extends Error {
  readonly fn: ScalarFunction | "like";

  constructor(fn: ScalarFunction | "like", fault: string) {
    super(`${fault}.`);
    this.name = "ExpressionError";
    this.fn = fn;
  }
}

type SqlValue = number | bigint | string | Uint8Array | null;
type Scalar = (...args: SqlValue[]) => SqlValue;

const num = (v: SqlValue): number | null =>
  v === null ? null : typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : Number(v);
const str = (v: SqlValue): string | null =>
  v === null ? null : typeof v === "string" ? v : v instanceof Uint8Array ? Buffer.from(v).toString("utf8") : String(v);
// NaN and infinities are no SQL value: NULL, as PostgreSQL's guarded forms answer.
const finite = (v: number): number | null => (Number.isFinite(v) ? v : null);

function unary(fn: (x: number) => number): Scalar {
  return (a) => {
    const x = num(a);
    return x === null ? null : finite(fn(x));
  };
}

/** Decimal rounding of x to `places` places (negative: tens, hundreds…), half away from zero, as numeric does. */
export function roundDecimal(x: number, places: number, truncate = false): number {
  if (!Number.isFinite(x)) return x;
  // Fifteen significant digits: the decimal PostgreSQL's float-to-numeric cast sees.
  const [mantissa = "0", exp = "0"] = Math.abs(x).toExponential(14).split("e");
  // Past the fifteenth significant digit there is nothing left to round (and 10^places would overflow).
  const digits = Math.min(Math.max(places, -MAX_ROUND_PLACES), MAX_ROUND_PLACES, 14 - Number(exp));
  const shifted = Number(`${mantissa}e${Number(exp) + digits}`);
  const whole = truncate ? Math.floor(shifted) : Math.floor(shifted + 0.5);
  const [m2 = "0", e2 = "0"] = whole.toExponential().split("e");
  const back = Number(`${m2}e${Number(e2) - digits}`);
  return x < 0 ? -back : back;
}

const MONTH_ETC: Record<number, (d: Date) => number> = {
  [EXTRACT_CODES.year]: (d) => d.getUTCFullYear(),
  [EXTRACT_CODES.month]: (d) => d.getUTCMonth() + 1,
  [EXTRACT_CODES.day]: (d) => d.getUTCDate(),
  [EXTRACT_CODES.hour]: (d) => d.getUTCHours(),
  [EXTRACT_CODES.minute]: (d) => d.getUTCMinutes(),
  [EXTRACT_CODES.second]: (d) => d.getUTCSeconds() + d.getUTCMilliseconds() / 1000,
};

type LikeItem =
  | { readonly kind: "any" }
  | { readonly kind: "one" }
  | { readonly kind: "char"; readonly char: string }
  /** The pattern's last character is its escape character, escaping nothing. */
  | { readonly kind: "dangling" };

function likeItems(pattern: string, escape: string | null): LikeItem[] {
  const items: LikeItem[] = [];
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (escape !== null && c === escape) {
      const next = chars[++i];
      if (next === undefined) {
        items.push({ kind: "dangling" });
        break;
      }
      items.push({ kind: "char", char: next });
    } else if (c === "%") {
      if (items.at(-1)?.kind !== "any") items.push({ kind: "any" });
    } else if (c === "_") items.push({ kind: "one" });
    else items.push({ kind: "char", char: c });
  }
  return items;
}

// The last pattern read: a statement calls LIKE once per row with the same pattern, which is read once, not
// once per row (a pattern may be as long as the where text).
let lastLike: { pattern: string; escape: string | null; items: LikeItem[] } | undefined;

/**
 * SQL LIKE, case-sensitive, by characters (code points). Greedy with a return to the last `%` only, so a
 * hostile pattern costs at most len(value) × len(pattern) steps, never the exponential time of a regex.
 * A pattern ending in its escape character fails (ExpressionError) where PostgreSQL's matcher fails: when the
 * match reaches that character with text left to match; before that, or with no text left, it is no match.
 */
export function likeMatch(value: string, pattern: string, escape: string | null = null): boolean {
  if (lastLike?.pattern !== pattern || lastLike.escape !== escape)
    lastLike = { pattern, escape, items: likeItems(pattern, escape) };
  const items = lastLike.items;
  const text = Array.from(value);
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const item = items[p];
    if (item?.kind === "dangling") throw new ExpressionError("like", ARGUMENT_FAULTS.likeEscape);
    if (item !== undefined && (item.kind === "one" || (item.kind === "char" && item.char === text[t]))) {
      t++;
      p++;
    } else if (item?.kind === "any") {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else return false;
  }
  while (items[p]?.kind === "any") p++;
  return p === items.length;
}

export interface SqliteFunction {
  readonly name: string;
  readonly fn: Scalar;
  readonly varargs: boolean;
}

export const SQLITE_FUNCTIONS: readonly SqliteFunction[] = [
  {
    name: "mapgate_like",
    varargs: true,
    fn: (value, pattern, escape = null) => {
      const v = str(value);
      const p = str(pattern);
      if (v === null || p === null) return null;
      return likeMatch(v, p, str(escape)) ? 1 : 0;
    },
  },
  {
    name: "mapgate_extract",
    varargs: false,
    fn: (code, ms) => {
      const x = num(ms);
      const part = MONTH_ETC[num(code) ?? 0];
      if (x === null || part === undefined) return null;
      const d = new Date(x);
      return Number.isNaN(d.getTime()) ? null : part(d);
    },
  },
  { name: "mapgate_abs", varargs: false, fn: unary(Math.abs) },
  { name: "mapgate_ceiling", varargs: false, fn: unary(Math.ceil) },
  { name: "mapgate_floor", varargs: false, fn: unary(Math.floor) },
  { name: "mapgate_ln", varargs: false, fn: unary((x) => (x > 0 ? Math.log(x) : NaN)) },
  { name: "mapgate_log10", varargs: false, fn: unary((x) => (x > 0 ? Math.log10(x) : NaN)) },
  {
    name: "mapgate_power",
    varargs: false,
    // Refuses what PostgreSQL's power() refuses (a result past a double, no real result), in its words.
    fn: (a, b) => {
      const x = num(a);
      const y = num(b);
      if (x === null || y === null) return null;
      const fault = powerFault(x, y);
      if (fault !== undefined) throw new ExpressionError("power", fault);
      return x ** y;
    },
  },
  {
    name: "mapgate_round",
    varargs: false,
    fn: (a, n) => {
      const x = num(a);
      const d = num(n);
      return x === null || d === null ? null : roundDecimal(x, Math.round(d));
    },
  },
  {
    name: "mapgate_truncate",
    varargs: false,
    fn: (a, n) => {
      const x = num(a);
      const d = num(n);
      return x === null || d === null ? null : roundDecimal(x, Math.round(d), true);
    },
  },
  {
    name: "mapgate_mod",
    varargs: false,
    // The sign follows the dividend, as PostgreSQL's mod; by zero: NULL.
    fn: (a, b) => {
      const x = num(a);
      const y = num(b);
      return x === null || y === null || y === 0 ? null : finite(x % y);
    },
  },
  { name: "mapgate_lower", varargs: false, fn: (a) => str(a)?.toLowerCase() ?? null },
  { name: "mapgate_upper", varargs: false, fn: (a) => str(a)?.toUpperCase() ?? null },
  {
    name: "mapgate_substring",
    varargs: true,
    // SQL's SUBSTRING(x FROM a FOR b): the characters at positions a … a+b-1 that exist (positions from 1). As
    // PostgreSQL: a and b are cast to integer first (half to even, refused past 32 bits, whatever x is), then a
    // negative b is refused unless an argument is NULL.
    fn: (value, from, count = null) => {
      const v = str(value);
      const [a, b] = [num(from), num(count)].map((n) => {
        if (n === null) return null;
        const i = sqlInteger(n);
        if (i === undefined) throw new ExpressionError("substring", ARGUMENT_FAULTS.range);
        return i;
      });
      if (v === null || a === null || a === undefined) return null;
      const length = count === null ? Infinity : b;
      if (length === null || length === undefined) return null;
      if (length < 0) throw new ExpressionError("substring", ARGUMENT_FAULTS.substringLength);
      const chars = Array.from(v);
      return chars.slice(Math.max(a, 1) - 1, Math.max(a + length - 1, 0)).join("");
    },
  },
];

interface Aggregate {
  readonly name: string;
  readonly options: {
    readonly start: () => unknown;
    readonly step: (acc: never, ...args: SqlValue[]) => unknown;
    readonly result: (acc: never) => SqlValue;
    readonly deterministic: boolean;
    readonly varargs?: boolean;
  };
}

interface Moments {
  n: number;
  mean: number;
  m2: number;
}

// Welford's running variance: one pass, no catastrophic cancellation.
const moments = (sample: (m: Moments) => number | null): Aggregate["options"] => ({
  start: (): Moments => ({ n: 0, mean: 0, m2: 0 }),
  step: (acc: Moments, v: SqlValue) => {
    const x = num(v);
    if (x === null) return acc;
    acc.n++;
    const delta = x - acc.mean;
    acc.mean += delta / acc.n;
    acc.m2 += delta * (x - acc.mean);
    return acc;
  },
  result: (acc: Moments) => sample(acc),
  deterministic: true,
});

interface Collected {
  values: number[];
  p: number;
  desc: boolean;
}

const percentile = (pick: (sorted: number[], p: number) => number): Aggregate["options"] => ({
  start: (): Collected => ({ values: [], p: 0.5, desc: false }),
  step: (acc: Collected, v: SqlValue, p: SqlValue, desc: SqlValue) => {
    acc.p = num(p) ?? 0.5;
    acc.desc = num(desc) === 1;
    const x = num(v);
    if (x !== null) acc.values.push(x);
    return acc;
  },
  result: (acc: Collected) => {
    if (acc.values.length === 0) return null;
    const sorted = acc.values.sort((a, b) => (acc.desc ? b - a : a - b));
    return pick(sorted, acc.p);
  },
  deterministic: true,
});

type Box = { xmin: number; ymin: number; xmax: number; ymax: number };

const extent = (corner: keyof Box): Aggregate["options"] => ({
  start: () => null,
  step: (acc: Box | null, g: SqlValue) => {
    const b = boundsOf(g);
    if (b === undefined) return acc;
    if (acc === null) return { ...b };
    acc.xmin = Math.min(acc.xmin, b.xmin);
    acc.ymin = Math.min(acc.ymin, b.ymin);
    acc.xmax = Math.max(acc.xmax, b.xmax);
    acc.ymax = Math.max(acc.ymax, b.ymax);
    return acc;
  },
  result: (acc: Box | null) => acc?.[corner] ?? null,
  deterministic: true,
});

export const SQLITE_AGGREGATES: readonly Aggregate[] = [
  { name: "mapgate_stddev", options: moments((m) => (m.n < 2 ? null : Math.sqrt(m.m2 / (m.n - 1)))) },
  { name: "mapgate_var", options: moments((m) => (m.n < 2 ? null : m.m2 / (m.n - 1))) },
  {
    name: "mapgate_percentile_cont",
    options: percentile((s, p) => {
      const pos = p * (s.length - 1);
      const lo = Math.floor(pos);
      const a = s[lo] as number;
      const b = s[Math.min(lo + 1, s.length - 1)] as number;
      return a + (pos - lo) * (b - a);
    }),
  },
  {
    name: "mapgate_percentile_disc",
    // The first value whose cumulative share reaches p.
    options: percentile((s, p) => s[Math.max(Math.ceil(p * s.length) - 1, 0)] as number),
  },
  ...(["xmin", "ymin", "xmax", "ymax"] as const).map((c): Aggregate => ({ name: `mapgate_${c}`, options: extent(c) })),
];

const MAX_WKB_DEPTH = 32;

/**
 * The bounds of a GeoPackage geometry blob: its header's envelope when it carries one, else the extremes of
 * its WKB coordinates. Undefined for NULL, an empty geometry or a blob that is no GeoPackage geometry.
 */
export function boundsOf(g: SqlValue): Box | undefined {
  if (!(g instanceof Uint8Array) || g.length < 8 || g[0] !== 0x47 || g[1] !== 0x50) return undefined;
  const view = new DataView(g.buffer, g.byteOffset, g.byteLength);
  const flags = g[3] as number;
  if (flags & 0x10) return undefined;
  const little = (flags & 1) === 1;
  const envelope = (flags >> 1) & 7;
  const envelopeBytes = [0, 32, 48, 48, 64][envelope];
  if (envelopeBytes === undefined) return undefined;
  if (envelope !== 0 && g.length >= 8 + envelopeBytes) {
    const at = (i: number) => view.getFloat64(8 + i * 8, little);
    // The header's envelope is minx, maxx, miny, maxy.
    return { xmin: at(0), xmax: at(1), ymin: at(2), ymax: at(3) };
  }
  const box: Box = { xmin: Infinity, ymin: Infinity, xmax: -Infinity, ymax: -Infinity };
  try {
    scanWkb(view, 8 + envelopeBytes, box, 0);
  } catch {
    return undefined;
  }
  return box.xmin <= box.xmax ? box : undefined;
}

// Returns the offset just past the geometry at `offset`; coordinates grow `box` (NaN ones, for empty points, do not).
function scanWkb(view: DataView, offset: number, box: Box, depth: number): number {
  if (depth > MAX_WKB_DEPTH) throw new Error("WKB nests too deep");
  const little = view.getUint8(offset) === 1;
  let type = view.getUint32(offset + 1, little);
  let o = offset + 5;
  // EWKB flags, then ISO's thousands.
  let dims = 2 + (type & 0x80000000 ? 1 : 0) + (type & 0x40000000 ? 1 : 0);
  if (type & 0x20000000) o += 4;
  type &= 0x0fffffff;
  const iso = Math.floor(type / 1000);
  if (iso > 0) dims = iso === 3 ? 4 : 3;
  type %= 1000;
  const point = () => {
    const x = view.getFloat64(o, little);
    const y = view.getFloat64(o + 8, little);
    o += dims * 8;
    if (Number.isNaN(x) || Number.isNaN(y)) return;
    box.xmin = Math.min(box.xmin, x);
    box.xmax = Math.max(box.xmax, x);
    box.ymin = Math.min(box.ymin, y);
    box.ymax = Math.max(box.ymax, y);
  };
  const count = () => {
    const n = view.getUint32(o, little);
    o += 4;
    return n;
  };
  switch (type) {
    case 1:
      point();
      return o;
    case 2:
    case 8: {
      for (let i = count(); i > 0; i--) point();
      return o;
    }
    case 3: {
      for (let r = count(); r > 0; r--) for (let i = count(); i > 0; i--) point();
      return o;
    }
    case 4:
    case 5:
    case 6:
    case 7: {
      for (let i = count(); i > 0; i--) o = scanWkb(view, o, box, depth + 1);
      return o;
    }
    default:
      throw new Error(`unsupported WKB type ${type}`);
  }
}
