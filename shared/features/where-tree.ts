// The tree a `where` (or `having`) text is parsed into (where.ts) and the walks over it. The tree holds values,
// never SQL: the emitters bind every literal as a parameter. Every node carries its value type, resolved once by
// the parser, so no later walk has to infer it again.
import type { Field } from "#shared/features/schema.ts";

/** The type of a value in an expression; dates are carried as epoch milliseconds (UTC) everywhere. */
export type ValueType = "number" | "string" | "date" | "boolean" | "null";

export type CompareOp = "=" | "<>" | "<" | "<=" | ">" | ">=";
export type ArithmeticOp = "+" | "-" | "*" | "/";
export type ExtractUnit = "year" | "month" | "day" | "hour" | "minute" | "second";
export type CastTarget = "integer" | "float" | "varchar" | "date" | "timestamp";
export type AggregateName = "count" | "sum" | "min" | "max" | "avg" | "stddev" | "var";
export type ScalarFunction =
  | "abs"
  | "ceiling"
  | "floor"
  | "log"
  | "log10"
  | "power"
  | "round"
  | "truncate"
  | "mod"
  | "char_length"
  | "concat"
  | "lower"
  | "upper"
  | "substring"
  | "position"
  | "coalesce"
  | "nullif";

export type Expr =
  | { readonly kind: "field"; readonly type: ValueType; readonly field: Field }
  | { readonly kind: "number"; readonly type: "number"; readonly value: number }
  | { readonly kind: "string"; readonly type: "string"; readonly value: string }
  /** A date or timestamp literal, CURRENT_DATE or CURRENT_TIMESTAMP: epoch milliseconds, UTC. */
  | { readonly kind: "date"; readonly type: "date"; readonly value: number }
  | { readonly kind: "null"; readonly type: "null" }
  | {
      readonly kind: "compare";
      readonly type: "boolean";
      readonly op: CompareOp;
      readonly left: Expr;
      readonly right: Expr;
    }
  | { readonly kind: "and" | "or"; readonly type: "boolean"; readonly parts: readonly Expr[] }
  | { readonly kind: "not"; readonly type: "boolean"; readonly operand: Expr }
  | {
      readonly kind: "in";
      readonly type: "boolean";
      readonly operand: Expr;
      readonly list: readonly Expr[];
      readonly negated: boolean;
    }
  | {
      readonly kind: "between";
      readonly type: "boolean";
      readonly operand: Expr;
      readonly low: Expr;
      readonly high: Expr;
      readonly negated: boolean;
    }
  | {
      readonly kind: "like";
      readonly type: "boolean";
      readonly operand: Expr;
      readonly pattern: Expr;
      /** One character, when ESCAPE was given. */
      readonly escape: string | undefined;
      readonly negated: boolean;
    }
  | { readonly kind: "isNull"; readonly type: "boolean"; readonly operand: Expr; readonly negated: boolean }
  /**
   * A left-associative chain of one precedence level (`a - b + c`), kept flat so the tree stays shallow (its
   * operators still count toward the nesting cap: the SQL nests them).
   */
  | {
      readonly kind: "arithmetic";
      readonly type: "number";
      readonly first: Expr;
      readonly rest: readonly { readonly op: ArithmeticOp; readonly operand: Expr }[];
    }
  | { readonly kind: "negate"; readonly type: "number"; readonly operand: Expr }
  | { readonly kind: "call"; readonly type: ValueType; readonly name: ScalarFunction; readonly args: readonly Expr[] }
  | { readonly kind: "extract"; readonly type: "number"; readonly unit: ExtractUnit; readonly operand: Expr }
  | {
      readonly kind: "trim";
      readonly type: "string";
      readonly side: "both" | "leading" | "trailing";
      /** The characters to strip (a set, as in SQL); absent: spaces. */
      readonly chars: Expr | undefined;
      readonly operand: Expr;
    }
  | {
      readonly kind: "cast";
      readonly type: ValueType;
      readonly target: CastTarget;
      /** VARCHAR(n): n. */
      readonly length: number | undefined;
      readonly operand: Expr;
    }
  /** Only in `having`: an aggregate of a field over each group (operand absent: COUNT(*)). */
  | {
      readonly kind: "aggregate";
      readonly type: ValueType;
      readonly name: AggregateName;
      readonly operand: Field | undefined;
    };

/** Every node of a tree, children after their parent (the tree is at most a few hundred levels deep). */
export function* nodes(e: Expr): Generator<Expr> {
  yield e;
  switch (e.kind) {
    case "compare":
      yield* nodes(e.left);
      yield* nodes(e.right);
      return;
    case "and":
    case "or":
      for (const p of e.parts) yield* nodes(p);
      return;
    case "not":
    case "negate":
    case "extract":
    case "cast":
    case "isNull":
      yield* nodes(e.operand);
      return;
    case "in":
      yield* nodes(e.operand);
      for (const p of e.list) yield* nodes(p);
      return;
    case "between":
      yield* nodes(e.operand);
      yield* nodes(e.low);
      yield* nodes(e.high);
      return;
    case "like":
      yield* nodes(e.operand);
      yield* nodes(e.pattern);
      return;
    case "arithmetic":
      yield* nodes(e.first);
      for (const r of e.rest) yield* nodes(r.operand);
      return;
    case "call":
      for (const a of e.args) yield* nodes(a);
      return;
    case "trim":
      if (e.chars) yield* nodes(e.chars);
      yield* nodes(e.operand);
      return;
    case "field":
    case "number":
    case "string":
    case "date":
    case "null":
    case "aggregate":
      return;
  }
}

/**
 * True when a where holds for every row whatever the row holds: literals compared to literals (`1=1`, what
 * clients send to mean "every row"), and AND/OR of such. Read as no filter, it lets an unfiltered count keep
 * SQLite's own shortcut instead of a test and a deadline call per row. Strings are only compared for equality,
 * which no collation changes; anything else (a field, a function, NULL) is left to the database.
 */
export function holdsForEveryRow(e: Expr): boolean {
  switch (e.kind) {
    case "and":
      return e.parts.every(holdsForEveryRow);
    case "or":
      // TRUE OR UNKNOWN is TRUE in SQL: one part that always holds is enough.
      return e.parts.some(holdsForEveryRow);
    case "compare": {
      const { left: a, right: b, op } = e;
      if (a.kind === "string" && b.kind === "string")
        return op === "=" ? a.value === b.value : op === "<>" && a.value !== b.value;
      if (a.kind !== "number" || b.kind !== "number") return false;
      const [x, y] = [a.value, b.value];
      return { "=": x === y, "<>": x !== y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y }[op];
    }
    default:
      return false;
  }
}
