// The local stand-in for API Gateway: turns each HTTP(S) request into the payload-2.0 event API Gateway
// would send and calls the same handler module the CDK deploys for the matching route.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { lambdaContext } from "./lambda-context.ts";
import { LAMBDA_PAYLOAD_BYTES, ROUTES, type RouteSpec, routeAddresses } from "#shared/system.ts";
import { grants } from "#shared/config.ts";
import { Deadlines } from "#shared/deadlines.ts";
import { logger } from "#shared/log.ts";
import { EncodedResult, FunctionPool } from "./function-pool.ts";
import { mayExceedPayload, resultMayExceed } from "./payload-limit.ts";

/** API Gateway's own limits: 10 MB request payload, 29 s integration timeout. */
export const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
const INTEGRATION_TIMEOUT_MS = 29_000;
/** How often requests in flight are checked against the integration timeout (its precision). */
const TIMEOUT_SWEEP_MS = 250;

export type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
/** A route's function as the gateway runs it: a pooled one may answer with its body already encoded. */
type Invoke = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2 | EncodedResult>;

interface CompiledRoute {
  readonly spec: RouteSpec;
  /** The path this pattern matches: the route's own or one of its aliases (`alsoAt`). */
  readonly path: string;
  /** The methods it takes at that path (an alias may take fewer than its route); `any`: GET and POST as one. */
  readonly methods: readonly string[];
  readonly any: boolean;
  readonly pattern: RegExp;
  readonly names: readonly string[];
  readonly literalSegments: number;
  /** Runs the route's function (granted only the tables the route declares, as on AWS). */
  readonly invoke: Invoke;
  /** Stops an invocation past its time, where the function runs in a pool (elsewhere it cannot be stopped). */
  readonly pool?: FunctionPool;
}

/**
 * A function the gateway runs: its handler in this thread, or a pool of worker threads loading its module beside
 * the same handler here, with the requests each takes (the pool those whose path `pooled` accepts).
 */
export type Loaded =
  Handler | { readonly pool: FunctionPool; readonly here: Handler; readonly pooled: (path: string) => boolean };

function compile(
  spec: RouteSpec,
  loaded: Loaded,
  address: { readonly path: string; readonly methods: readonly string[]; readonly any: boolean } = {
    path: spec.path,
    methods: [],
    any: false,
  },
): CompiledRoute {
  const path = address.path;
  const names: string[] = [];
  let literalSegments = 0;
  const source = path
    .split("/")
    .map((segment) => {
      const greedy = segment.match(/^\{(\w+)\+\}$/);
      if (greedy?.[1]) {
        names.push(greedy[1]);
        return "(.+)";
      }
      const param = segment.match(/^\{(\w+)\}$/);
      if (param?.[1]) {
        names.push(param[1]);
        return "([^/]+)";
      }
      literalSegments++;
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  // API Gateway routes `/a/b/` to the `/a/b` route too (clients such as the ArcGIS REST JS app-credential
  // manager call `…/oauth2/token/`).
  const tables = new Set(Object.keys(spec.tables));
  return {
    spec,
    path,
    methods: address.methods,
    any: address.any,
    pattern: new RegExp(`^${source}/?$`),
    names,
    literalSegments,
    ...(typeof loaded === "function"
      ? { invoke: (event, context) => grants.run(tables, () => loaded(event, context)) }
      : {
          invoke: (event, context) =>
            loaded.pooled(event.rawPath)
              ? loaded.pool.invoke(event, context)
              : grants.run(tables, () => loaded.here(event, context)),
          pool: loaded.pool,
        }),
  };
}

const handlerFile = (functionsDir: string, spec: RouteSpec) => `${functionsDir}/${spec.handler ?? spec.id}.ts`;

async function importHandler(functionsDir: string, spec: RouteSpec): Promise<Handler> {
  const file = spec.handler ?? spec.id;
  const mod = (await import(pathToFileURL(handlerFile(functionsDir, spec)).href)) as { handler?: Handler };
  if (typeof mod.handler !== "function") throw new Error(`functions/${file}.ts exports no handler`);
  return mod.handler;
}

/** Text bodies arrive as text; everything else (forms included, as on HTTP APIs) arrives base64-encoded. */
function isText(contentType: string | undefined): boolean {
  const type = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  return type.startsWith("text/") || /^application\/(json|xml|javascript|[\w.+-]+\+(xml|json))$/.test(type);
}

export interface GatewayOptions {
  /**
   * Routes whose functions run some requests in worker threads (function-pool.ts): by route id, which paths (a
   * request that can hold a thread for seconds); each route a pool of at most `size` instances whose metric lines
   * go to `metrics`. Its other requests (a tile, a service's JSON) run in this thread, with no hop between threads.
   */
  readonly workers?: {
    readonly routes: ReadonlyMap<string, (path: string) => boolean>;
    readonly size: number;
    readonly metrics: (line: string) => void;
  };
}

interface Matched {
  readonly route: CompiledRoute;
  readonly routeKey: string;
  /** Remembered with the match: each event gets a copy. */
  readonly pathParameters?: Readonly<Record<string, string>>;
}

/** How many distinct paths the gateway remembers the route of. */
const MATCH_MEMO = 4096;
const MATCH_MEMO_KEY = 512;

export class Gateway {
  readonly #routes: CompiledRoute[];
  readonly #fallback: CompiledRoute;
  #inFlight = 0;
  #idle: (() => void) | undefined;

  readonly #pools: readonly FunctionPool[];

  private constructor(routes: CompiledRoute[], fallback: CompiledRoute, pools: readonly FunctionPool[]) {
    this.#routes = routes;
    this.#fallback = fallback;
    this.#pools = pools;
  }

  /**
   * Imports every declared handler module once (a warm function per route). A function instead of a folder
   * answers each route's handler itself (the artifact test's, which runs the synthesized bundles elsewhere).
   */
  static async load(
    functions: string | ((spec: RouteSpec) => Promise<Loaded>),
    { workers }: GatewayOptions = {},
  ): Promise<Gateway> {
    const routes: CompiledRoute[] = [];
    let fallback: CompiledRoute | undefined;
    const pools: FunctionPool[] = [];
    try {
      for (const spec of ROUTES) {
        let loaded: Loaded;
        if (typeof functions !== "string") loaded = await functions(spec);
        else {
          const pooled = workers?.routes.get(spec.id);
          const here = await importHandler(functions, spec);
          if (pooled && workers) {
            const pool = await FunctionPool.start({
              file: handlerFile(functions, spec),
              tables: new Set(Object.keys(spec.tables)),
              size: workers.size,
              metrics: workers.metrics,
            });
            pools.push(pool);
            loaded = { pool, here, pooled };
          } else loaded = here;
        }
        // An alias is one more pattern leading to the same function, as on AWS one more route on its integration.
        if (spec.methods === "$default") fallback = compile(spec, loaded);
        else for (const address of routeAddresses(spec)) routes.push(compile(spec, loaded, address));
      }
      if (!fallback) throw new Error("no $default route is declared");
    } catch (err) {
      await Promise.all(pools.map((p) => p.close()));
      throw err;
    }
    // API Gateway prefers the most specific route: more literal segments first, then a route without a
    // greedy `{name+}` variable over one with it.
    const greedy = (r: CompiledRoute) => (r.path.includes("+}") ? 1 : 0);
    routes.sort((a, b) => b.literalSegments - a.literalSegments || greedy(a) - greedy(b));
    return new Gateway(routes, fallback, pools);
  }

  /** Stops the functions' worker threads (once no request is in flight: see drained()). */
  async close(): Promise<void> {
    await Promise.all(this.#pools.map((p) => p.close()));
  }

  /**
   * Recent matches by method and path: the routes never change once loaded, so a path that matched once matches
   * the same way again (a scan tries up to every route's pattern). Bounded; the oldest entry leaves first.
   */
  readonly #matched = new Map<string, Matched>();

  match(method: string, path: string): Matched {
    const key = `${method} ${path}`;
    const known = this.#matched.get(key);
    if (known) return known;
    const found = this.#scan(method, path);
    if (key.length > MATCH_MEMO_KEY) return found; // a long path is matched afresh (the memo's size stays small)
    if (this.#matched.size >= MATCH_MEMO) this.#matched.delete(this.#matched.keys().next().value as string);
    this.#matched.set(key, found);
    return found;
  }

  #scan(method: string, path: string): Matched {
    for (const route of this.#routes) {
      if (route.spec.methods === "$default") continue;
      const any = route.any;
      if (!any && !route.methods.includes(method)) continue;
      const m = route.pattern.exec(path);
      if (!m) continue;
      try {
        const pathParameters = Object.fromEntries(route.names.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? "")]));
        return { route, routeKey: `${any ? "ANY" : method} ${route.path}`, pathParameters };
      } catch {
        break; // a malformed escape in the path: nothing can match it
      }
    }
    return { route: this.#fallback, routeKey: "$default" };
  }

  /**
   * Resolves once no request is being served and no handler is running (a handler that outlived its
   * 29 s integration timeout still counts: it may be writing). Used at shutdown, after the listeners
   * stop accepting.
   */
  drained(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idle = resolve;
    });
  }

  #enter(): () => void {
    this.#inFlight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#inFlight--;
      if (this.#inFlight === 0) this.#idle?.();
    };
  }

  /** Requests waiting on their handler, each until its integration timeout passes. */
  readonly #deadlines = new Deadlines(TIMEOUT_SWEEP_MS);

  serve(req: IncomingMessage, res: ServerResponse, domainName: string, proto: "https" | "http"): void {
    const leave = this.#enter();
    res.once("close", leave);
    this.#serve(req, res, domainName, proto).catch(() => {
      if (!res.headersSent) send(res, 500, { message: "Internal Server Error" });
      else res.destroy();
    });
  }

  async #serve(req: IncomingMessage, res: ServerResponse, domainName: string, proto: "https" | "http"): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    // A request that declares no body has none (HTTP/1.1 framing): Node discards what is left unread.
    const bodiless = req.headers["transfer-encoding"] === undefined && (req.headers["content-length"] ?? "0") === "0";
    if (!bodiless)
      for await (const chunk of req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_PAYLOAD_BYTES) {
          res.setHeader("connection", "close");
          send(res, 413, { message: "Request Entity Too Large" });
          req.destroy();
          return;
        }
        chunks.push(chunk);
      }
    const body = Buffer.concat(chunks);
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    const rawQueryString = q < 0 ? "" : url.slice(q + 1);
    const method = (req.method ?? "GET").toUpperCase();
    const { route, routeKey, pathParameters } = this.match(method, rawPath);
    const sourceIp = (req.socket.remoteAddress ?? "127.0.0.1").replace(/^::ffff:/, "");
    const headers: Record<string, string> = {};
    let cookies: string[] | undefined;
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      if (name === "cookie") {
        cookies = (Array.isArray(value) ? value.join(";") : value)
          .split(";")
          .map((c) => c.trim())
          .filter(Boolean);
        continue;
      }
      headers[name] = Array.isArray(value) ? value.join(",") : value;
    }
    // API Gateway sets these itself; whatever a client sent is replaced, so they can be trusted.
    headers["x-forwarded-proto"] = proto;
    headers["x-forwarded-for"] = sourceIp;
    headers["x-forwarded-port"] = domainName.split(":").pop() ?? "";
    // A Map first: a parameter named `__proto__` or `constructor` is a parameter like any other.
    const joined = new Map<string, string>();
    for (const [k, v] of new URLSearchParams(rawQueryString)) {
      const seen = joined.get(k);
      joined.set(k, seen === undefined ? v : `${seen},${v}`);
    }
    const query: Record<string, string> = Object.fromEntries(joined);
    const now = new Date();
    const requestId = randomUUID();
    const base64 = body.length > 0 && !isText(headers["content-type"]);
    const event: APIGatewayProxyEventV2 = {
      version: "2.0",
      routeKey,
      rawPath,
      rawQueryString,
      ...(cookies ? { cookies } : {}),
      headers,
      ...(rawQueryString ? { queryStringParameters: query } : {}),
      // A copy: the matched parameters are remembered for the next request of the path.
      ...(pathParameters ? { pathParameters: { ...pathParameters } } : {}),
      requestContext: {
        accountId: "000000000000",
        apiId: "local",
        domainName,
        domainPrefix: domainName.split(".")[0] ?? domainName,
        http: {
          method,
          path: rawPath,
          protocol: `HTTP/${req.httpVersion}`,
          sourceIp,
          userAgent: headers["user-agent"] ?? "",
        },
        requestId,
        routeKey,
        stage: "$default",
        time: now.toISOString(),
        timeEpoch: now.getTime(),
      },
      ...(body.length > 0 ? { body: body.toString(base64 ? "base64" : "utf8") } : {}),
      isBase64Encoded: base64,
    };
    const context = lambdaContext(
      `mapgate-${route.spec.id}`,
      `arn:aws:lambda:local:000000000000:function:mapgate-${route.spec.id}`,
      requestId,
      INTEGRATION_TIMEOUT_MS,
    );
    // Lambda refuses an invocation event over 6 MB (a form body grows by 4/3 in base64): so does this engine.
    if (
      mayExceedPayload(event.body, headerBytes(req)) &&
      Buffer.byteLength(JSON.stringify(event)) > LAMBDA_PAYLOAD_BYTES
    ) {
      send(res, 413, { message: "Request Entity Too Large" });
      return;
    }
    const running = route.invoke(event, context);
    const leave = this.#enter();
    running.then(leave, leave);
    const result = await this.#deadlines.race(
      running,
      performance.now() + INTEGRATION_TIMEOUT_MS,
      () => "timeout" as const,
    );
    if (result === "timeout") {
      // A function in a pool is stopped where it is, as Lambda stops one past its timeout; one in this thread
      // runs on unanswered.
      route.pool?.abandon(requestId);
      send(res, 503, { message: "Service Unavailable" });
      return;
    }
    // Its worker found it under the limit before it encoded its body.
    if (result instanceof EncodedResult) {
      writeResult(res, result.head, result.body);
      return;
    }
    // A result over 6 MB fails the invocation on AWS (API Gateway answers a bare 500): the same here.
    if (result && resultMayExceed(result) && Buffer.byteLength(JSON.stringify(result)) > LAMBDA_PAYLOAD_BYTES) {
      logger.error("response over Lambda's 6 MB payload limit", { path: event.rawPath });
      send(res, 500, { message: "Internal Server Error" });
      return;
    }
    writeResult(res, result);
  }
}

/** The request line and headers as received: what the event's path, query, headers and cookies are made of. */
function headerBytes(req: IncomingMessage): number {
  let n = (req.url ?? "").length * 2; // the path and query appear raw and parsed
  for (const h of req.rawHeaders) n += h.length + 4;
  return n;
}

function send(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Writes a function's result: its body as returned, or `encoded`, the bytes a pool's worker made of it (as this
 * would have: UTF-8 text, or what base64 stands for; see EncodedResult).
 */
function writeResult(
  res: ServerResponse,
  result: APIGatewayProxyStructuredResultV2 | string | undefined,
  encoded?: Buffer,
): void {
  // Payload 2.0: a result without statusCode is taken as a JSON body with status 200.
  if (result === undefined || typeof result === "string" || typeof result.statusCode !== "number") {
    send(res, 200, typeof result === "object" && result !== null ? result : { value: result ?? null });
    return;
  }
  // A text body goes to the socket as it is (encoded once, there): copying it into a Buffer first costs an
  // allocation the size of the answer on every request (a catalog's is half a megabyte).
  const text = encoded || result.isBase64Encoded ? undefined : (result.body ?? "");
  const body = encoded ?? text ?? Buffer.from(result.body ?? "", "base64");
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k.toLowerCase()] = String(v);
  if (result.cookies?.length) headers["set-cookie"] = result.cookies;
  headers["content-length"] = String(text === undefined ? body.length : Buffer.byteLength(text));
  res.writeHead(result.statusCode, headers);
  res.end(body);
}
