// The shared pipeline run in-process through its real middy chain against real (in-memory) dynalite
// tables: the event shapes the local gateway never produces (plain form bodies, API Gateway's own
// domain) and an operation that only accepts POST.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { apiEvent, inProcessStore, lambdaContext } from "./helpers/in-process.ts";

let dynamo: Awaited<ReturnType<typeof inProcessStore>>;
let pipeline: typeof import("#shared/http/pipeline.ts");
let portalSelf: typeof import("#functions/portal-self.ts");
let portalId: string;

beforeAll(async () => {
  dynamo = await inProcessStore();
  const { bootstrapOrganization } = await import("#infra/admin/operations.ts");
  ({
    portal: { portalId },
  } = await bootstrapOrganization({
    name: "Unit <Org> & Co",
    admin: { username: "unit-admin", password: "unit-password-1" },
  }));
  pipeline = await import("#shared/http/pipeline.ts");
  portalSelf = await import("#functions/portal-self.ts");
});
afterAll(async () => {
  await dynamo?.close();
});

const body = (r: APIGatewayProxyStructuredResultV2) => JSON.parse(r.body ?? "null");

describe("pipeline in-process", () => {
  it("reads a plain (not base64) form body exactly as a base64 one", async () => {
    const path = "/portal/sharing/rest/portals/self";
    const a = await portalSelf.handler(apiEvent(path, { body: "f=json" }), lambdaContext());
    const b = await portalSelf.handler(apiEvent(path, { body: "f=json", base64: true }), lambdaContext());
    expect(body(a)).toMatchObject({ name: "Unit <Org> & Co", url: "https://maps.example.test/portal" });
    expect(body(b)).toEqual(body(a));
  });

  it("escapes stored text in HTML pages", async () => {
    const r = await portalSelf.handler(
      apiEvent("/portal/sharing/rest/portals/self", { query: "f=html" }),
      lambdaContext(),
    );
    expect(r.body).toContain("Unit &#60;Org&#62; &#38; Co");
    expect(r.body).not.toContain("<Org>");
  });

  describe("a POST-only operation", () => {
    let calls = 0;
    const op = () =>
      pipeline.restHandler(
        { name: "Do Thing", postOnly: true, form: [{ name: "thing", label: "Thing", required: true }] },
        async (req) => {
          calls++;
          return { done: req.params.required("thing", "Unable to do thing.") };
        },
      );

    it("refuses GET for JSON without running the operation", async () => {
      const before = calls;
      const r = await op()(apiEvent("/x", { query: "f=json&thing=a" }), lambdaContext());
      expect(body(r)).toEqual({
        error: { code: 405, message: "Method not supported.", details: ["This operation requires POST."] },
      });
      expect(calls).toBe(before);
    });

    it("answers a browser's GET with a form that performs it", async () => {
      const r = await op()(apiEvent("/x", { query: "thing=%3Cb%3E" }), lambdaContext());
      expect(r.headers?.["content-type"]).toBe("text/html; charset=utf-8");
      // It posts to its path: the query's values (here a prefilled field) never compete with the edited ones.
      expect(r.body).toContain('<form method="post" action="/x">');
      expect(r.body).toContain('<input id="field-thing" type="text" name="thing" value="&#60;b&#62;" required>');
      expect(r.body).toContain("<option selected>html</option>");
    });

    it("runs on POST and reports a missing parameter as a 400 with details", async () => {
      expect(body(await op()(apiEvent("/x", { body: "f=json&thing=a" }), lambdaContext()))).toEqual({ done: "a" });
      expect(body(await op()(apiEvent("/x", { body: "f=json" }), lambdaContext()))).toEqual({
        error: { code: 400, message: "Unable to do thing.", details: ["'thing' must be specified."] },
      });
    });

    it("renders an error as an HTML page for f=html", async () => {
      const r = await op()(apiEvent("/x", { body: "f=html" }), lambdaContext());
      expect(r.body).toContain("<h1>Unable to do thing.</h1>");
      expect(r.headers?.["content-security-policy"]).toContain("default-src 'none'");
    });

    it("leads on from an error page: back to the form as it was filled in, and home", async () => {
      const from = (referer?: string) =>
        op()(apiEvent("/x", { body: "f=html", headers: referer ? { referer } : {} }), lambdaContext());
      // The page the form was on, its prefilled query kept.
      const r = await from("https://maps.example.test/x?thing=a&f=html");
      expect(r.body).toContain('<a href="/x?thing=a&#38;f=html">Back to the form</a> · <a href="/">Home</a>');
      // Another site's page is not linked: the operation's own form is.
      for (const referer of ["https://elsewhere.test/x?thing=a", "not a url", undefined])
        expect((await from(referer)).body, referer).toContain('<a href="/x?f=html">Back to the form</a>');
      // A GET that fails has no form to go back to; under the portal, its directory is offered.
      const portal = await portalSelf.handler(
        apiEvent("/portal/sharing/rest/portals/self", { query: "f=html&token=not-a-token" }),
        lambdaContext(),
      );
      expect(portal.body).toContain('class="error"');
      expect(portal.body).toContain(
        '<p><a href="/portal/sharing/rest?f=html">Directory</a> · <a href="/">Home</a></p>',
      );
    });
  });
});

describe("a job's page", () => {
  it("says a running job runs and links to itself, says why a failed one failed, and always leads on", async () => {
    const { createJob, finishJob, newJob } = await import("#shared/stores/jobs.ts");
    const { issueToken } = await import("#shared/auth/tokens.ts");
    const jobGet = (await import("#functions/job-get.ts")).handler;
    const { token } = await issueToken({
      username: "unit-admin",
      portalId,
      audience: { kind: "portal" },
      client: "requestip",
      bound: "192.0.2.10",
      expires: Date.now() + 3600_000,
    });
    const jobId = "d".repeat(32);
    const start = { jobId, portalId, owner: "unit-admin", operation: "describe", params: {}, origin: "" } as const;
    await createJob(newJob(start, "the-key"));
    const path = `/portal/sharing/rest/portals/self/jobs/${jobId}`;
    const show = async () =>
      (
        (await jobGet(
          apiEvent(path, { query: `f=html&key=the-key&token=${token}`, pathParameters: { portalId: "self", jobId } }),
          lambdaContext(),
        )) as APIGatewayProxyStructuredResultV2
      ).body ?? "";
    const leadsOn = '<p><a href="/portal/sharing/rest?f=html">Directory</a> · <a href="/">Home</a></p>';
    const running = await show();
    // Its own address with its key (never the token): reloading it is how its result is seen.
    expect(running).toContain(
      `The job is still running: <a href="${path}?key=the-key&#38;f=html">reload this page</a> to see how it ended.`,
    );
    expect(running).toContain(leadsOn);
    await finishJob(jobId, "failed", null, "The folder <is> gone.");
    const failed = await show();
    expect(failed).toContain("The job failed: The folder &#60;is&#62; gone.");
    expect(failed).not.toContain("reload this page");
    expect(failed).toContain(leadsOn);
  });
});

describe("table grants on one process", () => {
  it("keeps a function to the tables its route declares, as its environment does on AWS", async () => {
    const { grants } = await import("#shared/config.ts");
    const { ROUTES } = await import("#shared/system.ts");
    const route = ROUTES.find((r) => r.id === "portal-self");
    const path = "/portal/sharing/rest/portals/self";
    // Run as the gateway runs it: with the route's own tables, the handler works.
    const ok = await grants.run(new Set(Object.keys(route?.tables ?? {})), () =>
      portalSelf.handler(apiEvent(path, { query: "f=json" }), lambdaContext()),
    );
    expect(body(ok)).toMatchObject({ name: "Unit <Org> & Co" });
    // Without the portals table (a route that forgot to declare it), the store is out of reach: an internal
    // error answered without detail, as the missing environment variable would cause on AWS.
    const missing = await grants.run(new Set(["users", "tokens"]), () =>
      portalSelf.handler(apiEvent(path, { query: "f=json" }), lambdaContext()),
    );
    expect(body(missing)).toEqual({
      error: { code: 500, message: "An internal error occurred. It has been logged.", details: [] },
    });
  });
});

describe("the early answer before a function's timeout", () => {
  it("answers the error envelope when the work would outlast the invocation, and waits for work that ends in time", async () => {
    let finished = 0;
    const slow = pipeline.restHandler({ name: "Slow" }, async (req) => {
      await new Promise((r) => setTimeout(r, Number(req.params.get("ms"))));
      finished++;
      return { done: true };
    });
    // 400 ms left: answered ~250 ms before the end (within a sweep of 100 ms), not when the work ends 2 s later.
    const context = { ...lambdaContext(), getRemainingTimeInMillis: () => 400 };
    const started = performance.now();
    const late = await slow(apiEvent("/slow", { query: "f=json&ms=2000" }), context);
    const waited = performance.now() - started;
    expect(body(late)).toEqual({
      error: { code: 500, message: "An internal error occurred. It has been logged.", details: [] },
    });
    expect(waited).toBeGreaterThanOrEqual(140);
    expect(waited).toBeLessThan(1_000);
    expect(finished).toBe(0);
    const inTime = await slow(apiEvent("/slow", { query: "f=json&ms=20" }), context);
    expect(body(inTime)).toEqual({ done: true });
  });

  it("keeps each deadline within one sweep, and a settled promise leaves nothing waiting", async () => {
    const { Deadlines } = await import("#shared/deadlines.ts");
    const deadlines = new Deadlines(10);
    const never = new Promise<string>(() => undefined);
    const t0 = performance.now();
    expect(await deadlines.race(never, t0 + 50, () => "expired")).toBe("expired");
    expect(performance.now() - t0).toBeGreaterThanOrEqual(49);
    await expect(
      deadlines.race(never, performance.now() + 20, () => {
        throw new Error("too late");
      }),
    ).rejects.toThrow("too late");
    expect(await deadlines.race(Promise.resolve("done"), performance.now() + 10_000, () => "expired")).toBe("done");
    await expect(
      deadlines.race(Promise.reject(new Error("failed")), performance.now() + 10_000, () => 1),
    ).rejects.toThrow("failed");
  });
});

describe("a public origin with a base path", () => {
  it("starts every absolute URL with it (a custom domain's path mapping, CloudFront)", async () => {
    const { requestOrigins } = await import("#shared/urls.ts");
    const event = { headers: { "x-forwarded-proto": "https" }, requestContext: { domainName: "abc.execute-api.test" } };
    expect(requestOrigins(event, "https://gis.example.com/maps/")).toEqual({
      https: true,
      origin: "https://gis.example.com/maps",
      httpsOrigin: "https://gis.example.com/maps",
    });
    expect(requestOrigins(event, "").origin).toBe("https://abc.execute-api.test");
    // Configuration is read once per function, at cold start: a function started with the origin set.
    const before = process.env.PUBLIC_HTTPS_ORIGIN;
    process.env.PUBLIC_HTTPS_ORIGIN = "https://gis.example.com/maps/";
    vi.resetModules();
    try {
      (await import("#shared/metrics.ts")).setMetricsSink(() => undefined);
      const cold = (await import("#functions/portal-self.ts")).handler;
      const self = body(
        await cold(apiEvent("/portal/sharing/rest/portals/self", { query: "f=json" }), lambdaContext()),
      );
      expect(self).toMatchObject({
        portalHostname: "gis.example.com/maps/portal",
        url: "https://gis.example.com/maps/portal",
      });
      const info = (await import("#functions/sharing-info.ts")).handler;
      expect(body(await info(apiEvent("/portal/sharing/rest/info", { query: "f=json" }), lambdaContext()))).toEqual({
        currentVersion: "8.4",
        owningSystemUrl: "https://gis.example.com/maps/portal",
        authInfo: {
          isTokenBasedSecurity: true,
          tokenServicesUrl: "https://gis.example.com/maps/portal/sharing/rest/generateToken",
        },
      });
    } finally {
      if (before === undefined) delete process.env.PUBLIC_HTTPS_ORIGIN;
      else process.env.PUBLIC_HTTPS_ORIGIN = before;
      vi.resetModules();
    }
  });
});
