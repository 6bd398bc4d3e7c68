// How a query with both a spatial filter and an attribute condition reaches its rows, where the database's own
// planner cannot know enough to choose well (SQLite: it has no idea how many rows an R*Tree window holds). Two
// paths answer the same rows:
// - the spatial index first: every entry of the window read from the R*Tree, then each row's where tested (and the
//   rows sorted when the page's order is not the window's);
// - an attribute index first: the entries of `field = value` read from the index on that field, in object id order
//   within the value, each probed in the R*Tree by id; with a page ordered by object id the walk stops at the page's
//   end, so it reads about (offset + page) / (share of the value's rows inside the window) entries, never more than
//   the value holds.
// The choice compares the two by the layer's statistics, which the reader keeps per version of its file (so an edit
// that moves rows moves them too): its row count, the rows of each value asked for (counted through the index), and
// a sample of its rows' envelopes and indexed values (the window's share of the layer, and the value's share inside
// it). Statistics only choose between paths that answer the same rows: a stale estimate costs time, never an answer.
import type { QueryPlan } from "#shared/features/plan.ts";
import type { Bounds, Field } from "#shared/features/schema.ts";
import type { Expr } from "#shared/features/where-tree.ts";

/** The path the emitted SQL takes to the rows (absent: the database's own choice). */
export type AccessPath =
  /** The R*Tree first; no attribute index is used for the table. */
  | { readonly kind: "spatialIndex" }
  /** The index on `field` first, each entry probed in the R*Tree by its id. */
  | { readonly kind: "attributeIndex"; readonly field: Field };

/** A sampled row: its envelope (from the R*Tree) and the values of the layer's indexed columns, by column. */
export interface SampledRow {
  readonly box: Bounds;
  readonly values: Readonly<Record<string, unknown>>;
}

/** What a reader knows of a layer's rows, kept per version of its file. */
export interface LayerStatistics {
  /** Rows in the table. */
  readonly rows: number;
  /** Columns with an index whose only key is that column, each usable to walk `column = value` in id order. */
  readonly indexed: ReadonlySet<string>;
  /** Rows sampled evenly over the object ids (with their envelopes, for a window's share). */
  readonly sample: readonly SampledRow[];
  /**
   * Rows holding `value` in an indexed `column`, counted through its index and kept; past `atMost` the count stops
   * there (a value with more rows than the window is not walked whatever their number), so counting never reads
   * more index entries than the R*Tree-first plan would read rows.
   */
  count(column: string, value: string | number, atMost?: number): number;
}

/**
 * What an R*Tree entry read costs beside an entry walked in an attribute index and probed in the R*Tree (the index
 * step, the probe by id, the row read): measured on the demo's places, ~1.5 µs against ~3 µs a row.
 */
const PROBE_COST = 2;
/** Sampled rows of a value below which its share inside a window is not read from the sample (too few to say). */
const MIN_VALUE_SAMPLES = 8;

/** A condition the attribute index can answer: an indexed field equal to one of some values. */
interface Candidate {
  readonly field: Field;
  readonly values: readonly (string | number)[];
}

/** The where's top-level conjuncts (an AND's parts, flattened). */
function conjuncts(e: Expr | undefined): Expr[] {
  if (e === undefined) return [];
  return e.kind === "and" ? e.parts.flatMap(conjuncts) : [e];
}

const literal = (e: Expr): string | number | undefined =>
  e.kind === "string" || e.kind === "number" ? e.value : undefined;

/**
 * A conjunct an index on its field answers: `field = literal` (either way round) or `field IN (literals)`, on a
 * field read as its column (not a date, whose value is an expression, nor a converted one).
 */
function candidate(e: Expr, indexed: ReadonlySet<string>): Candidate | undefined {
  const usable = (x: Expr): Field | undefined =>
    x.kind === "field" &&
    x.field.convert === undefined &&
    (x.type === "string" || x.type === "number") &&
    indexed.has(x.field.column)
      ? x.field
      : undefined;
  if (e.kind === "compare" && e.op === "=") {
    const field = usable(e.left) ?? usable(e.right);
    const value = usable(e.left) ? literal(e.right) : literal(e.left);
    return field && value !== undefined ? { field, values: [value] } : undefined;
  }
  if (e.kind === "in" && !e.negated) {
    const field = usable(e.operand);
    const values = e.list.map(literal);
    if (!field || values.some((v) => v === undefined)) return undefined;
    return { field, values: [...new Set(values as (string | number)[])] };
  }
  return undefined;
}

const intersects = (a: Bounds, b: Bounds) => a[0] <= b[2] && a[2] >= b[0] && a[1] <= b[3] && a[3] >= b[1];

/** Whether the plan's rows are asked in object id order, from the first: a walk in that order may stop early. */
function pageInIdOrder(plan: QueryPlan, oid: Field): number | undefined {
  if (plan.output !== "features") return undefined;
  const [first, ...rest] = plan.orderBy;
  if (rest.length > 0 || first?.field !== oid || first.descending) return undefined;
  return plan.offset + plan.pageSize + 1;
}

/**
 * The path for a plan with a where and a spatial filter on a layer with an R*Tree, by the layer's statistics;
 * undefined when no attribute index could serve (the database's own plan stands).
 */
export function chooseAccess(
  plan: QueryPlan,
  oid: Field,
  window: Bounds,
  stats: LayerStatistics,
): { path: AccessPath; estimate: AccessEstimate } | undefined {
  if (stats.indexed.size === 0 || plan.spatial === undefined) return undefined;
  const candidates = conjuncts(plan.where).flatMap((e) => candidate(e, stats.indexed) ?? []);
  if (candidates.length === 0) return undefined;
  const sampled = stats.sample.length;
  const inWindow = stats.sample.filter((s) => intersects(s.box, window));
  // The window's share of the layer; with no sampled row inside it, half a row's worth (small, not nothing).
  const windowShare = sampled === 0 ? 1 : Math.max(inWindow.length, 0.5) / sampled;
  const windowRows = windowShare * stats.rows;
  const stop = pageInIdOrder(plan, oid);
  let best: { candidate: Candidate; walked: number } | undefined;
  // No walk past this many entries can be chosen: counting stops there.
  const enough = Math.ceil(windowRows / PROBE_COST) + 1;
  for (const c of candidates) {
    let rows = 0;
    for (const v of c.values) if (rows < enough) rows += stats.count(c.field.column, v, enough - rows);
    let walked = rows;
    // One value walks in id order (its index entries are, within a value): the walk ends with the page.
    if (stop !== undefined && c.values.length === 1) {
      const value = c.values[0];
      const of = stats.sample.filter((s) => s.values[c.field.column] === value);
      const inside = of.filter((s) => intersects(s.box, window)).length;
      // The value's share inside the window, from its sampled rows where there are enough, else the window's share.
      const share = of.length >= MIN_VALUE_SAMPLES ? (inside + 0.5) / (of.length + 1) : windowShare;
      walked = Math.min(rows, stop / share);
    }
    if (!best || walked < best.walked) best = { candidate: c, walked };
  }
  if (!best) return undefined;
  const estimate = { windowRows, walked: best.walked };
  return best.walked * PROBE_COST < windowRows
    ? { path: { kind: "attributeIndex", field: best.candidate.field }, estimate }
    : { path: { kind: "spatialIndex" }, estimate };
}

/** The figures a choice was made on (for the plans bench and tests). */
export interface AccessEstimate {
  /** Rows the R*Tree window is estimated to hold. */
  readonly windowRows: number;
  /** Index entries the attribute path is estimated to walk. */
  readonly walked: number;
}
