// One page of an ordered list as the sharing API answers lists: `start` is 1-based, `nextStart` is -1 at the end.
export interface Page<T> {
  readonly total: number;
  readonly start: number;
  readonly num: number;
  readonly nextStart: number;
  readonly shown: T[];
}

export function pageOf<T>(all: readonly T[], start: number, num: number): Page<T> {
  const shown = all.slice(start - 1, start - 1 + num);
  const after = start - 1 + shown.length;
  return { total: all.length, start, num, nextStart: after < all.length && shown.length > 0 ? after + 1 : -1, shown };
}

/**
 * How far a list may be paged. Every list reads `start` (1-based, default 1) and `num` by one rule; what differs
 * between lists is only these bounds, each the cap its endpoint documents (docs/limits.md).
 */
export interface PagingLimits {
  /** The largest `start`: a list read up to a budget has nothing past it. Infinity: unbounded. */
  readonly maxStart: number;
  /** The smallest `num`: 0 asks for the total alone where a list answers one. */
  readonly minNum: 0 | 1;
  readonly maxNum: number;
  /** `num` when absent; undefined where its absence means the whole list, unpaged. */
  readonly defaultNum: number | undefined;
  /**
   * Whether a `num` above `maxNum` is told as a problem of its own ("may be at most"), besides any other:
   * getLayers words its cap so, and its answers stay as they are.
   */
  readonly numCapApart?: boolean;
}

/** Item and group search: up to 10,000 candidates, pages of up to 100 (0 for a count alone), 10 by default. */
export const SEARCH_PAGING = { maxStart: 10_000, minNum: 0, maxNum: 100, defaultNum: 10 } as const;

/** Lists of a user's items and of an organization's users: read whole, so `start` is bounded only loosely. */
export const LIST_PAGING = {
  maxStart: 1_000_000,
  minNum: 0,
  maxNum: 100,
  defaultNum: 10,
} as const satisfies PagingLimits;

/** A whole number from `min` to `max`; otherwise a problem is listed and the answer is undefined. */
function count(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
  problems: string[],
): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    problems.push(
      max === Infinity
        ? `'${name}' must be a whole number, at least ${min}.`
        : `'${name}' must be a whole number from ${min} to ${max}.`,
    );
    return undefined;
  }
  return n;
}

export interface Paging<N extends number | undefined = number> {
  readonly start: number;
  readonly num: N;
}

/** `start` and `num` within `limits`; each value out of bounds is listed in `problems`. */
export function readPaging(
  params: { get(name: string): string | undefined },
  limits: PagingLimits & { readonly defaultNum: number },
  problems: string[],
): Paging;
export function readPaging(
  params: { get(name: string): string | undefined },
  limits: PagingLimits,
  problems: string[],
): Paging<number | undefined>;
export function readPaging(
  params: { get(name: string): string | undefined },
  limits: PagingLimits,
  problems: string[],
): Paging<number | undefined> {
  const start = count(params.get("start"), "start", 1, limits.maxStart, problems) ?? 1;
  const raw = params.get("num");
  const num = count(raw, "num", limits.minNum, limits.numCapApart ? Infinity : limits.maxNum, problems);
  if (limits.numCapApart && raw !== undefined && raw !== "" && Number(raw) > limits.maxNum) {
    problems.push(`'num' may be at most ${limits.maxNum}.`);
  }
  return { start, num: num ?? limits.defaultNum };
}

export type SortOrder = "asc" | "desc";

export interface Sort<F extends string> {
  /** The field asked for (an alias already resolved); undefined when absent or not one of the fields. */
  readonly field: F | undefined;
  readonly order: SortOrder | undefined;
}

/**
 * `sortField` (one of `fields`, any letter case; `aliases` name other words clients send for a field) and
 * `sortOrder` (asc or desc). Absent or blank: undefined, for the caller's own default; anything else is listed in
 * `problems`.
 */
export function readSort<F extends string>(
  params: { get(name: string): string | undefined },
  fields: readonly F[],
  problems: string[],
  aliases: Readonly<Record<string, F>> = {},
): Sort<F> {
  const raw = params.get("sortField")?.trim().toLowerCase() || undefined;
  const named = raw !== undefined && Object.hasOwn(aliases, raw) ? aliases[raw] : raw;
  let field: F | undefined;
  if (named !== undefined) {
    if ((fields as readonly string[]).includes(named)) field = named as F;
    else problems.push(`'sortField' must be one of ${fields.join(", ")}.`);
  }
  const said = params.get("sortOrder")?.trim().toLowerCase() || undefined;
  let order: SortOrder | undefined;
  if (said === "asc" || said === "desc") order = said;
  else if (said !== undefined) problems.push("'sortOrder' must be asc or desc.");
  return { field, order };
}
