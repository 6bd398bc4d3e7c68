// One matcher for every route family: a function that serves many sub-operations under one greedy API Gateway
// route (`…/community/{path+}`) lists them in API Gateway's own `{name}` template notation, relative to the
// greedy part. The stack's resource budget and the HTTP API's route and integration limits count functions and
// routes, not operations (docs/architecture.md#route-families), so a family is one function and one route.
//
// Templates are compiled once, at cold start (module load); a request's path is split once and compared segment
// by segment with each template, so matching costs time linear in the path. A path no template matches gets the
// one 404.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { nothingServed } from "#shared/errors.ts";
import { type Compute, type Operation, restHandler } from "#shared/http/pipeline.ts";

export type EventHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * What a `{name}` parameter may hold: a pattern one whole path segment must match. A name without a shape takes
 * any segment of 1 to 128 characters.
 */
export type Shapes = Readonly<Record<string, RegExp>>;

const ANY_SEGMENT = /^[^/]{1,128}$/;

type Segment = { readonly literal: string } | { readonly param: string; readonly shape: RegExp };

interface Compiled<T> {
  readonly template: string;
  readonly segments: readonly Segment[];
  readonly value: T;
}

export interface Match<T> {
  readonly template: string;
  readonly value: T;
  /** The `{name}` parameters the path filled, by name. */
  readonly params: Readonly<Record<string, string>>;
}

export interface Matcher<T> {
  readonly templates: readonly string[];
  match(path: string): Match<T> | undefined;
}

const PARAM = /^\{(\w+)\}$/;

function compileTemplate(template: string, shapes: Shapes): Segment[] {
  return template.split("/").map((part) => {
    const param = PARAM.exec(part)?.[1];
    if (param !== undefined) return { param, shape: shapes[param] ?? ANY_SEGMENT };
    if (part === "" || /[{}]/.test(part)) throw new Error(`route template '${template}': bad segment '${part}'`);
    return { literal: part };
  });
}

/** Compiles a table of templates, tried in the table's order (the first that matches serves). */
export function compileTemplates<T>(table: Readonly<Record<string, T>>, shapes: Shapes = {}): Matcher<T> {
  const compiled: Compiled<T>[] = Object.entries(table).map(([template, value]) => ({
    template,
    segments: compileTemplate(template, shapes),
    value,
  }));
  return {
    templates: compiled.map((c) => c.template),
    match(path) {
      const parts = path.split("/");
      for (const c of compiled) {
        if (c.segments.length !== parts.length) continue;
        const params: Record<string, string> = {};
        const matched = c.segments.every((s, i) => {
          const part = parts[i] ?? "";
          if ("literal" in s) return part === s.literal;
          params[s.param] = part;
          return s.shape.test(part);
        });
        if (matched) return { template: c.template, value: c.value, params };
      }
      return undefined;
    },
  };
}

/**
 * A template with its `{name}` parameters filled from `value` (URL-encoded), each name passed to `taken`;
 * a name `value` has nothing for is filled with the empty string.
 */
export function fillTemplate(
  template: string,
  value: (name: string) => string | undefined,
  taken: (name: string, value: string | undefined) => void = () => {},
): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const v = value(name);
    taken(name, v);
    return encodeURIComponent(v ?? "");
  });
}

/** One operation of a family: its rules and its compute step, run in the shared pipeline. */
export interface FamilyOperation {
  readonly op: Operation;
  readonly compute: Compute;
}

export interface Family {
  /** The greedy path parameter of the family's route (`path` for `{path+}`). */
  readonly greedy: string;
  /** The operation name of the 404 (its page title and log line). */
  readonly notFound: string;
  readonly shapes?: Shapes;
  readonly operations: Readonly<Record<string, FamilyOperation>>;
}

/** The 404 of a path nothing serves (the one every route answers). */
export const servesNothing: Compute = async (req) => {
  throw nothingServed(req.method, req.event.rawPath);
};

/**
 * The handler of a route family: the sub-path in its greedy parameter picks the operation, whose `{name}`
 * parameters join the event's path parameters; anything else is the 404.
 */
export function familyHandler(family: Family): EventHandler & { readonly matcher: Matcher<EventHandler> } {
  const handlers = Object.fromEntries(
    Object.entries(family.operations).map(([template, { op, compute }]) => [template, restHandler(op, compute)]),
  );
  const matcher = compileTemplates<EventHandler>(handlers, family.shapes);
  const fallback = restHandler({ name: family.notFound }, servesNothing);
  const handler = (event: APIGatewayProxyEventV2, context: Context) => {
    const found = matcher.match(event.pathParameters?.[family.greedy] ?? "");
    if (!found) return fallback(event, context);
    return found.value({ ...event, pathParameters: { ...event.pathParameters, ...found.params } }, context);
  };
  return Object.assign(handler, { matcher });
}

/**
 * The handler of a function serving several routes of its own (a route and its `alsoAt` aliases, shared/system.ts):
 * the route API Gateway matched (`ANY <path template>` in the event's routeKey, on both engines) picks the operation.
 * A route key the table lacks is a deployment fault, answered as the one 404. A route whose value is a handler (a
 * family's, for a greedy alias) is served by it.
 */
export function routesHandler(routes: Readonly<Record<string, FamilyOperation | EventHandler>>): EventHandler {
  // A route may be a family of its own (a greedy alias, its operations matched by familyHandler).
  const handlers = new Map(
    Object.entries(routes).map(([path, r]) => [path, typeof r === "function" ? r : restHandler(r.op, r.compute)]),
  );
  const fallback = restHandler({ name: "Not Found" }, servesNothing);
  return (event, context) => {
    const template = event.routeKey.slice(event.routeKey.indexOf(" ") + 1);
    return (handlers.get(template) ?? fallback)(event, context);
  };
}
