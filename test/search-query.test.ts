// The portal search `q` parser and evaluator, as a pure module: syntax, each field's matching rule, the
// constraints offered to index selection, and the limits that keep an attacker's q cheap to refuse.
import { describe, expect, it } from "vitest";
import { matches, parseQuery, type Query, QueryError, requiredValues, type Searchable } from "#shared/search-query.ts";

const base: Searchable = {
  id: "0123456789abcdef0123456789abcdef",
  owner: "Ana",
  orgId: "Org0123456789AB",
  title: "Water Mains",
  type: "Map Service",
  tags: ["Utilities", "storm network"],
  typeKeywords: ["ArcGIS Server", "Data"],
  access: "public",
  description: "Pipes under the <b>city</b> streets.",
  snippet: "Hydrants and valves",
};

const hit = (q: string, item: Partial<Searchable> = {}) => matches(parseQuery(q), { ...base, ...item });

const term = (value: string, field?: Extract<Query, { kind: "term" }>["field"], phrase = false): Query => ({
  kind: "term",
  field,
  value,
  phrase,
});

function refusal(q: string): string {
  try {
    parseQuery(q);
  } catch (e) {
    if (e instanceof QueryError) return e.message;
    throw e;
  }
  throw new Error(`parsed: ${q}`);
}

describe("parseQuery", () => {
  it("reads an empty q, blanks and a lone * as everything", () => {
    for (const q of ["", "   ", "*", " * ", "title:*", "tags:(*)"]) expect(parseQuery(q)).toEqual({ kind: "all" });
  });

  it("reads fields case-insensitively, with orgId and typeKeywords spelled either way", () => {
    expect(parseQuery("Owner:ana")).toEqual(term("ana", "owner"));
    expect(parseQuery("orgId:X")).toEqual(term("X", "orgid"));
    expect(parseQuery("typeKeywords:Data")).toEqual(term("Data", "typekeywords"));
    expect(parseQuery('title:"Water Mains"')).toEqual(term("Water Mains", "title", true));
    expect(parseQuery('"water mains"')).toEqual(term("water mains", undefined, true));
    expect(parseQuery("title:wat*")).toEqual(term("wat*", "title"));
    expect(parseQuery("id:a:b")).toEqual(term("a:b", "id"));
  });

  it("keeps text whose colon follows no field name as free text", () => {
    expect(parseQuery("10:30")).toEqual(term("10:30"));
    expect(parseQuery(":x")).toEqual(term(":x"));
  });

  it("ANDs adjacent terms, and treats lower-case operators as words", () => {
    expect(parseQuery("water mains")).toEqual({ kind: "and", parts: [term("water"), term("mains")] });
    expect(parseQuery("a and b")).toEqual({ kind: "and", parts: [term("a"), term("and"), term("b")] });
    expect(parseQuery("a NOT b")).toEqual({ kind: "and", parts: [term("a"), { kind: "not", part: term("b") }] });
  });

  it("binds NOT tighter than AND, and AND tighter than OR", () => {
    expect(parseQuery("a OR b AND c")).toEqual({
      kind: "or",
      parts: [term("a"), { kind: "and", parts: [term("b"), term("c")] }],
    });
    expect(parseQuery("a AND b OR c")).toEqual({
      kind: "or",
      parts: [{ kind: "and", parts: [term("a"), term("b")] }, term("c")],
    });
    expect(parseQuery("NOT a AND b")).toEqual({ kind: "and", parts: [{ kind: "not", part: term("a") }, term("b")] });
    expect(parseQuery("NOT NOT a")).toEqual({ kind: "not", part: { kind: "not", part: term("a") } });
  });

  it("groups with parentheses", () => {
    expect(parseQuery("(a OR b) c")).toEqual({
      kind: "and",
      parts: [{ kind: "or", parts: [term("a"), term("b")] }, term("c")],
    });
    expect(parseQuery("NOT (a OR b)")).toEqual({ kind: "not", part: { kind: "or", parts: [term("a"), term("b")] } });
    expect(parseQuery("((a))")).toEqual(term("a"));
  });

  it("distributes a field over a parenthesised group", () => {
    expect(parseQuery('tags:(a OR "b c") NOT d')).toEqual({
      kind: "and",
      parts: [
        { kind: "or", parts: [term("a", "tags"), term("b c", "tags", true)] },
        { kind: "not", part: term("d") },
      ],
    });
    expect(parseQuery("id:(a OR (b c))")).toEqual({
      kind: "or",
      parts: [term("a", "id"), { kind: "and", parts: [term("b", "id"), term("c", "id")] }],
    });
  });

  it("refuses what it cannot run, with a sentence for the user", () => {
    expect(refusal("(water")).toBe("Unbalanced parentheses in 'q'.");
    expect(refusal("water)")).toBe("Unbalanced parentheses in 'q'.");
    expect(refusal(")(")).toBe("Unbalanced parentheses in 'q'.");
    expect(refusal('"water')).toBe("Unterminated quoted phrase in 'q'.");
    expect(refusal('title:"water')).toBe("Unterminated quoted phrase in 'q'.");
    expect(refusal("foo:bar")).toBe("Unknown search field 'foo'.");
    expect(refusal("constructor:x")).toBe("Unknown search field 'constructor'.");
    expect(refusal("water AND")).toBe("Expected a search term after 'AND' in 'q'.");
    expect(refusal("OR water")).toBe("Expected a search term at the start of 'q'.");
    expect(refusal("water NOT")).toBe("Expected a search term after 'NOT' in 'q'.");
    expect(refusal("(OR a)")).toBe("Expected a search term after '(' in 'q'.");
    expect(refusal("()")).toBe("Empty parentheses in 'q'.");
    expect(refusal('""')).toBe("Empty quoted phrase in 'q'.");
    expect(refusal("title:")).toBe("Missing a value after 'title:' in 'q'.");
    expect(refusal("tags:(title:x)")).toBe("The field 'title' cannot be used inside 'tags:(...)' in 'q'.");
  });

  it("caps length, terms and nesting", () => {
    expect(parseQuery("x".repeat(2048))).toEqual(term("x".repeat(2048)));
    expect(refusal("x".repeat(2049))).toBe("The search query 'q' is longer than 2048 characters.");

    const terms = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`).join(" OR ");
    expect(parseQuery(terms(64))).toMatchObject({ kind: "or" });
    expect(refusal(terms(65))).toBe("The search query 'q' has more than 64 terms.");
    expect(refusal('"a" '.repeat(65))).toBe("The search query 'q' has more than 64 terms.");

    const nested = (n: number) => "(".repeat(n) + "a" + ")".repeat(n);
    expect(parseQuery(nested(16))).toEqual(term("a"));
    expect(refusal(nested(17))).toBe("The search query 'q' nests more than 16 levels deep.");
    expect(parseQuery("NOT ".repeat(16) + "a")).toMatchObject({ kind: "not" });
    expect(refusal("NOT ".repeat(17) + "a")).toBe("The search query 'q' nests more than 16 levels deep.");
  });
});

describe("matches", () => {
  it("finds free text in title, snippet, description and tags, but not elsewhere", () => {
    expect(hit("water")).toBe(true);
    expect(hit("hydrants")).toBe(true);
    expect(hit("city")).toBe(true);
    expect(hit("network")).toBe(true);
    expect(hit('"storm network"')).toBe(true);
    expect(hit('"network storm"')).toBe(false);
    expect(hit('"utilities storm"')).toBe(false); // a phrase does not run across two tags
    expect(hit("ana")).toBe(false); // owner
    expect(hit("service")).toBe(false); // type
    expect(hit("wat")).toBe(false);
    expect(hit("wat*")).toBe(true);
  });

  it("ignores case and compatibility forms", () => {
    expect(hit("WATER")).toBe(true);
    expect(hit("water", { title: "Ｗａｔｅｒ" })).toBe(true);
    expect(hit("fire", { title: "ﬁre hydrants" })).toBe(true);
    expect(hit("title:ｍａｉｎｓ")).toBe(true);
  });

  it("matches title, description and snippet by words and phrases", () => {
    expect(hit("title:mains")).toBe(true);
    expect(hit("title:hydrants")).toBe(false);
    expect(hit('title:"water mains"')).toBe(true);
    expect(hit('title:"mains water"')).toBe(false);
    expect(hit("title:water-mains")).toBe(true); // punctuation splits a word into a phrase
    expect(hit("title:wat*")).toBe(true);
    expect(hit("title:water-ma*", { title: "water water mains" })).toBe(true);
    expect(hit('title:"a a b"', { title: "a a a b" })).toBe(true);
    expect(hit("description:city")).toBe(true);
    expect(hit("description:pipe")).toBe(false);
    expect(hit("description:pipe*")).toBe(true);
    expect(hit('description:"pipes under the"')).toBe(true);
    expect(hit('snippet:"hydrants and"')).toBe(true);
    expect(hit("snippet:water")).toBe(false);
  });

  it("matches owner exactly, and id, orgid and access without regard to case", () => {
    expect(hit("owner:Ana")).toBe(true);
    expect(hit("owner:ana")).toBe(false);
    expect(hit("owner:An*")).toBe(true);
    expect(hit("owner:an*")).toBe(false);
    expect(hit("owner:Anabel")).toBe(false);
    expect(hit("id:0123456789ABCDEF0123456789ABCDEF")).toBe(true);
    expect(hit("id:0123456789abcdef")).toBe(false);
    expect(hit("id:0123*")).toBe(true);
    expect(hit("orgid:org0123456789ab")).toBe(true);
    expect(hit("orgId:Org0123456789AB")).toBe(true);
    expect(hit("orgid:Org")).toBe(false);
    expect(hit("access:PUBLIC")).toBe(true);
    expect(hit("access:private")).toBe(false);
  });

  it("matches type whole or by consecutive words", () => {
    expect(hit('type:"Map Service"')).toBe(true);
    expect(hit("type:map")).toBe(true);
    expect(hit("type:service")).toBe(true);
    expect(hit('type:"service map"')).toBe(false);
    expect(hit("type:Ma*")).toBe(true);
    expect(hit("type:feature")).toBe(false);
    expect(hit("type:C++", { type: "C++" })).toBe(true);
  });

  it("matches tags and type keywords whole, or by prefix", () => {
    expect(hit("tags:utilities")).toBe(true);
    expect(hit("tags:storm")).toBe(false);
    expect(hit('tags:"Storm Network"')).toBe(true);
    expect(hit("tags:util*")).toBe(true);
    expect(hit("tags:(storm OR utilities)")).toBe(true);
    expect(hit("typekeywords:data")).toBe(true);
    expect(hit('typeKeywords:"arcgis server"')).toBe(true);
    expect(hit("typekeywords:arcgis")).toBe(false);
    expect(hit("typekeywords:arc*")).toBe(true);
  });

  it("evaluates AND, OR, NOT and grouping", () => {
    expect(hit("water mains")).toBe(true);
    expect(hit("water sewer")).toBe(false);
    expect(hit("water OR sewer")).toBe(true);
    expect(hit("water NOT mains")).toBe(false);
    expect(hit("NOT sewer")).toBe(true);
    expect(hit("sewer AND water OR mains")).toBe(true);
    expect(hit("sewer AND (water OR mains)")).toBe(false);
    expect(hit("NOT sewer AND water")).toBe(true);
    expect(hit("NOT (sewer OR water)")).toBe(false);
    expect(hit("*")).toBe(true);
    expect(hit("")).toBe(true);
  });

  it("evaluates a hand-built query the way the parser would have built it", () => {
    expect(matches(term("*", "title"), base)).toBe(true);
    expect(matches({ kind: "and", parts: [] }, base)).toBe(true);
    expect(matches({ kind: "or", parts: [] }, base)).toBe(false);
  });
});

describe("requiredValues", () => {
  const required = (q: string) => requiredValues(parseQuery(q));

  it("reports owner, id and orgid constraints every match satisfies", () => {
    expect(required("owner:ana AND type:x")).toEqual({ owner: ["ana"] });
    expect(required("owner:ana type:x")).toEqual({ owner: ["ana"] });
    expect(required("id:a OR id:b")).toEqual({ id: ["a", "b"] });
    expect(required("id:(a OR b)")).toEqual({ id: ["a", "b"] });
    expect(required("(owner:a OR owner:b) AND title:x")).toEqual({ owner: ["a", "b"] });
    expect(required("orgId:X type:y")).toEqual({ orgid: ["X"] });
    expect(required('owner:"ana"')).toEqual({ owner: ["ana"] });
    expect(required("(owner:a AND id:1) OR (owner:b AND id:2)")).toEqual({ owner: ["a", "b"], id: ["1", "2"] });
  });

  it("reports nothing when some match could escape the constraint", () => {
    expect(required("owner:a OR title:x")).toEqual({});
    expect(required("NOT owner:a")).toEqual({});
    expect(required("title:x NOT owner:a")).toEqual({});
    expect(required("owner:an*")).toEqual({});
    expect(required("owner:a OR owner:b*")).toEqual({});
    expect(required("*")).toEqual({});
    expect(required("access:public tags:x")).toEqual({});
  });

  it("intersects ANDed constraints and merges spellings matches() cannot tell apart", () => {
    expect(required("owner:a owner:b")).toEqual({ owner: [] });
    expect(required("(owner:a OR owner:b) owner:b")).toEqual({ owner: ["b"] });
    expect(required("id:a OR id:A")).toEqual({ id: ["a"] });
    expect(required("owner:a OR owner:A")).toEqual({ owner: ["a", "A"] });
    expect(required("id:ABC id:abc")).toEqual({ id: ["ABC"] });
  });

  it("never reports a constraint a match breaks", () => {
    const items = ["ana", "Ana", "bo"].flatMap((owner) =>
      ["abc", "ABD"].map((id) => ({ ...base, owner, id, title: `${owner} ${id}` })),
    );
    const queries = [
      "owner:ana",
      "owner:Ana OR owner:bo",
      "id:ABC",
      "id:(abc OR abd) title:bo",
      "(owner:ana AND id:abc) OR (owner:bo AND id:abd)",
    ];
    for (const q of queries) {
      const query = parseQuery(q);
      const { owner, id } = requiredValues(query);
      for (const item of items.filter((i) => matches(query, i))) {
        if (owner) expect(owner).toContain(item.owner);
        if (id) expect(id.map((v) => v.toLowerCase())).toContain(item.id.toLowerCase());
      }
    }
  });
});

describe("cost under adversarial input", () => {
  // Best of several batches, compared with a benign input of the same size: a ratio, so a slow machine
  // does not fail the test, while quadratic or exponential work would.
  function cost(run: () => void, batch = 100): number {
    let best = Infinity;
    for (let round = 0; round < 10; round++) {
      const started = performance.now();
      for (let i = 0; i < batch; i++) run();
      best = Math.min(best, performance.now() - started);
    }
    return best;
  }
  const attempt = (q: string) => () => {
    try {
      parseQuery(q);
    } catch (e) {
      if (!(e instanceof QueryError)) throw e;
    }
  };

  it("refuses or parses a hostile 2,000-character q about as fast as a benign one", () => {
    const benign = Array.from({ length: 40 }, (_, i) => `title:"water main ${i} ${"x".repeat(24)}"`)
      .join(" OR ")
      .padEnd(2000, " ");
    expect(benign.length).toBe(2000);
    expect(parseQuery(benign)).toMatchObject({ kind: "or" });
    const hostile = [
      "(".repeat(2000),
      ")".repeat(2000),
      '"'.repeat(2000),
      'a"'.repeat(1000),
      '"' + "a ".repeat(999) + "a",
      "NOT ".repeat(500),
      "a:".repeat(1000),
      "title:" + "x".repeat(1994),
      "*".repeat(2000),
      "a ".repeat(1000),
      "(a OR ".repeat(333) + "aa",
      "x".repeat(1000) + ":".repeat(1000),
    ];
    const baseline = cost(attempt(benign));
    for (const q of hostile) {
      expect(q.length).toBe(2000);
      expect(cost(attempt(q)) / baseline).toBeLessThan(20);
    }
  });

  it("matches a self-similar phrase against a long self-similar text in linear time", () => {
    const item = { ...base, description: "a ".repeat(20_000) + "b" };
    const hostile = parseQuery(`description:"${"a ".repeat(1000)}c"`);
    const benign = parseQuery(`description:"${"d ".repeat(1000)}c"`);
    expect(matches(hostile, item)).toBe(false);
    expect(matches(benign, item)).toBe(false);
    expect(matches(parseQuery(`description:"${"a ".repeat(1000)}b"`), item)).toBe(true);
    const ratio = cost(() => matches(hostile, item), 5) / cost(() => matches(benign, item), 5);
    // Both searches read the same text; a search that restarts after each partial match would be about as many
    // times slower as the phrase is long here, so a tight bound is what tells the two apart.
    expect(ratio).toBeLessThan(5);
  });
});
