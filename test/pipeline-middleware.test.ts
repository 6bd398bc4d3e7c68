// Each middleware of the shared pipeline (shared/http/pipeline/) run in a real middy chain of its own, as middy's
// own packages are tested: the steps it relies on before it, an inline step that looks at `request.internal`
// after it, real (in-memory) dynalite tables behind the caller. What each step adds to the state, and what it
// answers when the state it relies on is missing.
import middy from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Invocation, Operation, RestContext } from "#shared/http/pipeline.ts";
import type { PipelineState, RestMiddleware, RestMiddyRequest } from "#shared/http/pipeline/state.ts";
import { apiEvent, inProcessStore, lambdaContext } from "./helpers/in-process.ts";

let dynamo: Awaited<ReturnType<typeof inProcessStore>>;
let m: {
  accessLog: typeof import("#shared/http/pipeline/access-log.ts").accessLog;
  errorEnvelope: typeof import("#shared/http/pipeline/error-envelope.ts").errorEnvelope;
  normalize: typeof import("#shared/http/pipeline/normalize.ts").normalize;
  caller: typeof import("#shared/http/pipeline/caller.ts").caller;
  compute: typeof import("#shared/http/pipeline/compute.ts").compute;
  respond: typeof import("#shared/http/pipeline/respond.ts").respond;
};
let metrics: string[] = [];
let portalId: string;

beforeAll(async () => {
  dynamo = await inProcessStore();
  // The organization an anonymous caller is answered by (the deployment's default one), and its admin.
  const admin = { username: "steps-admin", password: "steps-password-1" };
  const org = await (await import("#infra/admin/operations.ts")).bootstrapOrganization({ name: "Steps Org", admin });
  portalId = org.portal.portalId;
  (await import("#shared/metrics.ts")).setMetricsSink((line) => metrics.push(line));
  m = {
    accessLog: (await import("#shared/http/pipeline/access-log.ts")).accessLog,
    errorEnvelope: (await import("#shared/http/pipeline/error-envelope.ts")).errorEnvelope,
    normalize: (await import("#shared/http/pipeline/normalize.ts")).normalize,
    caller: (await import("#shared/http/pipeline/caller.ts")).caller,
    compute: (await import("#shared/http/pipeline/compute.ts")).compute,
    respond: (await import("#shared/http/pipeline/respond.ts")).respond,
  };
});
afterAll(async () => {
  await dynamo?.close();
});

/** A chain of the given steps; what `request.internal` held when it ended (answered or failed) is kept. */
function chain(steps: readonly RestMiddleware[]) {
  const seen: { state?: PipelineState; error?: unknown } = {};
  const keep = (request: RestMiddyRequest) => {
    seen.state = { ...request.internal };
    seen.error = request.error ?? undefined;
  };
  // Outermost, so it sees the state after every other step, whether the chain answered or failed.
  let handler = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RestContext, PipelineState>({
    timeoutEarlyInMillis: 0,
  }).use({ after: keep, onError: keep });
  for (const step of steps) handler = handler.use(step);
  const run = async (event: APIGatewayProxyEventV2, context: RestContext = lambdaContext()) => {
    let response: APIGatewayProxyStructuredResultV2 | undefined;
    let thrown: unknown;
    try {
      response = await handler(event, context);
    } catch (err) {
      thrown = err;
    }
    return { response, thrown, state: seen.state ?? {}, error: seen.error };
  };
  return run;
}

const op: Operation = { name: "Step Test" };
const body = (r: APIGatewayProxyStructuredResultV2 | undefined) => JSON.parse(r?.body ?? "null");

describe("normalize()", () => {
  it("adds the parameters, origins and rendering; a JSONP callback rides on the rendering", async () => {
    const { state } = await chain([m.normalize(op)])(apiEvent("/x", { query: "f=json&callback=cb.x&a=1" }));
    expect(state.rendering).toEqual({ format: "json", https: true, callback: "cb.x" });
    expect(state.normalized?.params.get("a")).toBe("1");
    expect(state.normalized).toMatchObject({
      contentFormat: undefined,
      origin: "https://maps.example.test",
      httpsOrigin: "https://maps.example.test",
    });
  });

  it("sets the rendering before it refuses a bad format or callback, so the refusal is rendered too", async () => {
    const badFormat = await chain([m.normalize(op)])(apiEvent("/x", { query: "f=xml" }));
    expect(badFormat.error).toMatchObject({ code: 400, message: "Invalid format." });
    expect(badFormat.state.rendering).toEqual({ format: "json", https: true });
    expect(badFormat.state.normalized).toBeUndefined();
    const badCallback = await chain([m.normalize(op)])(
      apiEvent("/x", { query: "f=json&callback=a(b)", proto: "http" }),
    );
    expect(badCallback.error).toMatchObject({ code: 400, message: "Invalid callback." });
    expect(badCallback.state.rendering).toEqual({ format: "json", https: false });
  });

  it("answers an operation's own content format as json for errors, and refuses secrets in the URL", async () => {
    const content = await chain([m.normalize({ name: "Q", contentFormats: ["pbf"] })])(
      apiEvent("/x", { query: "f=PBF" }),
    );
    expect(content.state.rendering).toEqual({ format: "json", https: true });
    expect(content.state.normalized?.contentFormat).toBe("pbf");
    const secret = await chain([m.normalize({ name: "Sign In", bodyOnly: ["password"] })])(
      apiEvent("/x", { query: "password=p" }),
    );
    expect(secret.error).toMatchObject({ message: "Credentials in the URL." });
    expect(secret.state.rendering).toBeUndefined();
  });
});

describe("caller()", () => {
  it("resolves the anonymous caller to the default organization and builds the request", async () => {
    const { state } = await chain([m.normalize(op), m.caller(op)])(apiEvent("/x", { query: "f=json" }));
    expect(state.request).toMatchObject({
      method: "GET",
      format: "json",
      https: true,
      sourceIp: "192.0.2.10",
      identity: { kind: "anonymous" },
      portal: { portalId },
      path: "/x",
      csrf: undefined,
      csrfValid: false,
    });
    expect(state.showForm).toBeUndefined();
  });

  it("marks a browser's GET of a POST-only operation for its form, and refuses it for JSON", async () => {
    const postOnly: Operation = { name: "Do", postOnly: true };
    const html = await chain([m.normalize(postOnly), m.caller(postOnly)])(apiEvent("/x"));
    expect(html.state.showForm).toBe(true);
    // A first HTML page over HTTPS sets the CSRF cookie its forms pair with.
    expect(html.state.cookies).toHaveLength(1);
    expect(html.state.request?.csrf).toEqual(expect.any(String));
    const json = await chain([m.normalize(postOnly), m.caller(postOnly)])(apiEvent("/x", { query: "f=json" }));
    expect(json.error).toMatchObject({ code: 405 });
  });

  it("takes an invoked operation's caller from the context, with no credential read", async () => {
    const { getUser } = await import("#shared/stores/users.ts");
    const { getPortal } = await import("#shared/stores/portals.ts");
    const portal = await getPortal(portalId);
    const user = await getUser("steps-admin");
    if (!portal || !user) throw new Error("bootstrap did not create the organization");
    // As the operations function builds it from the caller IAM identified (shared/invocation/caller.ts).
    const invocation: Invocation = {
      identity: {
        kind: "user",
        user,
        portal,
        claims: {
          kind: "user",
          username: user.username,
          portalId,
          audience: { kind: "portal" },
          client: "none",
          bound: "",
          expires: Date.now() + 60_000,
          issued: Date.now(),
          id: "iam.role-pipeline",
        },
        credential: { token: "", source: "iam" },
        privileges: [],
      },
      callerId: "role/pipeline",
    };
    const context: RestContext = { ...lambdaContext(), mapgate: { invocation } };
    const { state } = await chain([m.normalize(op), m.caller(op)])(
      apiEvent("/x", { body: "f=json&token=not-a-token" }),
      context,
    );
    expect(state.request).toMatchObject({ method: "POST", invocation: { callerId: "role/pipeline" } });
    expect(state.request?.identity).toBe(invocation.identity);
  });

  it("fails as an internal fault when normalize() did not run before it", async () => {
    const { error, thrown, state } = await chain([m.caller(op)])(apiEvent("/x", { query: "f=json" }));
    expect(String(error)).toContain("pipeline state missing: normalize() did not run");
    // Without errorEnvelope() in this chain, nothing answers it: the fault reaches the caller of the chain.
    expect(thrown).toBe(error);
    expect(state.request).toBeUndefined();
  });
});

describe("compute()", () => {
  it("puts the operation's answer in the state, for respond() to render", async () => {
    const answer = { done: true };
    const { state, response } = await chain([m.normalize(op), m.caller(op), m.compute(op, async () => answer)])(
      apiEvent("/x", { query: "f=json" }),
    );
    expect(state.answer).toBe(answer);
    // Nothing rendered it: the response is still middy's empty one.
    expect(response).toBeUndefined();
  });

  it("answers a browser's form instead of running a POST-only operation, with the caller's starting values", async () => {
    let ran = 0;
    const form: Operation = { name: "Do", postOnly: true, formValues: async () => ({ thing: "kept" }) };
    const compute = m.compute(form, async () => {
      ran++;
      return {};
    });
    const { state } = await chain([m.normalize(form), m.caller(form), compute])(apiEvent("/x"));
    expect(state.answer).toMatchObject({ values: { thing: "kept" }, fields: undefined });
    expect(ran).toBe(0);
  });
});

describe("respond() and errorEnvelope()", () => {
  const full = (o: Operation, fn: () => Promise<object>) => [
    m.errorEnvelope(o),
    m.normalize(o),
    m.caller(o),
    m.respond(o),
    m.compute(o, fn),
  ];

  it("renders the answer once, in the requested format", async () => {
    const run = chain(full(op, async () => ({ n: 1 })));
    expect(body((await run(apiEvent("/x", { query: "f=json" }))).response)).toEqual({ n: 1 });
    const pjson = (await run(apiEvent("/x", { query: "f=pjson" }))).response;
    expect(pjson?.body).toBe('{\n  "n": 1\n}');
    const page = (await run(apiEvent("/x"))).response;
    expect(page?.headers?.["content-type"]).toBe("text/html; charset=utf-8");
  });

  it("answers the envelope for a step's refusal in the format chosen so far, and JSON before one was chosen", async () => {
    const run = chain(full(op, async () => ({})));
    const html = (await run(apiEvent("/x", { query: "f=html&callback=x" }))).response;
    // A callback is JSONP's only: on an html request it is not read, so nothing is refused.
    expect(html?.headers?.["content-type"]).toBe("text/html; charset=utf-8");
    const bad = await run(apiEvent("/x", { query: "f=xml" }));
    expect(body(bad.response)).toEqual({
      error: { code: 400, message: "Invalid format.", details: ["'f' must be one of html, json, pjson; got 'xml'."] },
    });
    expect(bad.state.errorCode).toBe(400);
    const plain = await run(apiEvent("/x", { body: "a=1", headers: { "content-type": "text/plain" } }));
    expect(body(plain.response)).toMatchObject({ error: { code: 400, message: "Unsupported content type." } });
  });

  it("answers a fault of ours without its detail", async () => {
    const run = chain(
      full(op, async () => {
        throw new Error("secret detail");
      }),
    );
    const r = await run(apiEvent("/x", { query: "f=json" }));
    expect(body(r.response)).toEqual({
      error: { code: 500, message: "An internal error occurred. It has been logged.", details: [] },
    });
    expect(JSON.stringify(r.response)).not.toContain("secret detail");
  });

  it("fails as an internal fault when compute() did not run before it", async () => {
    const { error } = await chain([m.normalize(op), m.caller(op), m.respond(op)])(apiEvent("/x", { query: "f=json" }));
    expect(String(error)).toContain("pipeline state missing: compute() did not run");
  });
});

describe("accessLog()", () => {
  it("starts the clock first and writes the metrics line with the outcome, answered or failed", async () => {
    const withLog = (o: Operation) => [m.accessLog(o), ...[m.errorEnvelope(o), m.normalize(o), m.caller(o)]];
    metrics = [];
    const ok = await chain([...withLog(op), m.respond(op), m.compute(op, async () => ({}))])(
      apiEvent("/x", { query: "f=json" }),
    );
    expect(ok.state.started).toEqual(expect.any(Number));
    metrics.push("--");
    await chain(withLog(op))(apiEvent("/x", { query: "f=xml" }));
    const [answered, failed] = metrics.join("\n").split("\n--\n");
    expect(JSON.parse(answered ?? "")).toMatchObject({ code: 200, Operation: "step-test", Outcome: "ok" });
    expect(JSON.parse(failed ?? "")).toMatchObject({ code: 400, Outcome: "client-error" });
  });
});
