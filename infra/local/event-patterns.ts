// EventBridge event patterns, evaluated as EventBridge does: every field of the pattern must match; a leaf is a
// list of alternatives (a value, or a {prefix | suffix | anything-but | numeric | exists | equals-ignore-case}
// rule), matched against the event's value or any element of its array. One pass over pattern and event.
type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function numericMatch(value: Json, rule: readonly Json[]): boolean {
  if (typeof value !== "number") return false;
  for (let i = 0; i + 1 < rule.length; i += 2) {
    const op = rule[i];
    const bound = rule[i + 1];
    if (typeof bound !== "number") return false;
    const ok =
      op === "="
        ? value === bound
        : op === "<"
          ? value < bound
          : op === "<="
            ? value <= bound
            : op === ">"
              ? value > bound
              : op === ">="
                ? value >= bound
                : false;
    if (!ok) return false;
  }
  return true;
}

function matchesOne(value: Json, alternative: Json): boolean {
  if (!isObject(alternative)) return value === alternative;
  if ("prefix" in alternative)
    return typeof value === "string" && typeof alternative.prefix === "string" && value.startsWith(alternative.prefix);
  if ("suffix" in alternative)
    return typeof value === "string" && typeof alternative.suffix === "string" && value.endsWith(alternative.suffix);
  if ("equals-ignore-case" in alternative) {
    const v = alternative["equals-ignore-case"];
    return typeof value === "string" && typeof v === "string" && value.toLowerCase() === v.toLowerCase();
  }
  if ("numeric" in alternative) return Array.isArray(alternative.numeric) && numericMatch(value, alternative.numeric);
  if ("anything-but" in alternative) {
    const but = alternative["anything-but"];
    // anything-but a prefix, suffix or case-insensitive value: the rule's own match, negated (strings only).
    if (isObject(but)) return typeof value === "string" && !matchesOne(value, but);
    const list = Array.isArray(but) ? but : [but];
    return value !== undefined && !list.includes(value);
  }
  return false;
}

function leafMatches(value: Json, alternatives: readonly Json[]): boolean {
  for (const alternative of alternatives) {
    if (isObject(alternative) && "exists" in alternative) {
      if ((value !== undefined) === (alternative.exists === true)) return true;
      continue;
    }
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => matchesOne(v, alternative))) return true;
  }
  return false;
}

/**
 * Whether `event` matches `pattern` (both parsed JSON). Inside an array of objects a field matches when it matches
 * in any of them, as EventBridge flattens arrays.
 */
export function matchesPattern(pattern: Json, event: Json): boolean {
  if (!isObject(pattern)) return false;
  for (const [key, rule] of Object.entries(pattern)) {
    const value = isObject(event) ? event[key] : undefined;
    if (Array.isArray(rule)) {
      if (!leafMatches(flatten(value), rule)) return false;
    } else if (isObject(rule)) {
      const objects = Array.isArray(value) ? value : [value];
      if (!objects.some((o) => matchesPattern(rule, o))) return false;
    } else return false;
  }
  return true;
}

/** An array of arrays is matched element by element (EventBridge flattens nested arrays). */
function flatten(value: Json): Json {
  return Array.isArray(value) ? value.flat(Infinity) : value;
}

/** A pattern's shape problems, as PutRule refuses them (a leaf must be a list; rules must be known). */
export function patternProblem(pattern: Json, path = ""): string | undefined {
  if (!isObject(pattern)) return `Event pattern${path ? ` at ${path}` : ""} must be an object.`;
  if (Object.keys(pattern).length === 0) return `Event pattern${path ? ` at ${path}` : ""} must not be empty.`;
  for (const [key, rule] of Object.entries(pattern)) {
    const at = path ? `${path}.${key}` : key;
    if (Array.isArray(rule)) {
      for (const alt of rule) {
        if (isObject(alt)) {
          const names = Object.keys(alt);
          const known = ["prefix", "suffix", "anything-but", "numeric", "exists", "equals-ignore-case"];
          if (names.length !== 1 || !known.includes(names[0] ?? "")) return `Unrecognized match type at ${at}.`;
          const but = alt["anything-but"];
          if (isObject(but)) {
            const inner = Object.keys(but);
            const allowed = ["prefix", "suffix", "equals-ignore-case"];
            if (inner.length !== 1 || !allowed.includes(inner[0] ?? "") || typeof Object.values(but)[0] !== "string") {
              return `Inside anything-but at ${at} only a prefix, suffix or equals-ignore-case string is allowed.`;
            }
          }
        } else if (Array.isArray(alt)) return `Match value at ${at} must be a string, number, boolean, null or rule.`;
      }
    } else if (isObject(rule)) {
      const inner = patternProblem(rule, at);
      if (inner) return inner;
    } else return `Match value at ${at} must be an array or an object.`;
  }
  return undefined;
}
