// How an append's key field matches rows, shared by both hosted stores (shared/hosted/store.ts's implementations)
// and kept apart from store.ts: a reader of hosted layers reaches the stores' modules, and must not reach the
// choice of store (which would bring the GeoPackage store's storage into every serving function's bundle).

/** An append whose key matches more than one row of the layer: which row to update is not known, nothing is done. */
export class AmbiguousKeyError extends Error {
  readonly value: string;

  constructor(value: string) {
    super("the key matches more than one row");
    this.name = "AmbiguousKeyError";
    this.value = value;
  }
}

/** How an append's key values compare, whatever the backing gives back (a whole number, or text). */
export const keyOf = (v: unknown): string | undefined =>
  v === null || v === undefined
    ? undefined
    : typeof v === "number" || typeof v === "bigint"
      ? `n${String(v)}`
      : `s${String(v)}`;
