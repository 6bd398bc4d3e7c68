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
