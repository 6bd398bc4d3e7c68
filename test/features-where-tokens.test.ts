// The `where` tokenizer on its own: each kind of token with its text and position, the faults it hands to its
// caller with their positions, and a hostile text read in time linear in its length.
import { describe, expect, it } from "vitest";
import { describeToken, excerpt, type Token, tokenize } from "#shared/features/where-tokens.ts";

class Fault extends Error {
  readonly pos: number;

  constructor(pos: number, reason: string) {
    super(reason);
    this.pos = pos;
  }
}

const fail = (pos: number, reason: string): never => {
  throw new Fault(pos, reason);
};
const tokens = (input: string): Token[] => tokenize(input, fail);
const kinds = (input: string) => tokens(input).map((t) => [t.kind, t.text]);

/** The position and reason the tokenizer refuses a text with. */
function fault(input: string): { pos: number; reason: string } {
  try {
    tokenize(input, fail);
  } catch (e) {
    if (!(e instanceof Fault)) throw e;
    return { pos: e.pos, reason: e.message };
  }
  throw new Error(`accepted: ${input}`);
}

describe("where tokenizer", () => {
  it("reads words upper-cased with their spelling kept, and ends with an end token at the text's length", () => {
    expect(tokens("pop AND Name")).toEqual([
      { kind: "word", text: "POP", raw: "pop", pos: 0 },
      { kind: "word", text: "AND", raw: "AND", pos: 4 },
      { kind: "word", text: "NAME", raw: "Name", pos: 8 },
      { kind: "end", text: "", raw: "", pos: 12 },
    ]);
  });

  it("reads words of any script, astral characters included", () => {
    expect(kinds("Straße_1 $x 𝒳y")).toEqual([
      ["word", "STRASSE_1"],
      ["word", "$X"],
      ["word", "𝒳Y"],
      ["end", ""],
    ]);
  });

  it("reads strings and quoted names with their quote doubled inside, and N'' strings", () => {
    expect(tokens(`'it''s' "a ""b""" N'x'`)).toEqual([
      { kind: "string", text: "it's", raw: "", pos: 0 },
      { kind: "quoted", text: 'a "b"', raw: 'a "b"', pos: 8 },
      { kind: "string", text: "x", raw: "", pos: 18 },
      { kind: "end", text: "", raw: "", pos: 22 },
    ]);
  });

  it("reads numbers as written: integers, decimals, exponents", () => {
    expect(kinds("1 2.5 .5 3. 1e3 2E-2 7e+1")).toEqual([
      ["number", "1"],
      ["number", "2.5"],
      ["number", ".5"],
      ["number", "3."],
      ["number", "1e3"],
      ["number", "2E-2"],
      ["number", "7e+1"],
      ["end", ""],
    ]);
  });

  it("reads operators, two-character ones first, and != as <>", () => {
    expect(kinds("a<>b<=c>=d!=e=f<g>h+-*/(),").filter(([k]) => k === "op")).toEqual(
      ["<>", "<=", ">=", "<>", "=", "<", ">", "+", "-", "*", "/", "(", ")", ","].map((op) => ["op", op]),
    );
  });

  it.each([
    ["name = 'open", 7, "Unterminated string at position 8."],
    ['"open = 1', 0, "Unterminated quoted name at position 1."],
    ['"" = 1', 0, "Empty quoted name at position 1."],
    ["pop = 1e", 6, "Malformed number at position 7."],
    ["pop = 12abc", 6, "Malformed number at position 7."],
    ["pop = 1.2.3", 6, "Malformed number at position 7."],
    ["pop = 1; DROP", 7, "Semicolons are not allowed (position 8)."],
    ["pop = 1 -- x", 8, "Comments are not allowed (position 9)."],
    ["pop = 1 /* x */", 8, "Comments are not allowed (position 9)."],
    ["name = 'a\u0000b'", 9, "A string cannot hold the NUL character (position 10)."],
    ["pop # 1", 4, "Unexpected character '#' at position 5."],
    ["pop \u0007 1", 4, "Unexpected character '?' at position 5."],
  ])("refuses %j at its position", (input, pos, reason) => {
    expect(fault(input)).toEqual({ pos, reason });
  });

  it("describes a token as an error names it, in a short printable excerpt", () => {
    const [word, text, quoted, op, end] = tokens(`Name 'a\tb' "c" <=`);
    expect([word, text, quoted, op, end].map((t) => describeToken(t as Token))).toEqual([
      "'Name' at position 1",
      "''a?b'' at position 6",
      `'"c"' at position 12`,
      "'<=' at position 16",
      "the end of the text",
    ]);
    expect(excerpt("x".repeat(30))).toBe(`${"x".repeat(24)}…`);
  });

  it("reads a long text in time linear in its length", () => {
    const time = (input: string) => {
      const start = performance.now();
      tokenize(input, fail);
      return performance.now() - start;
    };
    const unit = "a = 'b''c' OR \"d\"\"e\" <> 1.5e3 AND ";
    time(unit.repeat(1_000));
    const small = Math.min(time(unit.repeat(4_000)), time(unit.repeat(4_000)));
    const large = Math.min(time(unit.repeat(16_000)), time(unit.repeat(16_000)));
    // Four times the text: about four times the time, far from the sixteen a quadratic reading would take.
    expect(large).toBeLessThan(small * 10 + 20);
  });
});
