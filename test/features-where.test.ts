// The `where` grammar: each rule read into its tree, each refusal with its reason, and the caps that keep a
// hostile text cheap to refuse (length, nesting, time linear in the input).
import { describe, expect, it } from "vitest";
import { ApiError } from "#shared/errors.ts";
import { fieldByName } from "#shared/features/schema.ts";
import { type Expr, MAX_WHERE_DEPTH, MAX_WHERE_LENGTH, parseDateText, parseWhere } from "#shared/features/where.ts";
import { citiesSchema } from "./helpers/feature-layer.ts";

const NOW = Date.UTC(2024, 4, 6, 7, 8, 9, 10);
const parse = (text: string, aggregates = false) =>
  parseWhere(text, citiesSchema, { now: NOW, aggregates, parameter: aggregates ? "having" : "where" });

const f = (name: string): Expr => {
  const field = fieldByName(citiesSchema, name);
  if (field === undefined) throw new Error(name);
  const type = field.type === "esriFieldTypeString" ? "string" : /Date/.test(field.type) ? "date" : "number";
  return { kind: "field", type, field };
};
const n = (value: number): Expr => ({ kind: "number", type: "number", value });
const s = (value: string): Expr => ({ kind: "string", type: "string", value });
const d = (value: number): Expr => ({ kind: "date", type: "date", value });
const cmp = (op: "=" | "<>" | "<" | "<=" | ">" | ">=", left: Expr, right: Expr): Expr => ({
  kind: "compare",
  type: "boolean",
  op,
  left,
  right,
});

/** The details of the refusal of a text. */
function refusal(text: string, aggregates = false): string[] {
  try {
    parse(text, aggregates);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    expect(e.code).toBe(400);
    expect(e.message).toBe("Unable to complete operation.");
    return [...e.details];
  }
  throw new Error(`accepted: ${text}`);
}
const reason = (text: string, aggregates = false) => {
  const details = refusal(text, aggregates);
  expect(details[0]).toBe(aggregates ? "'having' parameter is invalid" : "'where' parameter is invalid");
  return details[1] ?? "";
};

describe("where: accepted rules and their trees", () => {
  it("reads a blank text as no filter, and 1=1", () => {
    expect(parse("")).toBeUndefined();
    expect(parse("   ")).toBeUndefined();
    expect(parse("1=1")).toEqual(cmp("=", n(1), n(1)));
  });

  it("reads each comparison operator, != as <>", () => {
    for (const op of ["=", "<>", "<", "<=", ">", ">="] as const)
      expect(parse(`pop ${op} 5`)).toEqual(cmp(op, f("pop"), n(5)));
    expect(parse("pop != 5")).toEqual(cmp("<>", f("pop"), n(5)));
  });

  it("reads AND, OR, NOT with SQL precedence, flattening chains", () => {
    expect(parse("pop = 1 OR pop = 2 AND NOT name = 'a' OR area > 3")).toEqual({
      kind: "or",
      type: "boolean",
      parts: [
        cmp("=", f("pop"), n(1)),
        {
          kind: "and",
          type: "boolean",
          parts: [cmp("=", f("pop"), n(2)), { kind: "not", type: "boolean", operand: cmp("=", f("name"), s("a")) }],
        },
        cmp(">", f("area"), n(3)),
      ],
    });
    expect(parse("(pop = 1 OR pop = 2) AND area > 3")).toMatchObject({ kind: "and", parts: [{ kind: "or" }, {}] });
  });

  it("reads keywords and field names in any case, and quoted names", () => {
    expect(parse("POP = 1 and Name is not null")).toEqual(parse('"pop" = 1 AND "NAME" IS NOT NULL'));
  });

  it("reads IN and NOT IN lists", () => {
    expect(parse("pop IN (1, 2, -3)")).toEqual({
      kind: "in",
      type: "boolean",
      operand: f("pop"),
      list: [n(1), n(2), n(-3)],
      negated: false,
    });
    expect(parse("name not in ('a')")).toMatchObject({ kind: "in", negated: true, list: [s("a")] });
  });

  it("reads BETWEEN and NOT BETWEEN, its AND not taken for a conjunction", () => {
    expect(parse("pop BETWEEN 1 AND 2 AND area > 0")).toEqual({
      kind: "and",
      type: "boolean",
      parts: [
        { kind: "between", type: "boolean", operand: f("pop"), low: n(1), high: n(2), negated: false },
        cmp(">", f("area"), n(0)),
      ],
    });
    expect(parse("pop NOT BETWEEN 1 AND 2")).toMatchObject({ kind: "between", negated: true });
  });

  it("reads LIKE, NOT LIKE and ESCAPE", () => {
    expect(parse("name LIKE 'P%'")).toEqual({
      kind: "like",
      type: "boolean",
      operand: f("name"),
      pattern: s("P%"),
      escape: undefined,
      negated: false,
    });
    expect(parse("name NOT LIKE '%!%%' ESCAPE '!'")).toMatchObject({ kind: "like", negated: true, escape: "!" });
    // An escaped escape character is no dangling one.
    expect(parse("name LIKE 'a!!' ESCAPE '!'")).toMatchObject({ kind: "like", escape: "!" });
    expect(parse("POWER(2, -1074) > 0 AND SUBSTRING(name FROM -2147483648 FOR 0) = ''")).toMatchObject({
      kind: "and",
    });
  });

  it("reads IS NULL and IS NOT NULL", () => {
    expect(parse("name IS NULL")).toEqual({ kind: "isNull", type: "boolean", operand: f("name"), negated: false });
    expect(parse("name IS NOT NULL")).toMatchObject({ negated: true });
  });

  it("reads arithmetic with precedence, unary minus and parentheses", () => {
    expect(parse("pop + 2 * area - -1 > 0")).toEqual(
      cmp(
        ">",
        {
          kind: "arithmetic",
          type: "number",
          first: f("pop"),
          rest: [
            {
              op: "+",
              operand: { kind: "arithmetic", type: "number", first: n(2), rest: [{ op: "*", operand: f("area") }] },
            },
            { op: "-", operand: n(-1) },
          ],
        },
        n(0),
      ),
    );
    expect(parse("-(pop) / 2 = 1")).toMatchObject({
      left: { kind: "arithmetic", first: { kind: "negate", operand: f("pop") }, rest: [{ op: "/" }] },
    });
    expect(parse("(pop + 1) * 2 = 4")).toMatchObject({ left: { kind: "arithmetic", first: { kind: "arithmetic" } } });
  });

  it("reads strings with doubled quotes, N'' strings and numbers in every form", () => {
    expect(parse("name = 'O''Hare'")).toEqual(cmp("=", f("name"), s("O'Hare")));
    expect(parse("name = N'Zürich'")).toEqual(cmp("=", f("name"), s("Zürich")));
    expect(parse("area = 1.5e2")).toEqual(cmp("=", f("area"), n(150)));
    expect(parse("area = .5")).toEqual(cmp("=", f("area"), n(0.5)));
    expect(parse("area = 2.")).toEqual(cmp("=", f("area"), n(2)));
  });

  it("reads date and timestamp literals, CURRENT_DATE, CURRENT_TIMESTAMP, and strings compared with dates", () => {
    expect(parse("founded > date '2001-03-04'")).toEqual(cmp(">", f("founded"), d(Date.UTC(2001, 2, 4))));
    expect(parse("founded > TIMESTAMP '2001-03-04 05:06:07.25'")).toEqual(
      cmp(">", f("founded"), d(Date.UTC(2001, 2, 4, 5, 6, 7, 250))),
    );
    expect(parse("founded < CURRENT_TIMESTAMP")).toEqual(cmp("<", f("founded"), d(NOW)));
    expect(parse("day = current_date")).toEqual(cmp("=", f("day"), d(Date.UTC(2024, 4, 6))));
    expect(parse("founded >= '2001-03-04 05:06:07'")).toEqual(
      cmp(">=", f("founded"), d(Date.UTC(2001, 2, 4, 5, 6, 7))),
    );
    expect(parse("founded IN ('2001-03-04', date '2002-01-01')")).toMatchObject({
      list: [{ kind: "date" }, { kind: "date" }],
    });
  });

  it("reads EXTRACT of each unit", () => {
    for (const unit of ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"]) {
      expect(parse(`EXTRACT(${unit} FROM founded) = 1`)).toEqual(
        cmp("=", { kind: "extract", type: "number", unit: unit.toLowerCase() as "year", operand: f("founded") }, n(1)),
      );
    }
  });

  it("reads the numeric functions", () => {
    const call = (name: string, ...args: Expr[]) => ({ kind: "call", type: "number", name, args });
    expect(parse("ABS(pop) = 1")).toMatchObject({ left: call("abs", f("pop")) });
    expect(parse("CEILING(area) = 1")).toMatchObject({ left: call("ceiling", f("area")) });
    expect(parse("FLOOR(area) = 1")).toMatchObject({ left: call("floor", f("area")) });
    expect(parse("LOG(area) = 1")).toMatchObject({ left: call("log", f("area")) });
    expect(parse("LOG10(area) = 1")).toMatchObject({ left: call("log10", f("area")) });
    expect(parse("POWER(area, 2) = 1")).toMatchObject({ left: call("power", f("area"), n(2)) });
    expect(parse("ROUND(area, 1) = 1")).toMatchObject({ left: call("round", f("area"), n(1)) });
    expect(parse("ROUND(area) = 1")).toMatchObject({ left: call("round", f("area")) });
    expect(parse("TRUNCATE(area, 1) = 1")).toMatchObject({ left: call("truncate", f("area"), n(1)) });
    expect(parse("MOD(pop, 7) = 1")).toMatchObject({ left: call("mod", f("pop"), n(7)) });
    expect(parse("CHAR_LENGTH(name) = 1")).toMatchObject({ left: call("char_length", f("name")) });
    expect(parse("POSITION('a' IN name) = 1")).toMatchObject({ left: call("position", s("a"), f("name")) });
  });

  it("reads the string functions", () => {
    const call = (name: string, ...args: Expr[]) => ({ kind: "call", type: "string", name, args });
    expect(parse("CONCAT(name, kind) = 'x'")).toMatchObject({ left: call("concat", f("name"), f("kind")) });
    expect(parse("LOWER(name) = 'x'")).toMatchObject({ left: call("lower", f("name")) });
    expect(parse("UPPER(name) = 'x'")).toMatchObject({ left: call("upper", f("name")) });
    expect(parse("SUBSTRING(name FROM 2 FOR 3) = 'x'")).toMatchObject({
      left: call("substring", f("name"), n(2), n(3)),
    });
    expect(parse("SUBSTRING(name FROM 2) = 'x'")).toMatchObject({ left: call("substring", f("name"), n(2)) });
    expect(parse("SUBSTRING(name, 2, 3) = 'x'")).toMatchObject({ left: call("substring", f("name"), n(2), n(3)) });
  });

  it("reads TRIM in its forms", () => {
    const trim = (side: string, chars: Expr | undefined, operand: Expr) => ({
      kind: "trim",
      type: "string",
      side,
      chars,
      operand,
    });
    expect(parse("TRIM(name) = 'x'")).toMatchObject({ left: trim("both", undefined, f("name")) });
    expect(parse("TRIM(LEADING FROM name) = 'x'")).toMatchObject({ left: trim("leading", undefined, f("name")) });
    expect(parse("TRIM(TRAILING 'x' FROM name) = 'x'")).toMatchObject({ left: trim("trailing", s("x"), f("name")) });
    expect(parse("TRIM(BOTH 'x' FROM name) = 'x'")).toMatchObject({ left: trim("both", s("x"), f("name")) });
    expect(parse("TRIM('x' FROM name) = 'x'")).toMatchObject({ left: trim("both", s("x"), f("name")) });
  });

  it("reads CAST to each type", () => {
    const cast = (target: string, type: string, length?: number) => ({ kind: "cast", target, type, length });
    expect(parse("CAST(area AS INT) = 1")).toMatchObject({ left: cast("integer", "number") });
    expect(parse("CAST(area AS INTEGER) = 1")).toMatchObject({ left: cast("integer", "number") });
    expect(parse("CAST(area AS SMALLINT) = 1")).toMatchObject({ left: cast("integer", "number") });
    expect(parse("CAST(name AS FLOAT) = 1")).toMatchObject({ left: cast("float", "number") });
    expect(parse("CAST(name AS REAL) = 1")).toMatchObject({ left: cast("float", "number") });
    expect(parse("CAST(name AS DOUBLE PRECISION) = 1")).toMatchObject({ left: cast("float", "number") });
    expect(parse("CAST(pop AS VARCHAR(3)) = '1'")).toMatchObject({ left: cast("varchar", "string", 3) });
    expect(parse("CAST(founded AS DATE) = date '2001-03-04'")).toMatchObject({ left: cast("date", "date") });
    expect(parse("CAST(name AS TIMESTAMP) > founded")).toMatchObject({ left: cast("timestamp", "date") });
  });

  it("reads COALESCE and NULLIF with their types", () => {
    expect(parse("COALESCE(name, kind, 'x') = 'x'")).toMatchObject({
      left: { kind: "call", name: "coalesce", type: "string" },
    });
    expect(parse("NULLIF(pop, 0) > 1")).toMatchObject({ left: { kind: "call", name: "nullif", type: "number" } });
    expect(parse("COALESCE(NULL, pop) > 1")).toMatchObject({ left: { type: "number" } });
  });

  it("keeps a field named like a function or a date keyword a field when not called", () => {
    expect(parse("day = date '2001-03-04'")).toEqual(cmp("=", f("day"), d(Date.UTC(2001, 2, 4))));
  });

  it("reads aggregates in having only", () => {
    expect(parse("COUNT(*) > 2 AND SUM(pop) > 1000", true)).toMatchObject({
      parts: [
        { left: { kind: "aggregate", name: "count", operand: undefined } },
        { left: { kind: "aggregate", name: "sum", operand: { name: "pop" } } },
      ],
    });
    expect(parse("MAX(name) = 'x' AND MIN(founded) > date '2000-01-01'", true)).toMatchObject({ kind: "and" });
    expect(reason("COUNT(pop) > 2")).toMatch(/only allowed in 'having'/);
    expect(reason("SUM(name) > 2", true)).toMatch(/SUM needs a number/);
  });
});

describe("where: refusals and their reasons", () => {
  const cases: [string, RegExp][] = [
    ["nosuch = 1", /Unknown field 'nosuch' at position 1/],
    ['"nosuch" = 1', /Unknown field 'nosuch'/],
    ["photo IS NULL", /field 'photo' cannot be used/],
    ["pop = 1; DROP TABLE cities", /Semicolons are not allowed \(position 8\)/],
    ["pop = 1 -- comment", /Comments are not allowed/],
    ["pop = 1 /* c */", /Comments are not allowed/],
    ["name = 'open", /Unterminated string at position 8/],
    ['"open = 1', /Unterminated quoted name/],
    ["pop = 1e999", /Number out of range/],
    ["pop = 99999999999999999999", /Integer too large to be exact/],
    ["pop = 12abc", /Malformed number/],
    ["pop = 1.2.3", /Malformed number/],
    ["pop = 1e", /Malformed number/],
    ["pop IN (SELECT objectid FROM cities)", /Subqueries are not supported/],
    ["pop = (SELECT 1)", /Subqueries are not supported/],
    ["pop", /Expected a condition at position 1/],
    ["pop = 1 AND area", /Expected a condition at position 13/],
    ["pop = 'x'", /cannot compare a number with a string/],
    ["name > 5", /cannot compare a string with a number/],
    ["name LIKE 5", /LIKE needs a string, not a number/],
    ["pop LIKE 'x'", /LIKE needs a string, not a number/],
    ["name LIKE 'x' ESCAPE 'ab'", /ESCAPE needs a string of one character/],
    // SQLite reads NUL as the end of the text, PostgreSQL's text cannot hold it: no string may.
    ["name LIKE 'x' ESCAPE '\u0000'", /A string cannot hold the NUL character \(position 23\)/],
    ["name = 'a\u0000'", /A string cannot hold the NUL character \(position 10\)/],
    ["name = N'''\u0000'", /A string cannot hold the NUL character \(position 12\)/],
    // Arguments PostgreSQL refuses, judged here when they are literals (the same words as at run time).
    ["POWER(10, 400) > 1", /^A number in the expression is out of range at position 1\.$/],
    ["POWER(10, -400) > 1", /out of range at position 1/],
    ["POWER(0, -1) > 1", /POWER has no real result/],
    ["POWER(-8, 0.5) > 1", /POWER has no real result/],
    ["pop > 1 AND SUBSTRING(name, 1e300, 1) = 'a'", /out of range at position 13/],
    ["SUBSTRING(name FROM 1 FOR 2147483647.5) = 'a'", /out of range/],
    ["SUBSTRING(name FROM 1 FOR -1) = 'a'", /SUBSTRING was given a negative length at position 1/],
    ["name LIKE '!' ESCAPE '!'", /A LIKE pattern cannot end with its ESCAPE character at position 11/],
    ["name NOT LIKE 'a!!!' ESCAPE '!'", /cannot end with its ESCAPE character/],
    ["name + 1 = 2", /Arithmetic needs a number, not a string/],
    ["pop + name = 2", /Arithmetic needs a number, not a string/],
    ["-name = 'x'", /Unary '-' needs a number/],
    ["founded > date '2001-02-30'", /Invalid date '2001-02-30'/],
    ["founded > date '2001-02-03 10:00:00'", /Invalid date/],
    ["founded > timestamp 'yesterday'", /Invalid timestamp/],
    ["founded > 'soon'", /Invalid date or timestamp 'soon'/],
    ["founded > 5", /cannot compare a date with a number/],
    ["EXTRACT(WEEK FROM founded) = 1", /Expected YEAR, MONTH, DAY, HOUR, MINUTE or SECOND/],
    ["EXTRACT(YEAR FROM name) = 1", /EXTRACT needs a date/],
    ["NOSUCH(pop) = 1", /Unknown function 'NOSUCH'/],
    ["ABS(pop, 2) = 1", /ABS takes 1 argument/],
    ["POWER(pop) = 1", /POWER takes 2 arguments/],
    ["UPPER(pop) = 'x'", /UPPER needs a string/],
    ["CAST(founded AS VARCHAR(3)) = 'x'", /Cannot cast a date to VARCHAR/],
    ["CAST(pop AS DATE) = date '2001-01-01'", /Cannot cast a number to DATE/],
    ["CAST(pop AS BLOB) = 1", /Expected INTEGER/],
    ["CAST(pop AS VARCHAR(0)) = '1'", /VARCHAR needs a length/],
    ["pop = 1 pop = 2", /Unexpected 'pop' at position 9/],
    ["pop = ", /Expected a value but found the end of the text/],
    ["(pop = 1", /Expected '\)' but found the end/],
    ["pop = 1)", /Unexpected '\)' at position 8/],
    ["pop NOT = 1", /Expected IN, LIKE or BETWEEN/],
    ["pop = 1 = 1", /Unexpected '='/],
    ["pop IS 1", /Expected NULL/],
    ["pop BETWEEN 1 OR 2", /Expected AND/],
    ["pop IN ()", /Expected a value/],
    ["pop = #", /Unexpected character '#' at position 7/],
    ["(pop = 1) + 1 = 2", /needs a number, not a boolean|Expected a value, not a condition/],
    ["TRIM(LEADING name) = 'x'", /Expected FROM/],
    ["AND = 1", /Expected a value but found 'AND'/],
  ];
  it.each(cases)("refuses %s", (text, pattern) => {
    expect(reason(text)).toMatch(pattern);
  });

  it("refuses a having that names an unknown field inside an aggregate", () => {
    expect(reason("COUNT(nosuch) > 1", true)).toMatch(/Unknown field 'nosuch'/);
  });

  it("repeats no more than a short excerpt of the input", () => {
    const long = "x".repeat(5000);
    for (const text of [
      `${long} = 1`,
      `pop = '${long}`,
      `"${long}" = 1`,
      `name = '${long}' AND ${long}`,
      `${long}(1) = 1`,
    ]) {
      for (const detail of refusal(text)) expect(detail.length).toBeLessThan(160);
    }
  });

  it("replaces control characters in excerpts", () => {
    expect(reason("x\u0001y = 1").includes("\u0001")).toBe(false);
  });
});

describe("where: caps", () => {
  it("refuses a text over the length cap before reading it", () => {
    expect(reason(`${"(".repeat(100_000)}1=1${")".repeat(100_000)}`)).toMatch(`longer than ${MAX_WHERE_LENGTH}`);
    const fits = `pop IN (${Array.from({ length: 3000 }, (_, i) => i).join(",")})`;
    expect(fits.length).toBeLessThan(MAX_WHERE_LENGTH);
    expect(parse(fits)).toMatchObject({ kind: "in" });
  });

  it("refuses nesting past the cap, quickly, for every nesting form", () => {
    const deep = (open: string, close: string, inner: string, levels: number) =>
      `${open.repeat(levels)}${inner}${close.repeat(levels)}`;
    const forms = [
      deep("(", ")", "pop = 1", 5000),
      deep("NOT ", "", "pop = 1", 3000),
      `pop = ${deep("- ", "", "1", 5000)}`,
      `pop = ${deep("ABS(", ")", "1", 3000)}`,
      `name = ${deep("LOWER(", ")", "'a'", 2000)}`,
      `pop IN ${deep("(", ")", "1", 5000)}`,
    ];
    for (const text of forms) {
      expect(text.length).toBeLessThanOrEqual(MAX_WHERE_LENGTH);
      const started = performance.now();
      expect(reason(text)).toMatch(`nests more than ${MAX_WHERE_DEPTH} levels`);
      expect(performance.now() - started).toBeLessThan(200);
    }
    expect(parse(deep("(", ")", "pop = 1", MAX_WHERE_DEPTH))).toEqual(cmp("=", f("pop"), n(1)));
    expect(reason(deep("(", ")", "pop = 1", MAX_WHERE_DEPTH + 1))).toMatch(/nests more than/);
  });

  it("counts each operator of an arithmetic chain as a level: SQL nests them (SQLite refuses 1000 levels)", () => {
    const chain = (operators: number) => Array.from({ length: operators + 1 }, () => "1").join(" + ");
    expect(parse(`pop = ${chain(MAX_WHERE_DEPTH)}`)).toMatchObject({ kind: "compare", right: { kind: "arithmetic" } });
    expect(reason(`pop = ${chain(MAX_WHERE_DEPTH + 1)}`)).toMatch(`nests more than ${MAX_WHERE_DEPTH} levels`);
    expect(reason(`pop = ${Array.from({ length: 2500 }, () => "pop").join(" * ")}`)).toMatch(/nests more than/);
    // Nested in parentheses, the levels add up; side by side (each chain ended), they do not.
    const half = MAX_WHERE_DEPTH / 2;
    expect(reason(`pop = ${"(".repeat(half + 1)}${chain(half)}${")".repeat(half + 1)}`)).toMatch(/nests more than/);
    expect(parse(Array.from({ length: 50 }, () => `pop = ${chain(MAX_WHERE_DEPTH)}`).join(" OR "))).toMatchObject({
      kind: "or",
    });
  });

  it("takes time linear in the input", () => {
    // The worst shapes for a parser that backtracks or rescans: long chains, long strings with quotes, long lists.
    const shapes = (k: number) => [
      Array.from({ length: k }, (_, i) => `pop = ${i}`).join(" OR "),
      `name = '${"''".repeat(k * 4)}'`,
      Array.from({ length: k / 40 }, () => `pop = ${Array.from({ length: 40 }, () => "1").join(" + ")}`).join(" OR "),
      `name LIKE '${"%a".repeat(k * 2)}'`,
    ];
    const once = (texts: string[]) => {
      const started = performance.now();
      for (const t of texts) parse(t);
      return performance.now() - started;
    };
    const small = shapes(120);
    const large = shapes(1200);
    for (const t of large) expect(t.length).toBeLessThanOrEqual(MAX_WHERE_LENGTH);
    once(small); // warm up
    // The best of rounds taken in turns, so a stretch of a busy machine slows both sizes alike rather than one.
    let bestSmall = Infinity;
    let bestLarge = Infinity;
    for (let r = 0; r < 15; r++) {
      bestSmall = Math.min(bestSmall, once(small));
      bestLarge = Math.min(bestLarge, once(large));
    }
    const ratio = bestLarge / Math.max(bestSmall, 0.05);
    // Ten times the input: about ten times the time; a quadratic parser would take a hundred.
    expect(ratio).toBeLessThan(40);
  });
});

describe("parseDateText", () => {
  it("reads dates and timestamps, refusing impossible ones", () => {
    expect(parseDateText("2020-02-29")).toBe(Date.UTC(2020, 1, 29));
    expect(parseDateText("2020-02-29T10:11:12.5Z")).toBe(Date.UTC(2020, 1, 29, 10, 11, 12, 500));
    expect(parseDateText("2020-02-29 10:11")).toBe(Date.UTC(2020, 1, 29, 10, 11));
    expect(parseDateText("2021-02-29")).toBeUndefined();
    expect(parseDateText("2021-13-01")).toBeUndefined();
    expect(parseDateText("2021-01-01 24:00:00")).toBeUndefined();
    expect(parseDateText("01/02/2021")).toBeUndefined();
  });
});
