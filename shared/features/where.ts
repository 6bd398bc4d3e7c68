// The `where` (and `having`) parameter of a feature layer query: ArcGIS's standardized-query SQL subset, parsed
// into a typed expression tree with every field name resolved against the layer. Whoever sends the request
// chooses the text, so the parser is one hand-written pass over tokens (no backtracking: time linear in the
// input), with a length cap checked before anything else and a nesting cap checked before each descent, so a
// hostile input is refused quickly and never overflows the stack. The tree holds values, never SQL: the
// emitters bind every literal as a parameter. The tree and its walks are where-tree.ts, the tokens
// where-tokens.ts; here are the grammar's rules, each a function over one small state (Parser).
import { ARGUMENT_FAULTS, invalidParameter } from "#shared/features/errors.ts";
import { fieldByName, fieldValueType, type LayerSchema } from "#shared/features/schema.ts";
import { describeToken, excerpt, isOp, isWord, type Token, tokenize } from "#shared/features/where-tokens.ts";
import type {
  AggregateName,
  ArithmeticOp,
  CastTarget,
  CompareOp,
  Expr,
  ExtractUnit,
  ScalarFunction,
  ValueType,
} from "#shared/features/where-tree.ts";

// The readers and emitters name the subset's tree and walks through this module, as they did before the tree
// and the tokenizer had modules of their own.
export type * from "#shared/features/where-tree.ts";
export { holdsForEveryRow, nodes } from "#shared/features/where-tree.ts";
export { excerpt } from "#shared/features/where-tokens.ts";

/** The longest `where` accepted, in UTF-16 code units: far above what clients build, far below a DoS. */
export const MAX_WHERE_LENGTH = 16_384;
/**
 * The deepest nesting accepted (parentheses, NOT, unary minus and function calls each count one level, and so
 * does each operator of an arithmetic chain, which SQL nests as a left-deep tree). Keeps the parser's recursion,
 * every later walk of the tree and the emitted SQL shallow (SQLite refuses expressions over 1000 levels deep);
 * real filters nest a handful of levels.
 */
export const MAX_WHERE_DEPTH = 64;
/** CAST(x AS VARCHAR(n)): the largest n. */
export const MAX_VARCHAR_LENGTH = 1_000_000;

export interface WhereOptions {
  /** The parameter named in errors. */
  readonly parameter?: "where" | "having";
  /** Accept aggregate functions (COUNT, SUM, …) of fields, as `having` does. */
  readonly aggregates?: boolean;
  /** The instant CURRENT_DATE and CURRENT_TIMESTAMP name (epoch ms); the clock when absent. */
  readonly now?: number;
}

/** POWER(x, y)'s fault as PostgreSQL's power(double precision, double precision) raises it; undefined when none. */
export function powerFault(x: number, y: number): string | undefined {
  if (x === 0 && y < 0) return ARGUMENT_FAULTS.power;
  if (x < 0 && !Number.isInteger(y)) return ARGUMENT_FAULTS.power;
  const r = x ** y;
  // PostgreSQL refuses an infinite result and one that underflows to zero (from a base that is not zero).
  if (!Number.isFinite(r) || (r === 0 && x !== 0)) return ARGUMENT_FAULTS.range;
  return undefined;
}

/**
 * A number as PostgreSQL casts it to `integer` (what SUBSTRING's positions are): rounded half to even, as C's
 * rint(); undefined when that is past 32 bits (PostgreSQL raises "integer out of range").
 */
export function sqlInteger(x: number): number | undefined {
  let r = Math.round(x);
  // Math.round takes halves up; rint takes them to the even neighbour.
  if (r - x === 0.5 && r % 2 !== 0) r -= 1;
  return r >= -2_147_483_648 && r < 2_147_483_648 ? r : undefined;
}

/** Whether a LIKE pattern ends with an escape character that escapes nothing. */
export function endsWithEscape(pattern: string, escape: string): boolean {
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) if (chars[i] === escape && ++i === chars.length) return true;
  return false;
}

/**
 * Parses a date or timestamp as the standardized queries write it (`yyyy-mm-dd`, `yyyy-mm-dd hh:mm[:ss[.fff]]`,
 * a `T` allowed for the space) into epoch milliseconds, UTC; undefined when the text is no such date.
 */
export function parseDateText(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?Z?)?$/.exec(text.trim());
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) => Number(v ?? "0")) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = Math.floor(Number(`0.${m[7] ?? "0"}`) * 1000);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  const value = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  // Date.UTC rolls 31 February into March: a date that does not read back as written does not exist.
  if (new Date(value).getUTCDate() !== d) return undefined;
  return value;
}

// Words the grammar gives a meaning wherever they stand: a field with one of these names must be quoted.
const RESERVED = new Set(["AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "ESCAPE", "IS", "NULL", "SELECT"]);

const SCALARS = new Map<string, { name: ScalarFunction; min: number; max: number }>([
  ["ABS", { name: "abs", min: 1, max: 1 }],
  ["CEILING", { name: "ceiling", min: 1, max: 1 }],
  ["CEIL", { name: "ceiling", min: 1, max: 1 }],
  ["FLOOR", { name: "floor", min: 1, max: 1 }],
  ["LOG", { name: "log", min: 1, max: 1 }],
  ["LOG10", { name: "log10", min: 1, max: 1 }],
  ["POWER", { name: "power", min: 2, max: 2 }],
  ["ROUND", { name: "round", min: 1, max: 2 }],
  ["TRUNCATE", { name: "truncate", min: 1, max: 2 }],
  ["MOD", { name: "mod", min: 2, max: 2 }],
  ["CHAR_LENGTH", { name: "char_length", min: 1, max: 1 }],
  ["CHARACTER_LENGTH", { name: "char_length", min: 1, max: 1 }],
  ["CONCAT", { name: "concat", min: 2, max: 64 }],
  ["LOWER", { name: "lower", min: 1, max: 1 }],
  ["UPPER", { name: "upper", min: 1, max: 1 }],
  ["COALESCE", { name: "coalesce", min: 1, max: 64 }],
  ["NULLIF", { name: "nullif", min: 2, max: 2 }],
]);

const AGGREGATES = new Map<string, AggregateName>([
  ["COUNT", "count"],
  ["SUM", "sum"],
  ["MIN", "min"],
  ["MAX", "max"],
  ["AVG", "avg"],
  ["STDDEV", "stddev"],
  ["VAR", "var"],
]);

const EXTRACT_UNITS = new Map<string, ExtractUnit>([
  ["YEAR", "year"],
  ["MONTH", "month"],
  ["DAY", "day"],
  ["HOUR", "hour"],
  ["MINUTE", "minute"],
  ["SECOND", "second"],
]);

/** Everything the parser knows: what it was given, where it stands in the tokens and how deep it has descended. */
interface Parser {
  readonly tokens: readonly Token[];
  readonly schema: LayerSchema;
  readonly parameter: "where" | "having";
  readonly aggregates: boolean;
  /** What CURRENT_DATE and CURRENT_TIMESTAMP name (epoch ms). */
  readonly now: number;
  /** The index of the next token; only ever moves forward (no backtracking). */
  pos: number;
  /** The levels of nesting entered and not yet left. */
  depth: number;
}

/**
 * Parses a where (or, with `aggregates`, a having) text against a layer. A blank text means no filter
 * (undefined). Throws the ArcGIS 400 envelope, with the reason and its position, for anything else it cannot
 * run: syntax, unknown fields or functions, type errors, and texts over the length or nesting caps.
 */
export function parseWhere(input: string, schema: LayerSchema, options: WhereOptions = {}): Expr | undefined {
  const parameter = options.parameter ?? "where";
  if (input.length > MAX_WHERE_LENGTH)
    throw invalidParameter(parameter, `The text is longer than ${MAX_WHERE_LENGTH} characters.`);
  if (input.trim() === "") return undefined;
  const tokens = tokenize(input, (_pos, reason) => {
    throw invalidParameter(parameter, reason);
  });
  const p: Parser = {
    tokens,
    schema,
    parameter,
    aggregates: options.aggregates ?? false,
    now: options.now ?? Date.now(),
    pos: 0,
    depth: 0,
  };
  const first = peek(p);
  const tree = parseOr(p);
  if (peek(p).kind !== "end") unexpected(p, peek(p));
  needBoolean(p, tree, first);
  return tree;
}

// The parser's steps: reading tokens, counting depth, and the errors every rule answers with.

function fail(p: Parser, reason: string): never {
  throw invalidParameter(p.parameter, reason);
}

const peek = (p: Parser, ahead = 0): Token => p.tokens[Math.min(p.pos + ahead, p.tokens.length - 1)] as Token;

const at = (t: Token) => `at position ${t.pos + 1}`;

function unexpected(p: Parser, t: Token, wanted?: string): never {
  return fail(
    p,
    wanted === undefined ? `Unexpected ${describeToken(t)}.` : `Expected ${wanted} but found ${describeToken(t)}.`,
  );
}

function expectOp(p: Parser, op: string): void {
  const t = peek(p);
  if (!isOp(t, op)) unexpected(p, t, `'${op}'`);
  p.pos++;
}

function expectWord(p: Parser, word: string): void {
  const t = peek(p);
  if (!isWord(t, word)) unexpected(p, t, word);
  p.pos++;
}

// Each level of nesting is counted before the parser descends into it.
function enter(p: Parser, t: Token): void {
  if (p.depth >= MAX_WHERE_DEPTH)
    fail(p, `The text nests more than ${MAX_WHERE_DEPTH} levels deep (position ${t.pos + 1}).`);
  p.depth++;
}

function leave(p: Parser): void {
  p.depth--;
}

function needBoolean(p: Parser, e: Expr, t: Token): Expr {
  if (e.type !== "boolean") fail(p, `Expected a condition ${at(t)}.`);
  return e;
}

function needValue(p: Parser, e: Expr, t: Token): Expr {
  if (e.type === "boolean") fail(p, `Expected a value, not a condition, ${at(t)}.`);
  return e;
}

function need(p: Parser, e: Expr, type: "number" | "string" | "date", t: Token, what: string): Expr {
  needValue(p, e, t);
  if (e.type !== type && e.type !== "null") {
    // A date wanted and a string literal given: read the string as a date, as ArcGIS does.
    if (type === "date" && e.kind === "string") return dateFromString(p, e.value, t);
    fail(p, `${what} needs a ${type}, not a ${e.type}, ${at(t)}.`);
  }
  return e;
}

function dateFromString(p: Parser, text: string, t: Token): Expr {
  const value = parseDateText(text);
  if (value === undefined) fail(p, `Invalid date or timestamp '${excerpt(text)}' ${at(t)}.`);
  return { kind: "date", type: "date", value };
}

// Two operands compared (or listed together in IN, BETWEEN, COALESCE): the same type, or NULL, or a date
// compared with a string literal that reads as a date.
function unify(p: Parser, a: Expr, b: Expr, t: Token, what: string): [Expr, Expr] {
  needValue(p, a, t);
  needValue(p, b, t);
  if (a.type === b.type || a.type === "null" || b.type === "null") return [a, b];
  if (a.type === "date" && b.kind === "string") return [a, dateFromString(p, b.value, t)];
  if (b.type === "date" && a.kind === "string") return [dateFromString(p, a.value, t), b];
  return fail(p, `${what} cannot compare a ${a.type} with a ${b.type} ${at(t)}.`);
}

// The rules, from the loosest binding down: OR, AND, NOT, a predicate, + and -, * and /, a sign, a primary.

function parseOr(p: Parser): Expr {
  return parseJoined(p, "OR", parseAnd);
}

function parseAnd(p: Parser): Expr {
  return parseJoined(p, "AND", parseNot);
}

// Conditions joined by one word, kept flat (`a OR b OR c` is one node of three parts) so the tree stays shallow.
function parseJoined(p: Parser, word: "OR" | "AND", next: (p: Parser) => Expr): Expr {
  const t = peek(p);
  const first = next(p);
  if (!isWord(peek(p), word)) return first;
  const parts = [needBoolean(p, first, t)];
  while (isWord(peek(p), word)) {
    p.pos++;
    const pt = peek(p);
    parts.push(needBoolean(p, next(p), pt));
  }
  return { kind: word === "OR" ? "or" : "and", type: "boolean", parts };
}

function parseNot(p: Parser): Expr {
  const t = peek(p);
  if (!isWord(t, "NOT")) return parsePredicate(p);
  enter(p, t);
  p.pos++;
  const ot = peek(p);
  const operand = needBoolean(p, parseNot(p), ot);
  leave(p);
  return { kind: "not", type: "boolean", operand };
}

const COMPARE_OPS: readonly string[] = ["=", "<>", "<", "<=", ">", ">="];

function parsePredicate(p: Parser): Expr {
  const t = peek(p);
  const left = parseAdditive(p);
  const op = peek(p);
  if (op.kind === "op" && COMPARE_OPS.includes(op.text)) {
    p.pos++;
    const rt = peek(p);
    const right = parseAdditive(p);
    const [l, r] = unify(p, left, right, rt, "The comparison");
    return { kind: "compare", type: "boolean", op: op.text as CompareOp, left: l, right: r };
  }
  if (isWord(op, "IS")) {
    p.pos++;
    const negated = isWord(peek(p), "NOT");
    if (negated) p.pos++;
    expectWord(p, "NULL");
    return { kind: "isNull", type: "boolean", operand: needValue(p, left, t), negated };
  }
  let negated = false;
  if (isWord(op, "NOT")) {
    const after = peek(p, 1);
    if (!isWord(after, "IN") && !isWord(after, "LIKE") && !isWord(after, "BETWEEN"))
      unexpected(p, after, "IN, LIKE or BETWEEN");
    p.pos++;
    negated = true;
  }
  const kw = peek(p);
  if (isWord(kw, "IN")) return parseIn(p, left, t, negated);
  if (isWord(kw, "BETWEEN")) return parseBetween(p, left, negated);
  if (isWord(kw, "LIKE")) return parseLike(p, left, t, negated);
  if (negated) unexpected(p, kw, "IN, LIKE or BETWEEN");
  return left;
}

// Called at IN; `t` is where the operand began.
function parseIn(p: Parser, left: Expr, t: Token, negated: boolean): Expr {
  p.pos++;
  const open = peek(p);
  expectOp(p, "(");
  if (isWord(peek(p), "SELECT")) fail(p, `Subqueries are not supported (position ${peek(p).pos + 1}).`);
  enter(p, open);
  let operand = needValue(p, left, t);
  const list: Expr[] = [];
  for (;;) {
    const it = peek(p);
    const [o, item] = unify(p, operand, parseAdditive(p), it, "IN");
    operand = o;
    list.push(item);
    if (!isOp(peek(p), ",")) break;
    p.pos++;
  }
  leave(p);
  expectOp(p, ")");
  return { kind: "in", type: "boolean", operand, list, negated };
}

// Called at BETWEEN.
function parseBetween(p: Parser, left: Expr, negated: boolean): Expr {
  p.pos++;
  const lt = peek(p);
  const low = parseAdditive(p);
  expectWord(p, "AND");
  const ht = peek(p);
  const high = parseAdditive(p);
  const [o1, l] = unify(p, left, low, lt, "BETWEEN");
  const [o2, h] = unify(p, o1, high, ht, "BETWEEN");
  return { kind: "between", type: "boolean", operand: o2, low: l, high: h, negated };
}

// Called at LIKE; `t` is where the operand began.
function parseLike(p: Parser, left: Expr, t: Token, negated: boolean): Expr {
  p.pos++;
  const operand = need(p, left, "string", t, "LIKE");
  const pt = peek(p);
  const pattern = need(p, parseAdditive(p), "string", pt, "LIKE");
  let escape: string | undefined;
  if (isWord(peek(p), "ESCAPE")) {
    p.pos++;
    const et = peek(p);
    // (No string holds NUL: the tokenizer refuses it.)
    if (et.kind !== "string" || Array.from(et.text).length !== 1)
      fail(p, `ESCAPE needs a string of one character ${at(et)}.`);
    escape = et.text;
    p.pos++;
    if (pattern.kind === "string" && endsWithEscape(pattern.value, escape))
      fail(p, `${ARGUMENT_FAULTS.likeEscape} ${at(pt)}.`);
  }
  return { kind: "like", type: "boolean", operand, pattern, escape, negated };
}

function parseChain(p: Parser, next: (p: Parser) => Expr, ops: readonly string[]): Expr {
  const t = peek(p);
  const first = next(p);
  if (!(peek(p).kind === "op" && ops.includes(peek(p).text))) return first;
  need(p, first, "number", t, "Arithmetic");
  const rest: { op: ArithmeticOp; operand: Expr }[] = [];
  while (peek(p).kind === "op" && ops.includes(peek(p).text)) {
    const op = peek(p).text as ArithmeticOp;
    enter(p, peek(p));
    p.pos++;
    const ot = peek(p);
    rest.push({ op, operand: need(p, next(p), "number", ot, "Arithmetic") });
  }
  p.depth -= rest.length;
  return { kind: "arithmetic", type: "number", first, rest };
}

const parseAdditive = (p: Parser): Expr => parseChain(p, parseMultiplicative, ["+", "-"]);
const parseMultiplicative = (p: Parser): Expr => parseChain(p, parseUnary, ["*", "/"]);

function parseUnary(p: Parser): Expr {
  const t = peek(p);
  if (!isOp(t, "-") && !isOp(t, "+")) return parsePrimary(p);
  enter(p, t);
  p.pos++;
  const ot = peek(p);
  const operand = need(p, parseUnary(p), "number", ot, `Unary '${t.text}'`);
  leave(p);
  if (t.text === "+") return operand;
  // A negative literal stays a literal: one parameter, and `x > -5` reads as it was written.
  if (operand.kind === "number") return { kind: "number", type: "number", value: -operand.value };
  return { kind: "negate", type: "number", operand };
}

function parsePrimary(p: Parser): Expr {
  const t = peek(p);
  switch (t.kind) {
    case "number": {
      p.pos++;
      const value = Number(t.text);
      if (!Number.isFinite(value)) fail(p, `Number out of range ${at(t)}.`);
      // An integer past 2^53 would silently become another integer; refuse it rather than match wrong rows.
      if (Number.isInteger(value) && !Number.isSafeInteger(value) && !/[.eE]/.test(t.text))
        fail(p, `Integer too large to be exact ${at(t)}.`);
      return { kind: "number", type: "number", value };
    }
    case "string":
      p.pos++;
      return { kind: "string", type: "string", value: t.text };
    case "quoted":
      p.pos++;
      return fieldExpr(p, t, t.text);
    case "op":
      if (t.text !== "(") return unexpected(p, t, "a value");
      {
        enter(p, t);
        p.pos++;
        if (isWord(peek(p), "SELECT")) fail(p, `Subqueries are not supported (position ${peek(p).pos + 1}).`);
        const inner = parseOr(p);
        expectOp(p, ")");
        leave(p);
        return inner;
      }
    case "end":
      return unexpected(p, t, "a value");
    case "word":
      return parseWord(p, t);
  }
}

function parseWord(p: Parser, t: Token): Expr {
  const word = t.text;
  const following = peek(p, 1);
  if (word === "NULL") {
    p.pos++;
    return { kind: "null", type: "null" };
  }
  if (word === "SELECT") fail(p, `Subqueries are not supported (position ${t.pos + 1}).`);
  if (RESERVED.has(word)) return unexpected(p, t, "a value");
  if ((word === "DATE" || word === "TIMESTAMP") && following.kind === "string") {
    p.pos += 2;
    const value = parseDateText(following.text);
    const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(following.text.trim());
    if (value === undefined || (word === "DATE" && !dateOnly))
      fail(p, `Invalid ${word.toLowerCase()} '${excerpt(following.text)}' ${at(following)}.`);
    return { kind: "date", type: "date", value };
  }
  if (word === "CURRENT_DATE") {
    p.pos++;
    return { kind: "date", type: "date", value: p.now - (((p.now % 86_400_000) + 86_400_000) % 86_400_000) };
  }
  if (word === "CURRENT_TIMESTAMP") {
    p.pos++;
    return { kind: "date", type: "date", value: p.now };
  }
  if (!isOp(following, "(")) {
    p.pos++;
    return fieldExpr(p, t, t.raw);
  }
  enter(p, following);
  p.pos += 2;
  const call = parseCall(p, t);
  expectOp(p, ")");
  leave(p);
  return call;
}

function fieldExpr(p: Parser, t: Token, name: string): Expr {
  const field = fieldByName(p.schema, name);
  if (field === undefined) return fail(p, `Unknown field '${excerpt(name, 64)}' ${at(t)}.`);
  const type = fieldValueType(field);
  if (type === undefined) return fail(p, `The field '${field.name}' cannot be used in a query ${at(t)}.`);
  return { kind: "field", type, field };
}

// The calls: each rule is called with the position just past `name(`; parseWord consumes the closing parenthesis.

function parseCall(p: Parser, t: Token): Expr {
  const aggregate = AGGREGATES.get(t.text);
  if (aggregate !== undefined) return parseAggregate(p, t, aggregate);
  switch (t.text) {
    case "EXTRACT":
      return parseExtract(p);
    case "SUBSTRING":
      return parseSubstring(p, t);
    case "POSITION":
      return parsePosition(p);
    case "TRIM":
      return parseTrim(p);
    case "CAST":
      return parseCast(p);
  }
  return parseScalar(p, t);
}

function parseAggregate(p: Parser, t: Token, aggregate: AggregateName): Expr {
  if (!p.aggregates) fail(p, `Aggregate functions are only allowed in 'having' ${at(t)}.`);
  if (aggregate === "count" && isOp(peek(p), "*")) {
    p.pos++;
    return { kind: "aggregate", type: "number", name: "count", operand: undefined };
  }
  const ft = peek(p);
  if (ft.kind !== "word" && ft.kind !== "quoted") return unexpected(p, ft, "a field name");
  if (ft.kind === "word" && RESERVED.has(ft.text)) return unexpected(p, ft, "a field name");
  p.pos++;
  const f = fieldExpr(p, ft, ft.raw);
  if (f.kind !== "field") return unexpected(p, ft, "a field name");
  if (aggregate !== "count" && aggregate !== "min" && aggregate !== "max") need(p, f, "number", ft, t.text);
  const type = aggregate === "count" ? "number" : aggregate === "min" || aggregate === "max" ? f.type : "number";
  return { kind: "aggregate", type, name: aggregate, operand: f.field };
}

function parseExtract(p: Parser): Expr {
  const ut = peek(p);
  const unit = ut.kind === "word" ? EXTRACT_UNITS.get(ut.text) : undefined;
  if (unit === undefined) return unexpected(p, ut, "YEAR, MONTH, DAY, HOUR, MINUTE or SECOND");
  p.pos++;
  expectWord(p, "FROM");
  const ot = peek(p);
  return { kind: "extract", type: "number", unit, operand: need(p, parseOr(p), "date", ot, "EXTRACT") };
}

function parseSubstring(p: Parser, t: Token): Expr {
  const st = peek(p);
  const operand = need(p, parseOr(p), "string", st, "SUBSTRING");
  const args: Expr[] = [operand];
  const sep = peek(p);
  if (isWord(sep, "FROM") || isOp(sep, ",")) {
    p.pos++;
    const at1 = peek(p);
    args.push(need(p, parseOr(p), "number", at1, "SUBSTRING"));
    const sep2 = peek(p);
    if ((isWord(sep, "FROM") && isWord(sep2, "FOR")) || (isOp(sep, ",") && isOp(sep2, ","))) {
      p.pos++;
      const at2 = peek(p);
      args.push(need(p, parseOr(p), "number", at2, "SUBSTRING"));
    }
  } else unexpected(p, sep, "FROM");
  // A literal position or length is judged here, as the database would judge it, before any SQL runs.
  const [, from, length] = args;
  for (const a of [from, length])
    if (a?.kind === "number" && sqlInteger(a.value) === undefined) fail(p, `${ARGUMENT_FAULTS.range} ${at(t)}.`);
  if (length?.kind === "number" && (sqlInteger(length.value) ?? 0) < 0)
    fail(p, `${ARGUMENT_FAULTS.substringLength} ${at(t)}.`);
  return { kind: "call", type: "string", name: "substring", args };
}

function parsePosition(p: Parser): Expr {
  const nt = peek(p);
  // The needle is read below the predicate level, so its IN is the keyword of POSITION, not a list.
  const needle = need(p, parseAdditive(p), "string", nt, "POSITION");
  expectWord(p, "IN");
  const ht = peek(p);
  const haystack = need(p, parseOr(p), "string", ht, "POSITION");
  return { kind: "call", type: "number", name: "position", args: [needle, haystack] };
}

function parseTrim(p: Parser): Expr {
  let side: "both" | "leading" | "trailing" = "both";
  let sideGiven = false;
  const st = peek(p);
  if (st.kind === "word" && (st.text === "BOTH" || st.text === "LEADING" || st.text === "TRAILING")) {
    const after = peek(p, 1);
    // `TRIM(both)` trims a field named both; a side is followed by FROM or by the characters to strip.
    if (!isOp(after, ")")) {
      side = st.text.toLowerCase() as typeof side;
      sideGiven = true;
      p.pos++;
    }
  }
  if (isWord(peek(p), "FROM")) {
    if (!sideGiven) return unexpected(p, peek(p), "a value");
    p.pos++;
    const ot = peek(p);
    return {
      kind: "trim",
      type: "string",
      side,
      chars: undefined,
      operand: need(p, parseOr(p), "string", ot, "TRIM"),
    };
  }
  const ft = peek(p);
  const first = need(p, parseOr(p), "string", ft, "TRIM");
  if (isWord(peek(p), "FROM")) {
    p.pos++;
    const ot = peek(p);
    return { kind: "trim", type: "string", side, chars: first, operand: need(p, parseOr(p), "string", ot, "TRIM") };
  }
  if (sideGiven) unexpected(p, peek(p), "FROM");
  return { kind: "trim", type: "string", side, chars: undefined, operand: first };
}

function parseCast(p: Parser): Expr {
  const ot = peek(p);
  const operand = needValue(p, parseOr(p), ot);
  expectWord(p, "AS");
  const tt = peek(p);
  if (tt.kind !== "word") return unexpected(p, tt, "a type");
  p.pos++;
  let target: CastTarget;
  let length: number | undefined;
  switch (tt.text) {
    case "INT":
    case "INTEGER":
    case "SMALLINT":
      target = "integer";
      break;
    case "FLOAT":
    case "REAL":
      target = "float";
      break;
    case "DOUBLE":
      target = "float";
      if (isWord(peek(p), "PRECISION")) p.pos++;
      break;
    case "VARCHAR":
    case "CHAR": {
      target = "varchar";
      expectOp(p, "(");
      const nt = peek(p);
      const n = nt.kind === "number" ? Number(nt.text) : NaN;
      if (!Number.isSafeInteger(n) || n < 1 || n > MAX_VARCHAR_LENGTH)
        fail(p, `VARCHAR needs a length from 1 to ${MAX_VARCHAR_LENGTH} ${at(nt)}.`);
      p.pos++;
      expectOp(p, ")");
      length = n;
      break;
    }
    case "DATE":
      target = "date";
      break;
    case "TIMESTAMP":
      target = "timestamp";
      break;
    default:
      return unexpected(p, tt, "INTEGER, SMALLINT, FLOAT, REAL, DOUBLE, VARCHAR(n), DATE or TIMESTAMP");
  }
  // The casts whose result the dialects agree on; a date as text or a number as a date have none.
  const from = operand.type;
  const ok =
    from === "null" ||
    (target === "integer" || target === "float"
      ? from === "number" || from === "string"
      : target === "varchar"
        ? from === "number" || from === "string"
        : from === "date" || from === "string");
  if (!ok) fail(p, `Cannot cast a ${from} to ${tt.text} ${at(ot)}.`);
  const type: ValueType =
    target === "varchar" ? "string" : target === "date" || target === "timestamp" ? "date" : "number";
  return { kind: "cast", type, target, length, operand };
}

function parseScalar(p: Parser, t: Token): Expr {
  const name = t.text;
  const scalar = SCALARS.get(name);
  if (scalar === undefined) return fail(p, `Unknown function '${excerpt(t.raw, 32)}' ${at(t)}.`);
  const args: { e: Expr; t: Token }[] = [];
  if (!isOp(peek(p), ")")) {
    for (;;) {
      const at1 = peek(p);
      args.push({ e: needValue(p, parseOr(p), at1), t: at1 });
      if (!isOp(peek(p), ",")) break;
      p.pos++;
    }
  }
  if (args.length < scalar.min || args.length > scalar.max) {
    const n = scalar.min === scalar.max ? `${scalar.min}` : `${scalar.min} to ${scalar.max}`;
    fail(p, `${name} takes ${n} argument${scalar.max === 1 ? "" : "s"} ${at(t)}.`);
  }
  switch (scalar.name) {
    case "abs":
    case "ceiling":
    case "floor":
    case "log":
    case "log10":
    case "power":
    case "round":
    case "truncate":
    case "mod": {
      const typed = args.map((a) => need(p, a.e, "number", a.t, name));
      const [x, y] = typed;
      // POWER of two literals is judged here, as PostgreSQL judges it, before any SQL runs.
      if (scalar.name === "power" && x?.kind === "number" && y?.kind === "number") {
        const fault = powerFault(x.value, y.value);
        if (fault !== undefined) fail(p, `${fault} ${at(t)}.`);
      }
      return { kind: "call", type: "number", name: scalar.name, args: typed };
    }
    // Functions of text: CHAR_LENGTH counts it, the others answer text.
    case "char_length":
    case "concat":
    case "lower":
    case "upper":
      return {
        kind: "call",
        type: scalar.name === "char_length" ? "number" : "string",
        name: scalar.name,
        args: args.map((a) => need(p, a.e, "string", a.t, name)),
      };
    case "coalesce":
    case "nullif": {
      let type: ValueType = "null";
      const out: Expr[] = [];
      const first = args[0] as { e: Expr; t: Token };
      for (const a of args) {
        const [, e] = unify(p, first.e, a.e, a.t, name);
        if (type === "null") type = e.type;
        out.push(e);
      }
      // NULLIF(a, b) has a's type even when a is NULL; COALESCE has the first non-null argument's.
      if (scalar.name === "nullif") type = out[0]?.type === "null" ? type : (out[0]?.type ?? "null");
      return { kind: "call", type, name: scalar.name, args: out };
    }
    case "substring":
    case "position":
      // Parsed above with their own keywords.
      return unexpected(p, t);
  }
}
