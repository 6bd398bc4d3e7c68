// The `q` parameter of a portal item search (/sharing/rest/search): parsed into a small AST, evaluated against an
// item, and mined for the equality constraints that let a caller read one index instead of scanning. Whoever
// sends the request chooses q, so the parser is one hand-written pass with hard caps on length, terms and
// nesting, and evaluation stays linear in the query and the item's text.

export type SearchField =
  | "owner"
  | "type"
  | "tags"
  | "title"
  | "id"
  | "orgid"
  | "access"
  | "typekeywords"
  | "description"
  | "snippet"
  | "group";

export type Query =
  | { readonly kind: "all" }
  | { readonly kind: "term"; readonly field: SearchField | undefined; readonly value: string; readonly phrase: boolean }
  | { readonly kind: "and"; readonly parts: readonly Query[] }
  | { readonly kind: "or"; readonly parts: readonly Query[] }
  | { readonly kind: "not"; readonly part: Query };

/** A q the search cannot run; the message is meant for whoever wrote q. */
export class QueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "QueryError";
  }
}

export interface Searchable {
  readonly id: string;
  readonly owner: string;
  readonly orgId: string;
  readonly title: string;
  readonly type: string;
  readonly tags: readonly string[];
  readonly typeKeywords: readonly string[];
  readonly access: string;
  readonly description: string;
  readonly snippet: string;
  /** The groups an item is shared with (`group:<id>`). */
  readonly groups?: readonly string[];
}

const MAX_LENGTH = 2048;
const MAX_TERMS = 64;
const MAX_DEPTH = 16;

const ALL: Query = Object.freeze({ kind: "all" });

// A Map rather than an object literal, so that names like `constructor` or `__proto__` are simply unknown.
const FIELDS = new Map<string, SearchField>(
  (
    [
      "owner",
      "type",
      "tags",
      "title",
      "id",
      "orgid",
      "access",
      "typekeywords",
      "description",
      "snippet",
      "group",
    ] as const
  ).map((f) => [f, f]),
);

type Token =
  | { readonly kind: "(" | ")" | "AND" | "OR" | "NOT"; readonly field?: SearchField }
  | {
      readonly kind: "term";
      readonly field: SearchField | undefined;
      readonly value: string;
      readonly phrase: boolean;
    };

/** Parses q; an empty q (or `*`) matches every item. Throws QueryError when q cannot be run. */
export function parseQuery(q: string): Query {
  if (q.length > MAX_LENGTH) throw new QueryError(`The search query 'q' is longer than ${MAX_LENGTH} characters.`);
  const tokens = tokenize(q);
  if (tokens.length === 0) return ALL;
  let pos = 0;

  const tooDeep = () => new QueryError(`The search query 'q' nests more than ${MAX_DEPTH} levels deep.`);
  const unbalanced = () => new QueryError("Unbalanced parentheses in 'q'.");
  const expectedTerm = () => {
    const prev = tokens[pos - 1];
    if (prev === undefined) return new QueryError("Expected a search term at the start of 'q'.");
    const text = prev.kind === "(" && prev.field !== undefined ? `${prev.field}:(` : prev.kind;
    return new QueryError(`Expected a search term after '${text}' in 'q'.`);
  };

  // Precedence is NOT > AND > OR. Adjacent terms with no operator between them are ANDed: ArcGIS ranks such
  // queries by relevance (closer to OR), but a filter whose result grows as the user types more words is
  // surprising, and AND lets the caller narrow the candidates by index.
  function parseOr(depth: number, field: SearchField | undefined): Query {
    const first = parseAnd(depth, field);
    const parts = [first];
    while (tokens[pos]?.kind === "OR") {
      pos++;
      parts.push(parseAnd(depth, field));
    }
    return parts.length === 1 ? first : { kind: "or", parts };
  }

  function parseAnd(depth: number, field: SearchField | undefined): Query {
    const first = parseUnary(depth, field);
    const parts = [first];
    for (;;) {
      const next = tokens[pos]?.kind;
      if (next === "AND") pos++;
      else if (next !== "term" && next !== "(" && next !== "NOT") break;
      parts.push(parseUnary(depth, field));
    }
    return parts.length === 1 ? first : { kind: "and", parts };
  }

  // NOT counts towards the depth like a parenthesis: both deepen the AST that matches() recurses over.
  function parseUnary(depth: number, field: SearchField | undefined): Query {
    if (tokens[pos]?.kind !== "NOT") return parsePrimary(depth, field);
    if (depth >= MAX_DEPTH) throw tooDeep();
    pos++;
    return { kind: "not", part: parseUnary(depth + 1, field) };
  }

  function parsePrimary(depth: number, field: SearchField | undefined): Query {
    const token = tokens[pos];
    if (token === undefined) throw expectedTerm();
    if (token.kind === "term") {
      pos++;
      if (token.field !== undefined && field !== undefined) {
        throw new QueryError(`The field '${token.field}' cannot be used inside '${field}:(...)' in 'q'.`);
      }
      if (!token.phrase && isAllStars(token.value)) return ALL;
      return { kind: "term", field: token.field ?? field, value: token.value, phrase: token.phrase };
    }
    if (token.kind === "(") {
      if (depth >= MAX_DEPTH) throw tooDeep();
      if (token.field !== undefined && field !== undefined) {
        throw new QueryError(`The field '${token.field}' cannot be used inside '${field}:(...)' in 'q'.`);
      }
      pos++;
      if (tokens[pos]?.kind === ")") throw new QueryError("Empty parentheses in 'q'.");
      const inner = parseOr(depth + 1, token.field ?? field);
      if (tokens[pos]?.kind !== ")") throw unbalanced();
      pos++;
      return inner;
    }
    if (token.kind === ")" && depth === 0) throw unbalanced();
    throw expectedTerm();
  }

  const query = parseOr(0, undefined);
  // parseOr stops early only at a `)` nothing opened.
  if (pos < tokens.length) throw unbalanced();
  return query;
}

function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let terms = 0;
  const pushTerm = (field: SearchField | undefined, value: string, phrase: boolean) => {
    if (++terms > MAX_TERMS) throw new QueryError(`The search query 'q' has more than ${MAX_TERMS} terms.`);
    tokens.push({ kind: "term", field, value, phrase });
  };
  // Returns the index just past the closing quote; indexOf scans each character once, so this stays linear.
  const readPhrase = (open: number, field: SearchField | undefined): number => {
    const close = q.indexOf('"', open + 1);
    if (close < 0) throw new QueryError("Unterminated quoted phrase in 'q'.");
    const value = q.slice(open + 1, close);
    if (value.trim() === "") throw new QueryError("Empty quoted phrase in 'q'.");
    pushTerm(field, value, true);
    return close + 1;
  };

  let i = 0;
  while (i < q.length) {
    const c = q.charAt(i);
    if (isSpace(c)) {
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c });
      i++;
    } else if (c === '"') {
      i = readPhrase(i, undefined);
    } else {
      const start = i;
      while (i < q.length && !isDelimiter(q.charAt(i))) i++;
      const word = q.slice(start, i);
      if (word === "AND" || word === "OR" || word === "NOT") {
        tokens.push({ kind: word });
        continue;
      }
      const colon = word.indexOf(":");
      const name = word.slice(0, colon);
      // Only an identifier before the colon names a field, so free text such as `10:30` stays free text.
      if (colon <= 0 || !isIdentifier(name)) {
        pushTerm(undefined, word, false);
        continue;
      }
      const field = FIELDS.get(name.toLowerCase());
      if (field === undefined) throw new QueryError(`Unknown search field '${name}'.`);
      const value = word.slice(colon + 1);
      // `field: value` (a space after the colon, as ArcGIS REST JS writes `id: <id> AND group: <id>`).
      if (value === "") while (i < q.length && isSpace(q.charAt(i))) i++;
      if (value !== "") pushTerm(field, value, false);
      else if (q.charAt(i) === '"') i = readPhrase(i, field);
      else if (q.charAt(i) === "(") {
        tokens.push({ kind: "(", field });
        i++;
      } else {
        const from = i;
        while (i < q.length && !isDelimiter(q.charAt(i))) i++;
        const next = q.slice(from, i);
        if (next === "" || next === "AND" || next === "OR" || next === "NOT") {
          throw new QueryError(`Missing a value after '${word}' in 'q'.`);
        }
        pushTerm(field, next, false);
      }
    }
  }
  return tokens;
}

function isSpace(c: string): boolean {
  // trim() knows every Unicode space, without a regular expression over the input.
  return c.trim() === "";
}

function isDelimiter(c: string): boolean {
  return c === "(" || c === ")" || c === '"' || isSpace(c);
}

function isIdentifier(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!letter && !(i > 0 && ((c >= 48 && c <= 57) || c === 95))) return false;
  }
  return s.length > 0;
}

function isAllStars(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charAt(i) !== "*") return false;
  return s.length > 0;
}

function stripStars(s: string): string {
  let end = s.length;
  while (end > 0 && s.charAt(end - 1) === "*") end--;
  return s.slice(0, end);
}

function norm(s: string): string {
  return s.normalize("NFKC").toLowerCase();
}

const WORD_BREAK = /[^\p{L}\p{N}]+/u;

function words(s: string): string[] {
  return norm(s)
    .split(WORD_BREAK)
    .filter((w) => w !== "");
}

/** True when item satisfies query. */
/** `q` parsed, or its fault added to `problems` (undefined), for searches that list every problem at once. */
export function readQuery(q: string, problems: string[]): Query | undefined {
  try {
    return parseQuery(q);
  } catch (err) {
    if (!(err instanceof QueryError)) throw err;
    problems.push(err.message);
    return undefined;
  }
}

export function matches(query: Query, item: Searchable): boolean {
  return compile(query)(view(item));
}

type Matcher = (item: ItemView) => boolean;

// The same parsed query is usually tested against many items: normalise its values and build its word
// patterns once per query object, not once per item.
const compiled = new WeakMap<Query, Matcher>();

function compile(query: Query): Matcher {
  let matcher = compiled.get(query);
  if (matcher === undefined) {
    matcher = build(query);
    compiled.set(query, matcher);
  }
  return matcher;
}

function build(query: Query): Matcher {
  switch (query.kind) {
    case "all":
      return () => true;
    case "not": {
      const part = compile(query.part);
      return (item) => !part(item);
    }
    case "and": {
      const parts = query.parts.map(compile);
      return (item) => parts.every((p) => p(item));
    }
    case "or": {
      const parts = query.parts.map(compile);
      return (item) => parts.some((p) => p(item));
    }
    case "term":
      return termMatcher(query);
  }
}

function isPrefix(term: { readonly value: string; readonly phrase: boolean }): boolean {
  return !term.phrase && term.value.endsWith("*");
}

function termMatcher(term: Extract<Query, { kind: "term" }>): Matcher {
  const prefix = isPrefix(term);
  const raw = prefix ? stripStars(term.value) : term.value;
  // A hand-built `*` term means what the parser would have made of it.
  if (prefix && raw === "") return () => true;
  switch (term.field) {
    case undefined: {
      const p = pattern(raw, prefix);
      return (item) =>
        containsRun(item.title(), p) ||
        containsRun(item.snippet(), p) ||
        containsRun(item.description(), p) ||
        item.tagWords().some((tag) => containsRun(tag, p));
    }
    case "title": {
      const p = pattern(raw, prefix);
      return (item) => containsRun(item.title(), p);
    }
    case "description": {
      const p = pattern(raw, prefix);
      return (item) => containsRun(item.description(), p);
    }
    case "snippet": {
      const p = pattern(raw, prefix);
      return (item) => containsRun(item.snippet(), p);
    }
    // Owner names are compared exactly, without normalisation, so that a match here is also a hit in an
    // index keyed by the stored name (see requiredValues).
    case "owner":
      return (item) => equalOrPrefix(item.item.owner, raw, prefix);
    case "id": {
      const want = norm(raw);
      return (item) => equalOrPrefix(item.id(), want, prefix);
    }
    case "orgid": {
      const want = norm(raw);
      return (item) => equalOrPrefix(item.orgId(), want, prefix);
    }
    case "access": {
      const want = norm(raw);
      return (item) => equalOrPrefix(item.access(), want, prefix);
    }
    case "type": {
      const want = norm(raw);
      const p = pattern(raw, prefix);
      return (item) => equalOrPrefix(item.type(), want, prefix) || containsRun(item.typeWords(), p);
    }
    case "tags": {
      const want = norm(raw).trim();
      return (item) => item.tags().some((tag) => equalOrPrefix(tag, want, prefix));
    }
    case "group": {
      const want = norm(raw).trim();
      return (item) => item.groups().some((g) => equalOrPrefix(g, want, prefix));
    }
    case "typekeywords": {
      const want = norm(raw).trim();
      return (item) => item.typeKeywords().some((k) => equalOrPrefix(k, want, prefix));
    }
  }
}

function equalOrPrefix(have: string, want: string, prefix: boolean): boolean {
  return prefix ? have.startsWith(want) : have === want;
}

// An item's normalised fields, each computed on first use: most terms touch one or two fields, and a term that
// fails early leaves the rest (a long description, say) unread.
function view(item: Searchable) {
  return {
    item,
    title: once(() => words(item.title)),
    snippet: once(() => words(item.snippet)),
    description: once(() => words(item.description)),
    tagWords: once(() => item.tags.map(words)),
    tags: once(() => item.tags.map((t) => norm(t).trim())),
    typeKeywords: once(() => item.typeKeywords.map((k) => norm(k).trim())),
    type: once(() => norm(item.type)),
    typeWords: once(() => words(item.type)),
    id: once(() => norm(item.id)),
    orgId: once(() => norm(item.orgId)),
    access: once(() => norm(item.access)),
    groups: once(() => (item.groups ?? []).map(norm)),
  };
}

type ItemView = ReturnType<typeof view>;

function once<T>(compute: () => T): () => T {
  let cached: { readonly value: T } | undefined;
  return () => (cached ??= { value: compute() }).value;
}

/** A run of consecutive words to find; with prefix, the last word need only start the text's word. */
interface Pattern {
  readonly words: readonly string[];
  readonly prefix: boolean;
  /** Knuth-Morris-Pratt failure links, so a search never re-reads text words (an item's text is untrusted too). */
  readonly fail: readonly number[];
}

function pattern(value: string, prefix: boolean): Pattern {
  const w = words(value);
  const fail = new Array<number>(w.length).fill(0);
  let k = 0;
  for (let i = 1; i < w.length; i++) {
    while (k > 0 && w[i] !== w[k]) k = fail[k - 1] ?? 0;
    if (w[i] === w[k]) k++;
    fail[i] = k;
  }
  return { words: w, prefix, fail };
}

// The failure links only ever fall back to a border of the words matched so far, all compared exactly, so
// treating the last word as a prefix does not disturb them: a match at the last word ends the search.
function containsRun(text: readonly string[], p: Pattern): boolean {
  const m = p.words.length;
  if (m === 0) return false;
  const fits = (k: number, word: string) => {
    const want = p.words[k] ?? "";
    return p.prefix && k === m - 1 ? word.startsWith(want) : word === want;
  };
  let k = 0;
  for (const word of text) {
    while (k > 0 && !fits(k, word)) k = p.fail[k - 1] ?? 0;
    if (fits(k, word) && ++k === m) return true;
  }
  return false;
}

type IndexField = "owner" | "id" | "orgid";
type Required = { owner?: readonly string[]; id?: readonly string[]; orgid?: readonly string[] };

const INDEX_FIELDS: readonly IndexField[] = ["owner", "id", "orgid"];

function isIndexField(field: SearchField | undefined): field is IndexField {
  return field === "owner" || field === "id" || field === "orgid";
}

// Two spellings are the same constraint when matches() cannot tell them apart.
function keyOf(field: IndexField, value: string): string {
  return field === "owner" ? value : norm(value);
}

/**
 * Equality constraints every match must satisfy (from top-level AND terms, or ORs all on one field), used to
 * pick an index: e.g. {owner:["ana"]}, {id:["a","b"]}, {orgid:["x"]}. Only fields owner, id, orgid are reported.
 * Undefined entries when no such constraint. Values are as written in q; owner is exact, but id and orgid
 * match case-insensitively, so an index keyed by them must be probed case-insensitively (item ids are lower
 * case). An empty list means no item can match (e.g. `owner:a AND owner:b`).
 */
export function requiredValues(query: Query): {
  owner?: readonly string[];
  id?: readonly string[];
  orgid?: readonly string[];
} {
  const out: Required = {};
  switch (query.kind) {
    case "term":
      if (isIndexField(query.field) && !isPrefix(query)) out[query.field] = [query.value];
      return out;
    case "and":
      // Each part's constraint holds for every match, so they intersect.
      for (const part of query.parts.map(requiredValues)) {
        for (const field of INDEX_FIELDS) {
          const values = part[field];
          if (values === undefined) continue;
          const sofar = out[field];
          out[field] = sofar === undefined ? dedupe(field, values) : intersect(field, sofar, values);
        }
      }
      return out;
    case "or": {
      // A match satisfies some part, so a field is constrained only if every part constrains it.
      const parts = query.parts.map(requiredValues);
      if (parts.length === 0) return out;
      for (const field of INDEX_FIELDS) {
        const lists: (readonly string[])[] = [];
        for (const part of parts) {
          const values = part[field];
          if (values === undefined) break;
          lists.push(values);
        }
        if (lists.length === parts.length) out[field] = dedupe(field, lists.flat());
      }
      return out;
    }
    case "all":
    case "not":
      return out;
  }
}

function dedupe(field: IndexField, values: readonly string[]): string[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = keyOf(field, v);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function intersect(field: IndexField, a: readonly string[], b: readonly string[]): string[] {
  const inB = new Set(b.map((v) => keyOf(field, v)));
  return a.filter((v) => inB.has(keyOf(field, v)));
}
