// mapgate's metrics, as CloudWatch Embedded Metric Format lines on standard output: CloudWatch Logs turns each
// line into metric data points, so a metric costs no API call, no client and no flush at the end of a request.
// Powertools Metrics would do the same; this is the few lines of it mapgate needs, written straight to stdout so a
// log level never silences a metric. The local engine's log carries the same lines (`npm run admin -- metrics`).
// Dimensions are kept low-cardinality by construction: operation names, outcome classes, event and job kinds.
// Never a user, an item, a path or a request id (those ride along as plain members, searchable in the log).

import { ROUTES, type RouteSpec, routeKeys } from "#shared/system.ts";

/** The CloudWatch namespace of every mapgate metric. */
export const NAMESPACE = "mapgate";

/** Which deployment a metric belongs to: two stacks in one account never mix their figures. */
export const STACK_DIMENSION = "Stack";

/** The metric names the stack's alarms and dashboard refer to, defined once. */
export const METRIC = {
  requests: "Requests",
  latency: "Latency",
  responseBytes: "ResponseBytes",
  /** Content answered by the service route, by `Resource` (tile, scene, style, query). */
  served: "Served",
  jobs: "Jobs",
  eventsOutboxed: "EventsOutboxed",
  /** Both the bus and the outbox failed: the event is only in the log. */
  eventsLost: "EventsLost",
  eventsRedelivered: "EventsRedelivered",
  /** Events the bus still refused on a redelivery run (they wait for the next). */
  redeliveryRefused: "RedeliveryRefused",
  /** Events past their retention that redelivery gave up on. */
  eventsGivenUp: "EventsGivenUp",
  outboxOldestAge: "OutboxOldestAgeSeconds",
  signInLockouts: "SignInLockouts",
} as const;

/** What the service route serves, by kind: the `Resource` dimension of `Served`. */
export const SERVED_RESOURCES = ["tile", "vector-tile", "style", "scene", "query"] as const;
export type ServedResource = (typeof SERVED_RESOURCES)[number];

/** The outcome class of a request: what a client was answered, whatever the HTTP status carried it. */
export type Outcome = "ok" | "client-error" | "server-error";
export const OUTCOMES: readonly Outcome[] = ["ok", "client-error", "server-error"];

export function outcomeOf(code: number): Outcome {
  if (code >= 500) return "server-error";
  if (code >= 400) return "client-error";
  return "ok";
}

/** Which requests the read-latency alarm watches: reads map clients and apps wait on. */
export type Kind = "read" | "other";

let routesByKey: Map<string, RouteSpec> | undefined;

/**
 * A request's operation, named by its declared route (found by API Gateway's route key), and its kind; a
 * handler run outside a declared route (a test's) is named after its operation.
 */
export function routeOf(routeKey: string, name: string): { operation: string; kind: Kind } {
  routesByKey ??= new Map(ROUTES.flatMap((r): [string, RouteSpec][] => routeKeys(r).map((key) => [key, r])));
  const route = routesByKey.get(routeKey);
  if (route) return { operation: route.id, kind: route.read ? "read" : "other" };
  return { operation: name.toLowerCase().replace(/[^a-z0-9]+/g, "-"), kind: "other" };
}

type Unit = "Count" | "Milliseconds" | "Bytes" | "Seconds";

export interface Directive {
  /** Dimension sets over the line's dimension members (`Stack` is added to each). */
  readonly dimensions: readonly (readonly string[])[];
  readonly metrics: Readonly<Record<string, { readonly value: number; readonly unit: Unit }>>;
}

let stack: string | undefined;
let sink = (line: string) => {
  process.stdout.write(`${line}\n`);
};

/** Where lines go (tests collect them); standard output unless told otherwise. */
export function setMetricsSink(write: (line: string) => void): void {
  sink = write;
}

/**
 * Writes one EMF document: `directives` name the metrics and their dimension sets, `dimensions` holds the
 * dimension members (strings), `properties` anything else worth finding in the log (never a dimension).
 */
export function putMetrics(
  directives: readonly Directive[],
  dimensions: Readonly<Record<string, string>> = {},
  properties: Readonly<Record<string, unknown>> = {},
): void {
  stack ??= process.env.MAPGATE_STACK || NAMESPACE;
  const values: Record<string, number> = {};
  const doc = {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: directives.map((d) => ({
        Namespace: NAMESPACE,
        Dimensions: d.dimensions.map((set) => [STACK_DIMENSION, ...set]),
        Metrics: Object.entries(d.metrics).map(([name, m]) => {
          values[name] = m.value;
          return { Name: name, Unit: m.unit };
        }),
      })),
    },
    ...properties,
    [STACK_DIMENSION]: stack,
    ...dimensions,
    ...values,
  };
  sink(JSON.stringify(doc));
}

/** One count with the given dimension members, each its own dimension set besides the deployment's total. */
export function count(name: string, dimensions: Readonly<Record<string, string>> = {}, value = 1): void {
  const keys = Object.keys(dimensions);
  putMetrics(
    [{ dimensions: keys.length ? [keys, []] : [[]], metrics: { [name]: { value, unit: "Count" } } }],
    dimensions,
  );
}

/** What the pipeline knows of a request when it is answered. */
export interface RequestFigures {
  readonly operation: string;
  readonly kind: Kind;
  readonly code: number;
  readonly ms: number;
  readonly bytes: number;
  readonly requestId: string | undefined;
  /** The kind of content the service route served (tile, scene, style, query), when it served some. */
  readonly resource?: string | undefined;
}

/** The request line's metric declarations: the same for every request, so serialised once (with and without `Served`). */
function requestDirectives(served: boolean): Directive[] {
  return [
    {
      dimensions: [["Operation", "Outcome"], ["Outcome"]],
      metrics: { [METRIC.requests]: { value: 1, unit: "Count" } },
    },
    {
      dimensions: [["Operation"], ["Kind"]],
      metrics: {
        [METRIC.latency]: { value: 0, unit: "Milliseconds" },
        [METRIC.responseBytes]: { value: 0, unit: "Bytes" },
      },
    },
    ...(served
      ? [{ dimensions: [["Resource"]], metrics: { [METRIC.served]: { value: 1, unit: "Count" as const } } }]
      : []),
  ];
}

const cloudWatchMetrics = (directives: readonly Directive[]) =>
  JSON.stringify(
    directives.map((d) => ({
      Namespace: NAMESPACE,
      Dimensions: d.dimensions.map((set) => [STACK_DIMENSION, ...set]),
      Metrics: Object.entries(d.metrics).map(([name, m]) => ({ Name: name, Unit: m.unit })),
    })),
  );
const REQUEST_METRICS = {
  plain: cloudWatchMetrics(requestDirectives(false)),
  served: cloudWatchMetrics(requestDirectives(true)),
};

/** A number as JSON writes it (NaN and the infinities as null). */
const jsonNumber = (n: number) => (Number.isFinite(n) ? String(n) : "null");

/**
 * The request line: its count by operation and outcome, and by outcome alone (the error rate); its latency and
 * response bytes by operation, and by kind (the read latency the alarm watches). Latency is not split by outcome:
 * each series is billed, and an error's latency is rarely the question. Written as putMetrics writes it (same
 * members, same order: test/metrics.test.ts compares them), from its declarations serialised once: this line is on
 * every request's path, where building and serialising its nested objects was ~2% of a warm read.
 */
export function requestMetrics(r: RequestFigures): void {
  stack ??= process.env.MAPGATE_STACK || NAMESPACE;
  const outcome = outcomeOf(r.code);
  const served = outcome === "ok" && r.resource !== undefined;
  sink(
    `{"_aws":{"Timestamp":${Date.now()},"CloudWatchMetrics":${served ? REQUEST_METRICS.served : REQUEST_METRICS.plain}},` +
      `${r.requestId === undefined ? "" : `"requestId":${JSON.stringify(r.requestId)},`}"code":${jsonNumber(r.code)},"${STACK_DIMENSION}":${JSON.stringify(stack)},` +
      `"Operation":${JSON.stringify(r.operation)},"Outcome":"${outcome}","Kind":"${r.kind}"` +
      `${served ? `,"Resource":${JSON.stringify(r.resource)}` : ""},` +
      `"${METRIC.requests}":1,"${METRIC.latency}":${jsonNumber(r.ms)},"${METRIC.responseBytes}":${jsonNumber(r.bytes)}` +
      `${served ? `,"${METRIC.served}":1` : ""}}`,
  );
}
