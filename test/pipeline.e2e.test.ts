// The shared pipeline through the real local engine, over real HTTPS and HTTP.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { runningStore } from "./helpers/store.ts";
import { call, form } from "./helpers/http.ts";

let engine: RunningEngine;
let portalId: string;
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const plain = () => `${engine.ready.http}/portal/sharing/rest`;
const get = (url: string, headers?: Record<string, string>) =>
  call(url, { ca: engine.ca, ...(headers ? { headers } : {}) });
const post = (url: string, body: string | Buffer, headers?: Record<string, string>) =>
  call(url, { ca: engine.ca, body, ...(headers ? { headers } : {}) });

function admin(...args: string[]): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
    cwd: ROOT,
    encoding: "utf8",
  });
}

beforeAll(async () => {
  engine = await startEngine();
  portalId = (await get(`${rest()}/portals/self?f=json`)).json<{ id: string }>().id;
});
afterAll(async () => {
  await engine?.stop();
});

describe("formats", () => {
  it("f=json answers compact JSON with the portal's public description", async () => {
    const res = await get(`${rest()}/portals/self?f=json`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers["strict-transport-security"]).toBe("max-age=31536000");
    expect(res.text).not.toContain("\n");
    const body = res.json();
    expect(body).toMatchObject({ id: portalId, name: "mapgate Demo", isPortal: true, allSSL: false });
    expect(body.url).toBe(`${engine.ready.https}/portal`);
    expect(body).not.toHaveProperty("user");
  });

  it("f=pjson answers the same data pretty-printed as text/plain", async () => {
    const [json, pjson] = await Promise.all([get(`${rest()}/info?f=json`), get(`${rest()}/info?f=pjson`)]);
    expect(pjson.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(pjson.text).toBe(JSON.stringify(json.json(), null, 2));
    expect(json.json()).toEqual({
      owningSystemUrl: `${engine.ready.https}/portal`,
      authInfo: {
        isTokenBasedSecurity: true,
        tokenServicesUrl: `${engine.ready.https}/portal/sharing/rest/generateToken`,
      },
      currentVersion: "8.4",
    });
  });

  it("f=html (and no f at all) answers a readable, escaped UTF-8 page under a strict CSP", async () => {
    for (const url of [`${rest()}/portals/self?f=html`, `${rest()}/portals/self`]) {
      const res = await get(url);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.headers["content-security-policy"]).toMatch(/^default-src 'none'; style-src 'sha256-/);
      expect(res.text).toMatch(/^<!DOCTYPE html>/);
      expect(res.text).toContain('<meta charset="utf-8">');
      expect(res.text).toContain(`<tr><th>id</th><td>${portalId}</td></tr>`);
      expect(res.text).not.toContain("<script");
    }
  });

  it("f is case-insensitive in its value", async () => {
    expect((await get(`${rest()}/info?f=JSON`)).headers["content-type"]).toBe("application/json; charset=utf-8");
  });

  it("an unsupported f is a 400 in the JSON envelope", async () => {
    const res = await get(`${rest()}/info?f=xml`);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({
      error: { code: 400, message: "Invalid format.", details: ["'f' must be one of html, json, pjson; got 'xml'."] },
    });
  });

  it("JSONP wraps f=json in the callback; a callback that is not an identifier is refused", async () => {
    const res = await get(`${rest()}/info?f=json&callback=dojo.io.script.jsonp_dojoIoScript1._jsonpCallback`);
    expect(res.headers["content-type"]).toBe("application/javascript; charset=utf-8");
    const info = (await get(`${rest()}/info?f=json`)).text;
    expect(res.text).toBe(`/**/dojo.io.script.jsonp_dojoIoScript1._jsonpCallback(${info});`);
    const bad = await get(`${rest()}/info?f=json&callback=${encodeURIComponent("alert(1)//")}`);
    expect(bad.json()).toMatchObject({ error: { code: 400, message: "Invalid callback." } });
  });
});

describe("parameters", () => {
  it("reads a form body (delivered base64-encoded, as API Gateway does) the same as a query", async () => {
    const res = await post(`${rest()}/portals/self`, form({ f: "json" }));
    expect(res.json()).toMatchObject({ id: portalId });
    const mixed = await post(`${rest()}/portals/self?f=json`, form({ unrelated: "x" }));
    expect(mixed.json()).toMatchObject({ id: portalId });
  });

  it("accepts a repeated parameter with one value and refuses two different values", async () => {
    expect((await get(`${rest()}/info?f=json&f=json`)).json()).toHaveProperty("authInfo");
    const res = await post(`${rest()}/info?f=json`, form({ f: "pjson" }));
    expect(res.json()).toEqual({
      error: {
        code: 400,
        message: "Conflicting parameters.",
        details: ["'f' was given more than once with different values."],
      },
    });
  });

  it("refuses a body over the pipeline's limit with the envelope, and one over API Gateway's with 413", async () => {
    const big = await post(`${rest()}/info?f=json`, `a=${"x".repeat(2 * 1024 * 1024)}`);
    expect(big.json()).toEqual({
      error: {
        code: 413,
        message: "Request body too large.",
        details: ["The request body may hold at most 1048576 bytes."],
      },
    });
    const huge = await post(`${rest()}/info?f=json`, Buffer.alloc(11 * 1024 * 1024, 97)).catch((e: Error) => e);
    // The gateway answers 413 and closes; a client still sending may see the reset instead.
    if (!(huge instanceof Error)) expect(huge.status).toBe(413);
    expect((await get(`${rest()}/info?f=json`)).status).toBe(200);
    // Under API Gateway's 10 MB but over Lambda's 6 MB once base64-encoded into the event (5 MB × 4/3): AWS
    // would refuse the invocation, and so does the local engine, before any handler runs.
    const overLambda = await post(`${rest()}/info?f=json`, Buffer.alloc(5 * 1024 * 1024, 97));
    expect([overLambda.status, overLambda.json()]).toEqual([413, { message: "Request Entity Too Large" }]);
    const underLambda = await post(`${rest()}/info?f=json`, Buffer.alloc(4 * 1024 * 1024, 97));
    expect(underLambda.json()).toMatchObject({ error: { code: 413, message: "Request body too large." } });
  });

  it("refuses bodies that are not forms", async () => {
    const res = await post(`${rest()}/info?f=json`, '{"f":"json"}', { "content-type": "application/json" });
    expect(res.json()).toMatchObject({ error: { code: 400, message: "Unsupported content type." } });
  });
});

describe("routes and callers", () => {
  it("answers an unknown route (any method) with the envelope", async () => {
    const res = await get(`${engine.ready.https}/no/such/thing?f=json`);
    expect(res.json()).toEqual({
      error: {
        code: 404,
        message: "Resource does not exist or is inaccessible.",
        details: ["Nothing is served at GET /no/such/thing."],
      },
    });
    // A path's GET and POST are one ANY route, as on API Gateway: other methods reach the pipeline, which refuses them.
    for (const method of ["PUT", "DELETE", "PATCH"]) {
      const other = await call(`${rest()}/info?f=json`, { method, ca: engine.ca });
      expect(other.json()).toEqual({
        error: { code: 405, message: "Method not supported.", details: ["Only GET and POST are supported."] },
      });
    }
  });

  it("serves the hosted server's rest/info pointing at the portal's token service", async () => {
    const res = await get(`${engine.ready.https}/arcgis/rest/info?f=json`);
    expect(res.json()).toEqual({
      currentVersion: 10.81,
      fullVersion: "10.8.1",
      owningSystemUrl: `${engine.ready.https}/portal`,
      owningTenant: portalId,
      authInfo: {
        isTokenBasedSecurity: true,
        tokenServicesUrl: `${engine.ready.https}/portal/sharing/rest/generateToken`,
        shortLivedTokenValidity: 60,
      },
    });
    const missing = await get(`${engine.ready.https}/elsewhere/rest/info?f=json`);
    expect(missing.json()).toMatchObject({ error: { code: 404, details: ["No server is hosted at /elsewhere."] } });
  });

  it("refuses a token it cannot verify in every place a token may travel (498)", async () => {
    const invalid = {
      error: { code: 498, message: "Invalid token.", details: ["Invalid token."] },
    };
    expect((await get(`${rest()}/portals/self?f=json&token=abc.def`)).json()).toEqual(invalid);
    expect((await get(`${rest()}/portals/self?f=json`, { "x-esri-authorization": "Bearer abc" })).json()).toEqual(
      invalid,
    );
    expect((await get(`${rest()}/portals/self?f=json`, { authorization: "Bearer abc" })).json()).toEqual(invalid);
    // A cookie the browser sends unasked is different: a stale or broken one means "not signed in", and the
    // answer clears it (otherwise a revoked session would lock the browser out of the sign-in page).
    const cookie = `vendor_authcookie=${encodeURIComponent(JSON.stringify({ token: "abc" }))}`;
    for (const stale of [cookie, "vendor_authcookie=%7Bnot-json"]) {
      const res = await get(`${rest()}/portals/self?f=json`, { cookie: stale });
      expect(res.json()).toMatchObject({ id: expect.any(String) });
      expect(res.headers["set-cookie"]).toEqual([
        "vendor_authcookie=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0",
      ]);
    }
    // JSONP never acts on the ambient cookie, so a cross-site page cannot read a signed-in user's data.
    expect((await get(`${rest()}/portals/self?f=json&callback=cb`, { cookie })).text).toMatch(/^\/\*\*\/cb\(\{"id"/);
  });

  it("refuses two different tokens on one request", async () => {
    const res = await get(`${rest()}/portals/self?f=json&token=a`, { authorization: "Bearer b" });
    expect(res.json()).toMatchObject({ error: { code: 400, message: "Conflicting tokens." } });
  });
});

describe("HTTPS rules", () => {
  it("serves plain HTTP while the organization allows it, and refuses it once allSSL is set", async () => {
    expect((await get(`${plain()}/info?f=json`)).json()).toHaveProperty("authInfo");
    admin("update-portal", "--portal", portalId, "--all-ssl", "true");
    try {
      const refused = await get(`${plain()}/info?f=json`, { "x-forwarded-proto": "https" });
      expect(refused.json()).toEqual({
        error: { code: 403, message: "SSL Required", details: ["This organization accepts HTTPS requests only."] },
      });
      expect(refused.headers["strict-transport-security"]).toBeUndefined();
      expect((await get(`${rest()}/info?f=json`)).json()).toHaveProperty("authInfo");
      expect((await get(`${rest()}/portals/self?f=json`)).json()).toMatchObject({ allSSL: true });
    } finally {
      admin("update-portal", "--portal", portalId, "--all-ssl", "false");
    }
  });
});

describe("internal faults", () => {
  it("answers a fault with no internal detail and logs the detail", async () => {
    const ddb = runningStore(engine.dataDir);
    const Key = { portalId };
    const { Item } = await ddb.send(new GetCommand({ TableName: "mapgate-portals", Key }));
    // A stored record that breaks its invariant: the kind of fault only the server can cause.
    await ddb.send(new PutCommand({ TableName: "mapgate-portals", Item: { ...Item, allSSL: "sometimes" } }));
    try {
      const res = await get(`${rest()}/info?f=json`);
      expect(res.json()).toEqual({
        error: { code: 500, message: "An internal error occurred. It has been logged.", details: [] },
      });
      expect(res.text).not.toMatch(/corrupt|allSSL|stack|\.ts/);
      await new Promise((r) => setTimeout(r, 100));
      const logged = engine.lines.filter((l) => l.includes('"internal error"')).map((l) => JSON.parse(l));
      expect(logged.at(-1)).toMatchObject({
        level: "ERROR",
        operation: "Info",
        error: { message: "corrupt portal: allSSL is not a boolean" },
      });
      expect(logged.at(-1)?.error?.stack).toContain("shared/stores/records.ts");
    } finally {
      await ddb.send(new PutCommand({ TableName: "mapgate-portals", Item }));
      ddb.destroy();
    }
    expect((await get(`${rest()}/info?f=json`)).json()).toHaveProperty("authInfo");
  });

  it("logs a browser's form page like any other request", async () => {
    await get(`${rest()}/generateToken`);
    await new Promise((r) => setTimeout(r, 100));
    const requests = engine.lines.filter((l) => l.includes('"message":"request"')).map((l) => JSON.parse(l));
    expect(requests.at(-1)).toMatchObject({ operation: "Generate Token", method: "GET", format: "html" });
  });

  it("logs one JSON line per request without parameters or credentials", async () => {
    await get(`${rest()}/portals/self?f=json&token=secret-token-value&password=hunter2-secret`);
    await new Promise((r) => setTimeout(r, 100));
    const all = engine.lines.join("\n");
    expect(all).not.toContain("secret-token-value");
    expect(all).not.toContain("hunter2-secret");
    expect(all).not.toContain("admin-Pass-1234");
    const requests = engine.lines.filter((l) => l.includes('"message":"request"')).map((l) => JSON.parse(l));
    expect(requests.at(-1)).toMatchObject({
      operation: "Portal",
      method: "GET",
      path: "/portal/sharing/rest/portals/self",
      errorCode: 498,
    });
  });
});
