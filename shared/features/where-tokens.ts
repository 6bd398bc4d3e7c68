// The tokenizer of the `where` (and `having`) text: one pass over the characters, each read once (quoted runs
// with indexOf), so its time is linear in the input. Whoever sends the request chooses the text: every fault is
// handed to the caller's `fail` with its position and a reason that repeats at most a short, printable excerpt.

/** The longest excerpt of the input an error message repeats. */
const EXCERPT = 24;

/** A short, printable excerpt of untrusted text, for error messages. */
export function excerpt(text: string, max = EXCERPT): string {
  const chars = Array.from(text.slice(0, max * 2)).slice(0, max);
  const clean = chars.map((c) => (c < " " || c === "\u007f" ? "?" : c)).join("");
  return chars.length < Array.from(text.slice(0, max * 2 + 1)).length ? `${clean}…` : clean;
}

export type TokenKind = "number" | "string" | "word" | "quoted" | "op" | "end";
export interface Token {
  readonly kind: TokenKind;
  /** Words: upper-cased; quoted identifiers and strings: their value; operators and numbers: as written. */
  readonly text: string;
  /** Words: as written. */
  readonly raw: string;
  readonly pos: number;
}

const isSpace = (c: string) => c.trim() === "";
const isDigit = (c: string) => c >= "0" && c <= "9";
const WORD_CHAR = /^[\p{L}\p{N}\p{M}_$]$/u;
const isWordChar = (c: string) => WORD_CHAR.test(c);

/**
 * The tokens of a text, ending with one of kind `end` (at the text's length). Whitespace separates; strings
 * (`'…'`, `N'…'`) and quoted names (`"…"`) double their quote inside; `!=` reads as `<>`. Semicolons, comments,
 * malformed numbers, NUL in a string and characters of no token are handed to `fail`.
 */
export function tokenize(input: string, fail: (pos: number, reason: string) => never): Token[] {
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

export const isWord = (t: Token, word: string): boolean => t.kind === "word" && t.text === word;
export const isOp = (t: Token, op: string): boolean => t.kind === "op" && t.text === op;

/** A token as an error message names it: as written (a short excerpt), with its position (1-based). */
export function describeToken(t: Token): string {
  if (t.kind === "end") return "the end of the text";
  const shown =
    t.kind === "word" ? t.raw : t.kind === "string" ? `'${t.text}'` : t.kind === "quoted" ? `"${t.text}"` : t.text;
  return `'${excerpt(shown)}' at position ${t.pos + 1}`;
}
