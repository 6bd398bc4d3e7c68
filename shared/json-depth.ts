// How deep a JSON value nests, measured without recursion. JSON.parse does not recurse, but JSON.stringify,
// structuredClone and every walker of our own do: a value a few thousand levels deep (a few KB of brackets)
// overflows the stack wherever it goes next. Whatever comes from outside is measured here first, in one pass
// with a stack of its own, so every recursion after it is bounded.

/**
 * Whether `value` nests arrays and objects more than `max` levels deep (`1` and `"a"` are 0 deep, `[]` and
 * `{"a":1}` 1, `[[1]]` 2). Linear in the value's size; stops at the first level past `max`.
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const pending: unknown[] = [value];
  const depths: number[] = [0];
  for (;;) {
    const v = pending.pop();
    const depth = depths.pop();
    if (depth === undefined) return false;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === "object") {
        pending.push(child);
        depths.push(depth + 1);
      }
    }
  }
}
