// The `where` (and `having`) parameter of a feature layer query: ArcGIS's standardized-query SQL subset, parsed
// into a typed expression tree with every field name resolved against the layer. Whoever sends the request
// chooses the text, so the parser is one hand-written pass over tokens (no backtracking: time linear in the
// input), with a length cap checked before anything else and a nesting cap checked before each descent, so a
// hostile input is refused quickly and never overflows the stack. The tree holds values, never SQL: the
// emitters bind every literal as a parameter.
import { ARGUMENT_FAULTS, invalidParameter } from "#shared/features/errors.ts";
import { type Field, fieldByName, fieldValueType, type LayerSchema } from "#shared/features/schema.ts";

/** The longest `where` accepted, in UTF-16 code units: far above what clients build, far below a DoS. */
export const MAX_WHERE_LENGTH = 16_384;
/**
 * The deepest nesting accepted (parentheses, NOT, unary minus and function calls each count one level, and so
 * does each operator of an arithmetic chain, which SQL nests as a left-deep tree). Keeps the parser's recursion,
 * every later walk of the tree and the emitted SQL shallow (SQLite refuses expressions over 1000 levels deep);
 * real filters nest a handful of levels.
 */
export const MAX_WHERE_DEPTH = 64;
/** The longest excerpt of the input an error message repeats. */
const EXCERPT = 24;
/** CAST(x AS VARCHAR(n)): the largest n. */
export const MAX_VARCHAR_LENGTH = 1_000_000;

/** The type of a value in an expression; dates are carried as epoch milliseconds (UTC) everywhere. */
export type ValueType = "number" | "string" | "date" | "boolean" | "null";

export type CompareOp = "=" | "<>" | "<" | "<=" | ">" | ">=";
export type ArithmeticOp = "+" | "-" | "*" | "/";
export type ExtractUnit = "year" | "month" | "day" | "hour" | "minute" | "second";
export type CastTarget = "integer" | "float" | "varchar" | "date" | "timestamp";
export type AggregateName = "count" | "sum" | "min" | "max" | "avg" | "stddev" | "var";
export type ScalarFunction =
  | "abs"
  | "ceiling"
  | "floor"
  | "log"
  | "log10"
  | "power"
  | "round"
  | "truncate"
  | "mod"
  | "char_length"
  | "concat"
  | "lower"
  | "upper"
  | "substring"
  | "position"
  | "coalesce"
  | "nullif";

export type Expr =
  | { readonly kind: "field"; readonly type: ValueType; readonly field: Field }
  | { readonly kind: "number"; readonly type: "number"; readonly value: number }
  | { readonly kind: "string"; readonly type: "string"; readonly value: string }
  /** A date or timestamp literal, CURRENT_DATE or CURRENT_TIMESTAMP: epoch milliseconds, UTC. */
  | { readonly kind: "date"; readonly type: "date"; readonly value: number }
  | { readonly kind: "null"; readonly type: "null" }
  | {
      readonly kind: "compare";
      readonly type: "boolean";
      readonly op: CompareOp;
      readonly left: Expr;
      readonly right: Expr;
    }
  | { readonly kind: "and" | "or"; readonly type: "boolean"; readonly parts: readonly Expr[] }
  | { readonly kind: "not"; readonly type: "boolean"; readonly operand: Expr }
  | {
      readonly kind: "in";
      readonly type: "boolean";
      readonly operand: Expr;
      readonly list: readonly Expr[];
      readonly negated: boolean;
    }
  | {
      readonly kind: "between";
      readonly type: "boolean";
      readonly operand: Expr;
      readonly low: Expr;
      readonly high: Expr;
      readonly negated: boolean;
    }
  | {
      readonly kind: "like";
      readonly type: "boolean";
      readonly operand: Expr;
      readonly pattern: Expr;
      /** One character, when ESCAPE was given. */
      readonly escape: string | undefined;
      readonly negated: boolean;
    }
  | { readonly kind: "isNull"; readonly type: "boolean"; readonly operand: Expr; readonly negated: boolean }
  /**
   * A left-associative chain of one precedence level (`a - b + c`), kept flat so the tree stays shallow (its
   * operators still count toward the nesting cap: the SQL nests them).
   */
  | {
      readonly kind: "arithmetic";
      readonly type: "number";
      readonly first: Expr;
      readonly rest: readonly { readonly op: ArithmeticOp; readonly operand: Expr }[];
    }
  | { readonly kind: "negate"; readonly type: "number"; readonly operand: Expr }
  | { readonly kind: "call"; readonly type: ValueType; readonly name: ScalarFunction; readonly args: readonly Expr[] }
  | { readonly kind: "extract"; readonly type: "number"; readonly unit: ExtractUnit; readonly operand: Expr }
  | {
      readonly kind: "trim";
      readonly type: "string";
      readonly side: "both" | "leading" | "trailing";
      /** The characters to strip (a set, as in SQL); absent: spaces. */
      readonly chars: Expr | undefined;
      readonly operand: Expr;
    }
  | {
      readonly kind: "cast";
      readonly type: ValueType;
      readonly target: CastTarget;
      /** VARCHAR(n): n. */
      readonly length: number | undefined;
      readonly operand: Expr;
    }
  /** Only in `having`: an aggregate of a field over each group (operand absent: COUNT(*)). */
  | {
      readonly kind: "aggregate";
      readonly type: ValueType;
      readonly name: AggregateName;
      readonly operand: Field | undefined;
    };

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

/** A short, printable excerpt of untrusted text, for error messages. */
export function excerpt(text: string, max = EXCERPT): string {
  const chars = Array.from(text.slice(0, max * 2)).slice(0, max);
  const clean = chars.map((c) => (c < " " || c === "\u007f" ? "?" : c)).join("");
  return chars.length < Array.from(text.slice(0, max * 2 + 1)).length ? `${clean}…` : clean;
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

type TokenKind = "number" | "string" | "word" | "quoted" | "op" | "end";
interface Token {
  readonly kind: TokenKind;
  /** Words: upper-cased; quoted identifiers and strings: their value; operators and numbers: as written. */
  readonly text: string;
  /** Words: as written. */
  readonly raw: string;
  readonly pos: number;
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

const isSpace = (c: string) => c.trim() === "";
const isDigit = (c: string) => c >= "0" && c <= "9";
const WORD_CHAR = /^[\p{L}\p{N}\p{M}_$]$/u;
const isWordChar = (c: string) => WORD_CHAR.test(c);

function tokenize(input: string, fail: (pos: number, reason: string) => never): Token[] {
  const tokens: Token[] = [];
  const push = (kind: TokenKind, text: string, raw: string, pos: number) => tokens.push({ kind, text, raw, pos });
  // A quoted run with the quote doubled inside; indexOf keeps it one pass over the text.
  const readQuoted = (open: number, quote: string, what: string): [string, number] => {
    let value = "";
    let from = open + 1;
    for (;;) {
      const close = input.indexOf(quote, from);
      if (close < 0) fail(open, `Unterminated ${what} at position ${open + 1}.`);
      value += input.slice(from, close);
      if (input.charAt(close + 1) !== quote) return [value, close + 1];
      value += quote;
      from = close + 2;
    }
  };
  // PostgreSQL's text cannot hold NUL (and C strings end at it): a string holding one is refused in either dialect.
  const readString = (open: number): [string, number] => {
    const [value, end] = readQuoted(open, "'", "string");
    if (value.includes("\u0000")) {
      const nul = input.indexOf("\u0000", open);
      fail(nul, `A string cannot hold the NUL character (position ${nul + 1}).`);
    }
    return [value, end];
  };
  let i = 0;
  while (i < input.length) {
    const c = input.charAt(i);
    const next = input.charAt(i + 1);
    if (isSpace(c)) {
      i++;
    } else if (c === "'") {
      const [value, end] = readString(i);
      push("string", value, "", i);
      i = end;
    } else if ((c === "N" || c === "n") && next === "'") {
      const [value, end] = readString(i + 1);
      push("string", value, "", i);
      i = end;
    } else if (c === '"') {
      const [value, end] = readQuoted(i, '"', "quoted name");
      if (value === "") fail(i, `Empty quoted name at position ${i + 1}.`);
      push("quoted", value, value, i);
      i = end;
    } else if (isDigit(c) || (c === "." && isDigit(next))) {
      const start = i;
      while (isDigit(input.charAt(i))) i++;
      if (input.charAt(i) === ".") {
        i++;
        while (isDigit(input.charAt(i))) i++;
      }
      if (input.charAt(i) === "e" || input.charAt(i) === "E") {
        i++;
        if (input.charAt(i) === "+" || input.charAt(i) === "-") i++;
        if (!isDigit(input.charAt(i))) fail(start, `Malformed number at position ${start + 1}.`);
        while (isDigit(input.charAt(i))) i++;
      }
      if (i < input.length && (isWordChar(input.charAt(i)) || input.charAt(i) === "."))
        fail(start, `Malformed number at position ${start + 1}.`);
      push("number", input.slice(start, i), "", start);
    } else if (isWordChar(c) || (c >= "\ud800" && c <= "\udbff")) {
      const start = i;
      while (i < input.length) {
        const cp = input.codePointAt(i) ?? 0;
        const ch = String.fromCodePoint(cp);
        if (!isWordChar(ch)) break;
        i += ch.length;
      }
      if (i === start) fail(start, `Unexpected character at position ${start + 1}.`);
      const raw = input.slice(start, i);
      push("word", raw.toUpperCase(), raw, start);
    } else if (c === ";") {
      fail(i, `Semicolons are not allowed (position ${i + 1}).`);
    } else if ((c === "-" && next === "-") || (c === "/" && next === "*")) {
      fail(i, `Comments are not allowed (position ${i + 1}).`);
    } else if (
      (c === "<" && (next === ">" || next === "=")) ||
      (c === ">" && next === "=") ||
      (c === "!" && next === "=")
    ) {
      push("op", c === "!" ? "<>" : c + next, "", i);
      i += 2;
    } else if ("=<>+-*/(),".includes(c)) {
      push("op", c, "", i);
      i++;
    } else {
      fail(
        i,
        `Unexpected character '${excerpt(String.fromCodePoint(input.codePointAt(i) ?? 0), 1)}' at position ${i + 1}.`,
      );
    }
  }
  push("end", "", "", input.length);
  return tokens;
}

/**
 * Parses a where (or, with `aggregates`, a having) text against a layer. A blank text means no filter
 * (undefined). Throws the ArcGIS 400 envelope, with the reason and its position, for anything else it cannot
 * run: syntax, unknown fields or functions, type errors, and texts over the length or nesting caps.
 */
export function parseWhere(input: string, schema: LayerSchema, options: WhereOptions = {}): Expr | undefined {
  const parameter = options.parameter ?? "where";
  const fail = (_pos: number, reason: string): never => {
    throw invalidParameter(parameter, reason);
  };
  if (input.length > MAX_WHERE_LENGTH) fail(0, `The text is longer than ${MAX_WHERE_LENGTH} characters.`);
  if (input.trim() === "") return undefined;
  const tokens = tokenize(input, fail);
  const now = options.now ?? Date.now();
  let pos = 0;
  let depth = 0;

  const peek = (ahead = 0): Token => tokens[Math.min(pos + ahead, tokens.length - 1)] as Token;
  const isWord = (t: Token, word: string) => t.kind === "word" && t.text === word;
  const isOp = (t: Token, op: string) => t.kind === "op" && t.text === op;
  const describe = (t: Token): string => {
    if (t.kind === "end") return "the end of the text";
    const shown =
      t.kind === "word" ? t.raw : t.kind === "string" ? `'${t.text}'` : t.kind === "quoted" ? `"${t.text}"` : t.text;
    return `'${excerpt(shown)}' at position ${t.pos + 1}`;
  };
  const unexpected = (t: Token, wanted?: string): never =>
    fail(t.pos, wanted === undefined ? `Unexpected ${describe(t)}.` : `Expected ${wanted} but found ${describe(t)}.`);
  const expectOp = (op: string) => {
    const t = peek();
    if (!isOp(t, op)) unexpected(t, `'${op}'`);
    pos++;
  };
  const expectWord = (word: string) => {
    const t = peek();
    if (!isWord(t, word)) unexpected(t, word);
    pos++;
  };
  // Each level of nesting is counted before the parser descends into it.
  const enter = (t: Token) => {
    if (depth >= MAX_WHERE_DEPTH)
      fail(t.pos, `The text nests more than ${MAX_WHERE_DEPTH} levels deep (position ${t.pos + 1}).`);
    depth++;
  };
  const leave = () => {
    depth--;
  };

  const at = (t: Token) => `at position ${t.pos + 1}`;
  const needBoolean = (e: Expr, t: Token): Expr => {
    if (e.type !== "boolean") fail(t.pos, `Expected a condition ${at(t)}.`);
    return e;
  };
  const needValue = (e: Expr, t: Token): Expr => {
    if (e.type === "boolean") fail(t.pos, `Expected a value, not a condition, ${at(t)}.`);
    return e;
  };
  const need = (e: Expr, type: "number" | "string" | "date", t: Token, what: string): Expr => {
    needValue(e, t);
    if (e.type !== type && e.type !== "null") {
      // A date wanted and a string literal given: read the string as a date, as ArcGIS does.
      if (type === "date" && e.kind === "string") return dateFromString(e.value, t);
      fail(t.pos, `${what} needs a ${type}, not a ${e.type}, ${at(t)}.`);
    }
    return e;
  };
  const dateFromString = (text: string, t: Token): Expr => {
    const value = parseDateText(text);
    if (value === undefined) fail(t.pos, `Invalid date or timestamp '${excerpt(text)}' ${at(t)}.`);
    return { kind: "date", type: "date", value: value as number };
  };
  // Two operands compared (or listed together in IN, BETWEEN, COALESCE): the same type, or NULL, or a date
  // compared with a string literal that reads as a date.
  const unify = (a: Expr, b: Expr, t: Token, what: string): [Expr, Expr] => {
    needValue(a, t);
    needValue(b, t);
    if (a.type === b.type || a.type === "null" || b.type === "null") return [a, b];
    if (a.type === "date" && b.kind === "string") return [a, dateFromString(b.value, t)];
    if (b.type === "date" && a.kind === "string") return [dateFromString(a.value, t), b];
    return fail(t.pos, `${what} cannot compare a ${a.type} with a ${b.type} ${at(t)}.`);
  };

  function parseOr(): Expr {
    const t = peek();
    const first = parseAnd();
    if (!isWord(peek(), "OR")) return first;
    const parts = [needBoolean(first, t)];
    while (isWord(peek(), "OR")) {
      pos++;
      const pt = peek();
      parts.push(needBoolean(parseAnd(), pt));
    }
    return { kind: "or", type: "boolean", parts };
  }

  function parseAnd(): Expr {
    const t = peek();
    const first = parseNot();
    if (!isWord(peek(), "AND")) return first;
    const parts = [needBoolean(first, t)];
    while (isWord(peek(), "AND")) {
      pos++;
      const pt = peek();
      parts.push(needBoolean(parseNot(), pt));
    }
    return { kind: "and", type: "boolean", parts };
  }

  function parseNot(): Expr {
    const t = peek();
    if (!isWord(t, "NOT")) return parsePredicate();
    enter(t);
    pos++;
    const ot = peek();
    const operand = needBoolean(parseNot(), ot);
    leave();
    return { kind: "not", type: "boolean", operand };
  }

  function parsePredicate(): Expr {
    const t = peek();
    const left = parseAdditive();
    const op = peek();
    if (op.kind === "op" && ["=", "<>", "<", "<=", ">", ">="].includes(op.text)) {
      pos++;
      const rt = peek();
      const right = parseAdditive();
      const [l, r] = unify(left, right, rt, "The comparison");
      return { kind: "compare", type: "boolean", op: op.text as CompareOp, left: l, right: r };
    }
    if (isWord(op, "IS")) {
      pos++;
      const negated = isWord(peek(), "NOT");
      if (negated) pos++;
      expectWord("NULL");
      return { kind: "isNull", type: "boolean", operand: needValue(left, t), negated };
    }
    let negated = false;
    if (isWord(op, "NOT")) {
      const after = peek(1);
      if (!isWord(after, "IN") && !isWord(after, "LIKE") && !isWord(after, "BETWEEN"))
        unexpected(after, "IN, LIKE or BETWEEN");
      pos++;
      negated = true;
    }
    const kw = peek();
    if (isWord(kw, "IN")) {
      pos++;
      const open = peek();
      expectOp("(");
      if (isWord(peek(), "SELECT")) fail(peek().pos, `Subqueries are not supported (position ${peek().pos + 1}).`);
      enter(open);
      let operand = needValue(left, t);
      const list: Expr[] = [];
      for (;;) {
        const it = peek();
        const [o, item] = unify(operand, parseAdditive(), it, "IN");
        operand = o;
        list.push(item);
        if (!isOp(peek(), ",")) break;
        pos++;
      }
      leave();
      expectOp(")");
      return { kind: "in", type: "boolean", operand, list, negated };
    }
    if (isWord(kw, "BETWEEN")) {
      pos++;
      const lt = peek();
      const low = parseAdditive();
      expectWord("AND");
      const ht = peek();
      const high = parseAdditive();
      const [o1, l] = unify(left, low, lt, "BETWEEN");
      const [o2, h] = unify(o1, high, ht, "BETWEEN");
      return { kind: "between", type: "boolean", operand: o2, low: l, high: h, negated };
    }
    if (isWord(kw, "LIKE")) {
      pos++;
      const operand = need(left, "string", t, "LIKE");
      const pt = peek();
      const pattern = need(parseAdditive(), "string", pt, "LIKE");
      let escape: string | undefined;
      if (isWord(peek(), "ESCAPE")) {
        pos++;
        const et = peek();
        // (No string holds NUL: the tokenizer refuses it.)
        if (et.kind !== "string" || Array.from(et.text).length !== 1)
          fail(et.pos, `ESCAPE needs a string of one character ${at(et)}.`);
        escape = et.text;
        pos++;
        if (pattern.kind === "string" && endsWithEscape(pattern.value, escape))
          fail(pt.pos, `${ARGUMENT_FAULTS.likeEscape} ${at(pt)}.`);
      }
      return { kind: "like", type: "boolean", operand, pattern, escape, negated };
    }
    if (negated) unexpected(kw, "IN, LIKE or BETWEEN");
    return left;
  }

  function parseChain(next: () => Expr, ops: readonly string[]): Expr {
    const t = peek();
    const first = next();
    if (!(peek().kind === "op" && ops.includes(peek().text))) return first;
    need(first, "number", t, "Arithmetic");
    const rest: { op: ArithmeticOp; operand: Expr }[] = [];
    while (peek().kind === "op" && ops.includes(peek().text)) {
      const op = peek().text as ArithmeticOp;
      enter(peek());
      pos++;
      const ot = peek();
      rest.push({ op, operand: need(next(), "number", ot, "Arithmetic") });
    }
    depth -= rest.length;
    return { kind: "arithmetic", type: "number", first, rest };
  }

  const parseAdditive = (): Expr => parseChain(parseMultiplicative, ["+", "-"]);
  const parseMultiplicative = (): Expr => parseChain(parseUnary, ["*", "/"]);

  function parseUnary(): Expr {
    const t = peek();
    if (!isOp(t, "-") && !isOp(t, "+")) return parsePrimary();
    enter(t);
    pos++;
    const ot = peek();
    const operand = need(parseUnary(), "number", ot, `Unary '${t.text}'`);
    leave();
    if (t.text === "+") return operand;
    // A negative literal stays a literal: one parameter, and `x > -5` reads as it was written.
    if (operand.kind === "number") return { kind: "number", type: "number", value: -operand.value };
    return { kind: "negate", type: "number", operand };
  }

  function parsePrimary(): Expr {
    const t = peek();
    switch (t.kind) {
      case "number": {
        pos++;
        const value = Number(t.text);
        if (!Number.isFinite(value)) fail(t.pos, `Number out of range ${at(t)}.`);
        // An integer past 2^53 would silently become another integer; refuse it rather than match wrong rows.
        if (Number.isInteger(value) && !Number.isSafeInteger(value) && !/[.eE]/.test(t.text))
          fail(t.pos, `Integer too large to be exact ${at(t)}.`);
        return { kind: "number", type: "number", value };
      }
      case "string":
        pos++;
        return { kind: "string", type: "string", value: t.text };
      case "quoted":
        pos++;
        return fieldExpr(t, t.text);
      case "op":
        if (t.text !== "(") return unexpected(t, "a value");
        {
          enter(t);
          pos++;
          if (isWord(peek(), "SELECT")) fail(peek().pos, `Subqueries are not supported (position ${peek().pos + 1}).`);
          const inner = parseOr();
          expectOp(")");
          leave();
          return inner;
        }
      case "end":
        return unexpected(t, "a value");
      case "word":
        return parseWord(t);
    }
  }

  function parseWord(t: Token): Expr {
    const word = t.text;
    const following = peek(1);
    if (word === "NULL") {
      pos++;
      return { kind: "null", type: "null" };
    }
    if (word === "SELECT") fail(t.pos, `Subqueries are not supported (position ${t.pos + 1}).`);
    if (RESERVED.has(word)) return unexpected(t, "a value");
    if ((word === "DATE" || word === "TIMESTAMP") && following.kind === "string") {
      pos += 2;
      const value = parseDateText(following.text);
      const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(following.text.trim());
      if (value === undefined || (word === "DATE" && !dateOnly))
        fail(following.pos, `Invalid ${word.toLowerCase()} '${excerpt(following.text)}' ${at(following)}.`);
      return { kind: "date", type: "date", value: value as number };
    }
    if (word === "CURRENT_DATE") {
      pos++;
      return { kind: "date", type: "date", value: now - (((now % 86_400_000) + 86_400_000) % 86_400_000) };
    }
    if (word === "CURRENT_TIMESTAMP") {
      pos++;
      return { kind: "date", type: "date", value: now };
    }
    if (!isOp(following, "(")) {
      pos++;
      return fieldExpr(t, t.raw);
    }
    enter(following);
    pos += 2;
    const call = parseCall(t);
    expectOp(")");
    leave();
    return call;
  }

  function fieldExpr(t: Token, name: string): Expr {
    const field = fieldByName(schema, name);
    if (field === undefined) return fail(t.pos, `Unknown field '${excerpt(name, 64)}' ${at(t)}.`);
    const type = fieldValueType(field);
    if (type === undefined) return fail(t.pos, `The field '${field.name}' cannot be used in a query ${at(t)}.`);
    return { kind: "field", type, field };
  }

  // Called with the position just past `name(`; the caller consumes the closing parenthesis.
  function parseCall(t: Token): Expr {
    const name = t.text;
    const aggregate = AGGREGATES.get(name);
    if (aggregate !== undefined) {
      if (!options.aggregates) fail(t.pos, `Aggregate functions are only allowed in 'having' ${at(t)}.`);
      if (aggregate === "count" && isOp(peek(), "*")) {
        pos++;
        return { kind: "aggregate", type: "number", name: "count", operand: undefined };
      }
      const ft = peek();
      if (ft.kind !== "word" && ft.kind !== "quoted") return unexpected(ft, "a field name");
      if (ft.kind === "word" && RESERVED.has(ft.text)) return unexpected(ft, "a field name");
      pos++;
      const f = fieldExpr(ft, ft.raw);
      if (f.kind !== "field") return unexpected(ft, "a field name");
      if (aggregate !== "count" && aggregate !== "min" && aggregate !== "max") need(f, "number", ft, name);
      const type = aggregate === "count" ? "number" : aggregate === "min" || aggregate === "max" ? f.type : "number";
      return { kind: "aggregate", type, name: aggregate, operand: f.field };
    }
    switch (name) {
      case "EXTRACT": {
        const ut = peek();
        const unit = ut.kind === "word" ? EXTRACT_UNITS.get(ut.text) : undefined;
        if (unit === undefined) return unexpected(ut, "YEAR, MONTH, DAY, HOUR, MINUTE or SECOND");
        pos++;
        expectWord("FROM");
        const ot = peek();
        return { kind: "extract", type: "number", unit, operand: need(parseOr(), "date", ot, "EXTRACT") };
      }
      case "SUBSTRING": {
        const st = peek();
        const operand = need(parseOr(), "string", st, "SUBSTRING");
        const args: Expr[] = [operand];
        const sep = peek();
        if (isWord(sep, "FROM") || isOp(sep, ",")) {
          pos++;
          const at1 = peek();
          args.push(need(parseOr(), "number", at1, "SUBSTRING"));
          const sep2 = peek();
          if ((isWord(sep, "FROM") && isWord(sep2, "FOR")) || (isOp(sep, ",") && isOp(sep2, ","))) {
            pos++;
            const at2 = peek();
            args.push(need(parseOr(), "number", at2, "SUBSTRING"));
          }
        } else unexpected(sep, "FROM");
        // A literal position or length is judged here, as the database would judge it, before any SQL runs.
        const [, from, length] = args;
        for (const a of [from, length])
          if (a?.kind === "number" && sqlInteger(a.value) === undefined)
            fail(t.pos, `${ARGUMENT_FAULTS.range} ${at(t)}.`);
        if (length?.kind === "number" && (sqlInteger(length.value) ?? 0) < 0)
          fail(t.pos, `${ARGUMENT_FAULTS.substringLength} ${at(t)}.`);
        return { kind: "call", type: "string", name: "substring", args };
      }
      case "POSITION": {
        const nt = peek();
        // The needle is read below the predicate level, so its IN is the keyword of POSITION, not a list.
        const needle = need(parseAdditive(), "string", nt, "POSITION");
        expectWord("IN");
        const ht = peek();
        const haystack = need(parseOr(), "string", ht, "POSITION");
        return { kind: "call", type: "number", name: "position", args: [needle, haystack] };
      }
      case "TRIM": {
        let side: "both" | "leading" | "trailing" = "both";
        let sideGiven = false;
        const st = peek();
        if (st.kind === "word" && (st.text === "BOTH" || st.text === "LEADING" || st.text === "TRAILING")) {
          const after = peek(1);
          // `TRIM(both)` trims a field named both; a side is followed by FROM or by the characters to strip.
          if (!isOp(after, ")")) {
            side = st.text.toLowerCase() as typeof side;
            sideGiven = true;
            pos++;
          }
        }
        if (isWord(peek(), "FROM")) {
          if (!sideGiven) return unexpected(peek(), "a value");
          pos++;
          const ot = peek();
          return {
            kind: "trim",
            type: "string",
            side,
            chars: undefined,
            operand: need(parseOr(), "string", ot, "TRIM"),
          };
        }
        const ft = peek();
        const first = need(parseOr(), "string", ft, "TRIM");
        if (isWord(peek(), "FROM")) {
          pos++;
          const ot = peek();
          return { kind: "trim", type: "string", side, chars: first, operand: need(parseOr(), "string", ot, "TRIM") };
        }
        if (sideGiven) unexpected(peek(), "FROM");
        return { kind: "trim", type: "string", side, chars: undefined, operand: first };
      }
      case "CAST": {
        const ot = peek();
        const operand = needValue(parseOr(), ot);
        expectWord("AS");
        const tt = peek();
        if (tt.kind !== "word") return unexpected(tt, "a type");
        pos++;
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
            if (isWord(peek(), "PRECISION")) pos++;
            break;
          case "VARCHAR":
          case "CHAR": {
            target = "varchar";
            expectOp("(");
            const nt = peek();
            const n = nt.kind === "number" ? Number(nt.text) : NaN;
            if (!Number.isSafeInteger(n) || n < 1 || n > MAX_VARCHAR_LENGTH)
              fail(nt.pos, `VARCHAR needs a length from 1 to ${MAX_VARCHAR_LENGTH} ${at(nt)}.`);
            pos++;
            expectOp(")");
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
            return unexpected(tt, "INTEGER, SMALLINT, FLOAT, REAL, DOUBLE, VARCHAR(n), DATE or TIMESTAMP");
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
        if (!ok) fail(ot.pos, `Cannot cast a ${from} to ${tt.text} ${at(ot)}.`);
        const type: ValueType =
          target === "varchar" ? "string" : target === "date" || target === "timestamp" ? "date" : "number";
        return { kind: "cast", type, target, length, operand };
      }
    }
    const scalar = SCALARS.get(name);
    if (scalar === undefined) return fail(t.pos, `Unknown function '${excerpt(t.raw, 32)}' ${at(t)}.`);
    const args: { e: Expr; t: Token }[] = [];
    if (!isOp(peek(), ")")) {
      for (;;) {
        const at1 = peek();
        args.push({ e: needValue(parseOr(), at1), t: at1 });
        if (!isOp(peek(), ",")) break;
        pos++;
      }
    }
    if (args.length < scalar.min || args.length > scalar.max) {
      const n = scalar.min === scalar.max ? `${scalar.min}` : `${scalar.min} to ${scalar.max}`;
      fail(t.pos, `${name} takes ${n} argument${scalar.max === 1 ? "" : "s"} ${at(t)}.`);
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
        const typed = args.map((a) => need(a.e, "number", a.t, name));
        const [x, y] = typed;
        // POWER of two literals is judged here, as PostgreSQL judges it, before any SQL runs.
        if (scalar.name === "power" && x?.kind === "number" && y?.kind === "number") {
          const fault = powerFault(x.value, y.value);
          if (fault !== undefined) fail(t.pos, `${fault} ${at(t)}.`);
        }
        return { kind: "call", type: "number", name: scalar.name, args: typed };
      }
      case "char_length":
        return {
          kind: "call",
          type: "number",
          name: scalar.name,
          args: args.map((a) => need(a.e, "string", a.t, name)),
        };
      case "concat":
      case "lower":
      case "upper":
        return {
          kind: "call",
          type: "string",
          name: scalar.name,
          args: args.map((a) => need(a.e, "string", a.t, name)),
        };
      case "coalesce":
      case "nullif": {
        let type: ValueType = "null";
        const out: Expr[] = [];
        const first = args[0] as { e: Expr; t: Token };
        for (const a of args) {
          const [, e] = unify(first.e, a.e, a.t, name);
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
        return unexpected(t);
    }
  }

  const first = peek();
  const tree = parseOr();
  if (peek().kind !== "end") unexpected(peek());
  needBoolean(tree, first);
  return tree;
}

/** Every node of a tree, children after their parent (the tree is at most a few hundred levels deep). */
export function* nodes(e: Expr): Generator<Expr> {
  yield e;
  switch (e.kind) {
    case "compare":
      yield* nodes(e.left);
      yield* nodes(e.right);
      return;
    case "and":
    case "or":
      for (const p of e.parts) yield* nodes(p);
      return;
    case "not":
    case "negate":
    case "extract":
    case "cast":
    case "isNull":
      yield* nodes(e.operand);
      return;
    case "in":
      yield* nodes(e.operand);
      for (const p of e.list) yield* nodes(p);
      return;
    case "between":
      yield* nodes(e.operand);
      yield* nodes(e.low);
      yield* nodes(e.high);
      return;
    case "like":
      yield* nodes(e.operand);
      yield* nodes(e.pattern);
      return;
    case "arithmetic":
      yield* nodes(e.first);
      for (const r of e.rest) yield* nodes(r.operand);
      return;
    case "call":
      for (const a of e.args) yield* nodes(a);
      return;
    case "trim":
      if (e.chars) yield* nodes(e.chars);
      yield* nodes(e.operand);
      return;
    case "field":
    case "number":
    case "string":
    case "date":
    case "null":
    case "aggregate":
      return;
  }
}

/**
 * True when a where holds for every row whatever the row holds: literals compared to literals (`1=1`, what
 * clients send to mean "every row"), and AND/OR of such. Read as no filter, it lets an unfiltered count keep
 * SQLite's own shortcut instead of a test and a deadline call per row. Strings are only compared for equality,
 * which no collation changes; anything else (a field, a function, NULL) is left to the database.
 */
export function holdsForEveryRow(e: Expr): boolean {
  switch (e.kind) {
    case "and":
      return e.parts.every(holdsForEveryRow);
    case "or":
      // TRUE OR UNKNOWN is TRUE in SQL: one part that always holds is enough.
      return e.parts.some(holdsForEveryRow);
    case "compare": {
      const { left: a, right: b, op } = e;
      if (a.kind === "string" && b.kind === "string")
        return op === "=" ? a.value === b.value : op === "<>" && a.value !== b.value;
      if (a.kind !== "number" || b.kind !== "number") return false;
      const [x, y] = [a.value, b.value];
      return { "=": x === y, "<>": x !== y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y }[op];
    }
    default:
      return false;
  }
}
