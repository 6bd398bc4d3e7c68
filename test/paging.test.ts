// readPaging and readSort: the one rule every list reads `start`/`num` and sort order by, at each boundary.
import { describe, expect, it } from "vitest";
import { LIST_PAGING, type PagingLimits, pageOf, readPaging, readSort } from "#shared/paging.ts";

const params = (values: Record<string, string>) => new Map(Object.entries(values));

function paging(values: Record<string, string>, limits: PagingLimits) {
  const problems: string[] = [];
  return { ...readPaging(params(values), limits, problems), problems };
}

const SEARCH = { maxStart: 10_000, minNum: 0, maxNum: 100, defaultNum: 10 } as const satisfies PagingLimits;
const ROLES: PagingLimits = { maxStart: Number.MAX_SAFE_INTEGER, minNum: 1, maxNum: 100, defaultNum: 10 };
const GET_LAYERS: PagingLimits = {
  maxStart: Infinity,
  minNum: 1,
  maxNum: 10_000,
  defaultNum: undefined,
  numCapApart: true,
};

describe("readPaging", () => {
  it("answers the defaults when start and num are absent or empty", () => {
    expect(paging({}, SEARCH)).toEqual({ start: 1, num: 10, problems: [] });
    expect(paging({ start: "", num: "" }, SEARCH)).toEqual({ start: 1, num: 10, problems: [] });
    expect(paging({}, GET_LAYERS)).toEqual({ start: 1, num: undefined, problems: [] });
  });

  it.each([
    ["1", 1],
    ["10000", 10_000],
  ])("takes start=%s at the bounds", (start, expected) => {
    expect(paging({ start }, SEARCH)).toEqual({ start: expected, num: 10, problems: [] });
  });

  it.each(["0", "10001", "-1", "1.5", "abc", "1e400", "9007199254740992"])("refuses start=%s", (start) => {
    expect(paging({ start }, SEARCH)).toEqual({
      start: 1,
      num: 10,
      problems: ["'start' must be a whole number from 1 to 10000."],
    });
  });

  it.each([
    ["0", 0],
    ["100", 100],
  ])("takes num=%s at the bounds", (num, expected) => {
    expect(paging({ num }, SEARCH)).toEqual({ start: 1, num: expected, problems: [] });
  });

  it.each(["-1", "101", "2.5", "ten"])("refuses num=%s", (num) => {
    expect(paging({ num }, SEARCH).problems).toEqual(["'num' must be a whole number from 0 to 100."]);
  });

  it("lists both problems, start first", () => {
    expect(paging({ start: "0", num: "101" }, SEARCH).problems).toEqual([
      "'start' must be a whole number from 1 to 10000.",
      "'num' must be a whole number from 0 to 100.",
    ]);
  });

  it("bounds each list by its own documented caps", () => {
    expect(paging({ start: "1000000", num: "0" }, LIST_PAGING)).toEqual({ start: 1_000_000, num: 0, problems: [] });
    expect(paging({ start: "1000001" }, LIST_PAGING).problems).toEqual([
      "'start' must be a whole number from 1 to 1000000.",
    ]);
    expect(paging({ start: "9007199254740991", num: "1" }, ROLES)).toEqual({
      start: Number.MAX_SAFE_INTEGER,
      num: 1,
      problems: [],
    });
    expect(paging({ num: "0" }, ROLES).problems).toEqual(["'num' must be a whole number from 1 to 100."]);
    expect(paging({ start: "9007199254740992" }, ROLES).problems).toEqual([
      "'start' must be a whole number from 1 to 9007199254740991.",
    ]);
  });

  it("words an unbounded start and a cap told apart as getLayers does", () => {
    expect(paging({ start: "9007199254740991", num: "10000" }, GET_LAYERS)).toEqual({
      start: Number.MAX_SAFE_INTEGER,
      num: 10_000,
      problems: [],
    });
    expect(paging({ start: "0" }, GET_LAYERS).problems).toEqual(["'start' must be a whole number, at least 1."]);
    expect(paging({ num: "1" }, GET_LAYERS)).toEqual({ start: 1, num: 1, problems: [] });
    expect(paging({ num: "0" }, GET_LAYERS).problems).toEqual(["'num' must be a whole number, at least 1."]);
    expect(paging({ num: "10001" }, GET_LAYERS).problems).toEqual(["'num' may be at most 10000."]);
    // Not a whole number and above the cap: both are told.
    expect(paging({ num: "10000.5" }, GET_LAYERS).problems).toEqual([
      "'num' must be a whole number, at least 1.",
      "'num' may be at most 10000.",
    ]);
    expect(paging({ num: "1e400" }, GET_LAYERS).problems).toEqual([
      "'num' must be a whole number, at least 1.",
      "'num' may be at most 10000.",
    ]);
  });

  it("pages what it read", () => {
    // A list with a default `num` always has a number to page by (the type says so too).
    const { start, num } = readPaging(params({ start: "2", num: "2" }), SEARCH, []);
    expect(pageOf(["a", "b", "c"], start, num)).toEqual({
      total: 3,
      start: 2,
      num: 2,
      nextStart: -1,
      shown: ["b", "c"],
    });
  });
});

const FIELDS = ["title", "created", "owner"] as const;

function sort(values: Record<string, string>, aliases?: Record<string, (typeof FIELDS)[number]>) {
  const problems: string[] = [];
  return { ...readSort(params(values), FIELDS, problems, aliases), problems };
}

describe("readSort", () => {
  it("answers nothing asked when both are absent or blank", () => {
    expect(sort({})).toEqual({ field: undefined, order: undefined, problems: [] });
    expect(sort({ sortField: " ", sortOrder: "" })).toEqual({ field: undefined, order: undefined, problems: [] });
  });

  it("takes a field and an order in any letter case, trimmed", () => {
    expect(sort({ sortField: " Title ", sortOrder: "DESC" })).toEqual({ field: "title", order: "desc", problems: [] });
    expect(sort({ sortField: "owner", sortOrder: " asc" })).toEqual({ field: "owner", order: "asc", problems: [] });
  });

  it("resolves an alias to its field, and nothing that is only an object's own key", () => {
    expect(sort({ sortField: "Uploaded" }, { uploaded: "created" })).toMatchObject({ field: "created", problems: [] });
    expect(sort({ sortField: "uploaded" }).problems).toEqual(["'sortField' must be one of title, created, owner."]);
    expect(sort({ sortField: "constructor" }, { uploaded: "created" }).problems).toEqual([
      "'sortField' must be one of title, created, owner.",
    ]);
  });

  it("lists a field or an order it does not know", () => {
    expect(sort({ sortField: "size", sortOrder: "sideways" })).toEqual({
      field: undefined,
      order: undefined,
      problems: ["'sortField' must be one of title, created, owner.", "'sortOrder' must be asc or desc."],
    });
  });
});
