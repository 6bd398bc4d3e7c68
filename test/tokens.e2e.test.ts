// generateToken and token verification through the real local engine over HTTPS.
import { execFileSync } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { join } from "node:path";
import { EncryptJWT, SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { type Answer, call, form } from "./helpers/http.ts";
import { engineKey, forge } from "./helpers/tokens.ts";

/** The registered claims' setters jose's JWT builders share (each answers itself). */
interface Claimed<T> {
  setIssuer(issuer: string): T;
  setSubject(subject: string): T;
  setAudience(audience: string): T;
  setJti(jti: string): T;
  setIssuedAt(): T;
  setExpirationTime(exp: number): T;
}

const LOCKOUT_SECONDS = 5;
let engine: RunningEngine;
let portalId: string;
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const INVALID = { error: { code: 498, message: "Invalid token.", details: ["Invalid token."] } };
const REQUIRED = {
  error: { code: 499, messageCode: "GWM_0003", message: "Token Required", details: ["Token Required"] },
};
const APP = "https://app.example.com";

function admin(...args: string[]): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, MAPGATE_ADMIN_PASSWORD: "other-admin-pass" },
  });
}

function generate(fields: Record<string, string>, headers: Record<string, string> = {}, base = rest()) {
  return call(`${base}/generateToken`, { ca: engine.ca, body: form({ f: "json", ...fields }), headers });
}

async function tokenFor(fields: Record<string, string>): Promise<{ token: string; expires: number; ssl: boolean }> {
  const res = await generate(fields);
  const body = res.json<{ token: string; expires: number; ssl: boolean }>();
  if (!body.token) throw new Error(res.text);
  return body;
}

const self = (headers: Record<string, string>, query = "") =>
  call(`${rest()}/community/self?f=json${query}`, { ca: engine.ca, headers });

beforeAll(async () => {
  // A lockout short enough to wait out, long enough that 20 concurrent sign-ins on a busy machine end within it.
  engine = await startEngine({
    env: { SIGNIN_LOCKOUT_SECONDS: String(LOCKOUT_SECONDS), SIGNIN_FAILURE_WINDOW_SECONDS: "60" },
  });
  portalId = (await call(`${rest()}/portals/self?f=json`, { ca: engine.ca })).json<{ id: string }>().id;
});
afterAll(async () => {
  await engine?.stop();
});

describe("generateToken", () => {
  it("issues a referer-bound token honoured only with a matching Referer", async () => {
    const before = Date.now();
    const t = await tokenFor({ username: "publisher", password: PASSWORDS.publisher, client: "referer", referer: APP });
    expect(typeof t.expires).toBe("number");
    expect(t.expires).toBeGreaterThanOrEqual(before + 60 * 60_000);
    expect(t.expires).toBeLessThanOrEqual(Date.now() + 60 * 60_000 + 1000);
    expect(t.ssl).toBe(false);
    expect((await self({ referer: `${APP}/map/index.html` }, `&token=${t.token}`)).json()).toMatchObject({
      username: "publisher",
      role: "org_publisher",
      orgId: portalId,
    });
    expect((await self({ referer: APP }, `&token=${t.token}`)).json()).toMatchObject({ username: "publisher" });
    expect((await self({}, `&token=${t.token}`)).json()).toEqual(INVALID);
    expect((await self({ referer: "https://app.example.com.evil.test/" }, `&token=${t.token}`)).json()).toEqual(
      INVALID,
    );
    expect((await self({ referer: "https://evil.test/?https://app.example.com" }, `&token=${t.token}`)).json()).toEqual(
      INVALID,
    );
  });

  it("issues ip- and requestip-bound tokens honoured only from that address", async () => {
    const ip = await tokenFor({ username: "user", password: PASSWORDS.user, client: "ip", ip: "127.0.0.1" });
    expect((await self({}, `&token=${ip.token}`)).json()).toMatchObject({ username: "user" });
    const elsewhere = await tokenFor({ username: "user", password: PASSWORDS.user, client: "ip", ip: "192.0.2.7" });
    expect((await self({}, `&token=${elsewhere.token}`)).json()).toEqual(INVALID);
    // requestip (also the default) binds to the caller of generateToken: 127.0.0.1 here.
    const req = await tokenFor({ username: "user", password: PASSWORDS.user });
    expect((await self({}, `&token=${req.token}`)).json()).toMatchObject({ username: "user" });
    // An address written another way is the same address.
    const long = await tokenFor({ username: "user", password: PASSWORDS.user, client: "ip", ip: "0:0:0:0:0:0:0:1" });
    const v6Long = `https://[::1]:${new URL(engine.ready.https).port}/portal/sharing/rest/community/self?f=json&token=${long.token}`;
    const fromV6Long = await call(v6Long, { ca: engine.ca }).catch(() => undefined);
    if (fromV6Long) expect(fromV6Long.json()).toMatchObject({ username: "user" });
    const v6 = `https://[::1]:${new URL(engine.ready.https).port}/portal/sharing/rest/community/self?f=json&token=${req.token}`;
    const fromV6 = await call(v6, { ca: engine.ca }).catch(() => undefined);
    // Only where this machine has IPv6 loopback: the same token from ::1 is another address.
    if (fromV6) expect(fromV6.json()).toEqual(INVALID);
  });

  it("defaults to 60 minutes, accepts up to the organization's limit, and rejects more", async () => {
    const long = await tokenFor({ username: "user", password: PASSWORDS.user, expiration: "20160" });
    expect(long.expires).toBeGreaterThan(Date.now() + 20159 * 60_000);
    const max = await tokenFor({ username: "user", password: PASSWORDS.user, expiration: "21600" });
    expect(max.expires).toBeGreaterThan(Date.now() + 21599 * 60_000);
    expect((await generate({ username: "user", password: PASSWORDS.user, expiration: "21601" })).json()).toEqual({
      error: {
        code: 400,
        message: "Unable to generate token.",
        details: ["'expiration' may be at most 21600 minutes in this organization."],
      },
    });
    admin("update-portal", "--portal", portalId, "--max-token-minutes", "120");
    try {
      expect((await generate({ username: "user", password: PASSWORDS.user, expiration: "121" })).json()).toMatchObject({
        error: { code: 400, details: ["'expiration' may be at most 120 minutes in this organization."] },
      });
      expect((await tokenFor({ username: "user", password: PASSWORDS.user, expiration: "120" })).token).toBeTruthy();
    } finally {
      admin("update-portal", "--portal", portalId, "--max-token-minutes", "21600");
    }
  });

  it("answers every bad or missing parameter at once as a 400 with details", async () => {
    const cases: [Record<string, string>, string[]][] = [
      [{}, ["'username' must be specified.", "'password' must be specified."]],
      [{ username: "user" }, ["'password' must be specified."]],
      [{ username: "user", password: "x", client: "cookie" }, ["'client' must be one of referer, ip, requestip."]],
      [{ username: "user", password: "x", client: "referer" }, ["'referer' must be specified when client is referer."]],
      [{ username: "user", password: "x", client: "ip" }, ["'ip' must be specified when client is ip."]],
      [{ username: "user", password: "x", client: "ip", ip: "x;y" }, ["'ip' must be an IP address."]],
      [
        { username: "user", password: "x", expiration: "soon" },
        ["'expiration' must be a whole number of minutes, at least 1."],
      ],
      [
        { username: "user", password: "x", expiration: "0" },
        ["'expiration' must be a whole number of minutes, at least 1."],
      ],
    ];
    for (const [fields, details] of cases) {
      expect((await generate(fields)).json(), JSON.stringify(fields)).toEqual({
        error: { code: 400, message: "Unable to generate token.", details },
      });
    }
  });

  it("refuses plain HTTP, GET for JSON, and offers a form to a browser", async () => {
    const http = await generate(
      { username: "user", password: PASSWORDS.user },
      {},
      `${engine.ready.http}/portal/sharing/rest`,
    );
    expect(http.json()).toEqual({
      error: {
        code: 403,
        message: "SSL Required",
        details: [
          "Generate Token answers over HTTPS only, so that passwords and tokens never travel in clear. The same address over HTTPS:",
          `${engine.ready.https}/portal/sharing/rest/generateToken`,
        ],
      },
    });
    const get = await call(`${rest()}/generateToken?f=json&username=user&password=${PASSWORDS.user}`, {
      ca: engine.ca,
    });
    expect(get.json()).toMatchObject({ error: { code: 405 } });
    const page = await call(`${rest()}/generateToken`, { ca: engine.ca });
    expect(page.text).toContain('<input id="field-password" type="password" name="password" value="">');
  });

  it("says ssl:true when the organization requires HTTPS", async () => {
    admin("update-portal", "--portal", portalId, "--all-ssl", "true");
    try {
      expect((await tokenFor({ username: "user", password: PASSWORDS.user })).ssl).toBe(true);
    } finally {
      admin("update-portal", "--portal", portalId, "--all-ssl", "false");
    }
  });

  it("rejects a wrong password and an unknown user with the same answer", async () => {
    const wrong = await generate({ username: "admin", password: "not-the-password" });
    const unknown = await generate({ username: "nobody-here", password: "not-the-password" });
    const expected = {
      error: { code: 400, message: "Unable to generate token.", details: ["Invalid username or password."] },
    };
    expect(wrong.json()).toEqual(expected);
    expect(unknown.json()).toEqual(expected);
  });

  it("locks an account after 5 failures in the window, says so the same for unknown users, and unlocks", async () => {
    const locked = {
      error: {
        code: 400,
        message: "Unable to generate token.",
        details: ["Too many invalid sign-in attempts. Try again later."],
      },
    };
    for (const username of ["publisher", "ghost-user"]) {
      const answers: Answer[] = [];
      for (let i = 0; i < 5; i++) answers.push(await generate({ username, password: `wrong-${i}` }));
      for (const a of answers)
        expect(a.json()).toMatchObject({ error: { details: ["Invalid username or password."] } });
      // Even the right password is refused while locked.
      const password = username === "publisher" ? PASSWORDS.publisher : "anything";
      expect((await generate({ username, password })).json()).toEqual(locked);
    }
    await new Promise((r) => setTimeout(r, LOCKOUT_SECONDS * 1000 + 200));
    expect((await tokenFor({ username: "publisher", password: PASSWORDS.publisher })).token).toBeTruthy();
  });

  it("checks at most 5 passwords however many guesses arrive at once", async () => {
    const username = "admin";
    const guesses = Array.from({ length: 19 }, (_, i) => `guess-${i}`);
    guesses.push(PASSWORDS.admin);
    const answers = await Promise.all(
      guesses.map((password) => generate({ username, password }).then((r) => r.json())),
    );
    const wrong = answers.filter((a) => JSON.stringify(a).includes("Invalid username or password."));
    const locked = answers.filter((a) => JSON.stringify(a).includes("Too many invalid sign-in attempts."));
    const issued = answers.filter((a) => typeof a.token === "string");
    expect(wrong.length + issued.length).toBeLessThanOrEqual(5);
    expect(wrong.length + locked.length + issued.length).toBe(20);
    if (issued.length === 0) {
      // The right password was not among the ones checked: the account is locked now.
      expect((await generate({ username, password: PASSWORDS.admin })).json()).toMatchObject({
        error: { details: ["Too many invalid sign-in attempts. Try again later."] },
      });
    }
    await new Promise((r) => setTimeout(r, LOCKOUT_SECONDS * 1000 + 200));
  });

  it("counts concurrent failures without losing any", async () => {
    const username = "user";
    await Promise.all(Array.from({ length: 5 }, (_, i) => generate({ username, password: `bad-${i}` })));
    expect((await generate({ username, password: PASSWORDS.user })).json()).toMatchObject({
      error: { details: ["Too many invalid sign-in attempts. Try again later."] },
    });
    await new Promise((r) => setTimeout(r, LOCKOUT_SECONDS * 1000 + 200));
  });
});

describe("server-tokens", () => {
  it("exchanges a portal token for a server-token that inherits the referer and the expiry", async () => {
    const portal = await tokenFor({
      username: "admin",
      password: PASSWORDS.admin,
      client: "referer",
      referer: APP,
      expiration: "30",
    });
    const res = await generate(
      { token: portal.token, serverURL: `${engine.ready.https}/arcgis/rest/services` },
      { referer: APP },
    );
    const server = res.json<{ token: string; expires: number; ssl: boolean }>();
    expect(server.token).toBeTruthy();
    expect(server.expires).toBeLessThanOrEqual(portal.expires);
    expect(server.expires).toBeGreaterThan(portal.expires - 2000);
    const info = (headers: Record<string, string>, name = "arcgis") =>
      call(`${engine.ready.https}/${name}/rest/info?f=json&token=${server.token}`, { ca: engine.ca, headers });
    expect((await info({ referer: APP })).json()).toHaveProperty("authInfo");
    expect((await info({})).json()).toEqual(INVALID);
    // A server-token is not a portal token.
    expect((await self({ referer: APP }, `&token=${server.token}`)).json()).toEqual(INVALID);
  });

  it("issues a server-token from credentials, and refuses a server the portal has not registered", async () => {
    const direct = await tokenFor({
      username: "admin",
      password: PASSWORDS.admin,
      serverURL: `${engine.ready.https}/arcgis`,
    });
    const info = await call(`${engine.ready.https}/arcgis/rest/info?f=json&token=${direct.token}`, { ca: engine.ca });
    expect(info.json()).toHaveProperty("authInfo");
    const refused = await generate({
      username: "admin",
      password: PASSWORDS.admin,
      serverURL: "https://gis.elsewhere.test/server",
    });
    expect(refused.json()).toEqual({
      error: {
        code: 400,
        message: "Unable to generate token.",
        details: ["'serverURL' is not a server registered with this organization."],
      },
    });
  });

  it("limits each token to its audience: other servers and other organizations refuse it", async () => {
    const created = JSON.parse(admin("register-server", "--portal", portalId, "--name", "tiles")) as {
      serverId: string;
    };
    expect(created.serverId).toBeTruthy();
    const other = JSON.parse(admin("bootstrap", "--name", "Other Org", "--admin", "other-admin")) as {
      portal: { portalId: string };
    };
    admin("register-server", "--portal", other.portal.portalId, "--name", "elsewhere");

    const serverToken = await tokenFor({
      username: "admin",
      password: PASSWORDS.admin,
      serverURL: `${engine.ready.https}/arcgis`,
    });
    const portalToken = await tokenFor({ username: "admin", password: PASSWORDS.admin });
    const at = (name: string, token: string) =>
      call(`${engine.ready.https}/${name}/rest/info?f=json&token=${token}`, { ca: engine.ca }).then((r) => r.json());
    expect(await at("tiles", serverToken.token)).toEqual(INVALID);
    // A portal token is good at its own organization's federated servers (as on the original)...
    expect(await at("tiles", portalToken.token)).toHaveProperty("authInfo");
    // ...and never at another organization's.
    expect(await at("elsewhere", portalToken.token)).toEqual(INVALID);
    const otherToken = await tokenFor({ username: "other-admin", password: "other-admin-pass" });
    expect(await at("arcgis", otherToken.token)).toEqual(INVALID);
    expect(await at("elsewhere", otherToken.token)).toHaveProperty("authInfo");
  });
});

describe("token verification", () => {
  it("refuses an expired token (checked on read)", async () => {
    const expired = await forge(engine.dataDir, {
      username: "admin",
      portalId,
      exp: Math.floor(Date.now() / 1000) - 5,
    });
    expect((await self({}, `&token=${expired}`)).json()).toEqual(INVALID);
    const fresh = await forge(engine.dataDir, { username: "admin", portalId, exp: Math.floor(Date.now() / 1000) + 60 });
    expect((await self({}, `&token=${fresh}`)).json()).toMatchObject({ username: "admin" });
  });

  it("refuses tampered tokens and other algorithms", async () => {
    const { token } = await tokenFor({ username: "admin", password: PASSWORDS.admin });
    const parts = token.split(".");
    const flip = (s: string) => (s[5] === "A" ? `${s.slice(0, 5)}B${s.slice(6)}` : `${s.slice(0, 5)}A${s.slice(6)}`);
    const tampered = [
      [parts[0], parts[1], parts[2], flip(parts[3] ?? ""), parts[4]].join("."),
      [parts[0], parts[1], parts[2], parts[3], flip(parts[4] ?? "")].join("."),
      [parts[0], parts[1], flip(parts[2] ?? ""), parts[3], parts[4]].join("."),
      `${token}x`,
      token.slice(0, -2),
    ];
    for (const t of tampered) expect((await self({}, `&token=${t}`)).json()).toEqual(INVALID);

    const { kid, key } = engineKey(engine.dataDir);
    const exp = Math.floor(Date.now() / 1000) + 600;
    const claims = { org: portalId, cli: "requestip", bnd: "127.0.0.1" };
    // The claims of a token of the admin, on whatever kind of JWT carries them.
    const ofAdmin = <T extends Claimed<T>>(jwt: T): T =>
      jwt
        .setIssuer("mapgate")
        .setSubject("admin")
        .setAudience("portal")
        .setJti("x")
        .setIssuedAt()
        .setExpirationTime(exp);
    const confused = [
      // The same key bytes used as an HMAC key: a signed token is not an encrypted one.
      await ofAdmin(new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid })).sign(key),
      new UnsecuredJWT(claims)
        .setIssuer("mapgate")
        .setSubject("admin")
        .setAudience("portal")
        .setExpirationTime(exp)
        .encode(),
      await ofAdmin(new EncryptJWT(claims).setProtectedHeader({ alg: "dir", enc: "A128GCM", kid })).encrypt(
        key.slice(0, 16),
      ),
      // Another deployment's key (another portal's token service).
      await forge(engine.dataDir, { username: "admin", portalId, exp, key: new Uint8Array(randomBytes(32)) }),
      await forge(engine.dataDir, { username: "admin", portalId, exp, kid: "unknown-kid" }),
      // Right key, but claims naming a user of another organization.
      await forge(engine.dataDir, { username: "admin", portalId: "SomeOtherPortal1", exp }),
    ];
    for (const t of confused) expect((await self({}, `&token=${t}`)).json()).toEqual(INVALID);
    // A bare HMAC of the payload is not a token either.
    const mac = createHmac("sha256", key).update("admin").digest("base64url");
    expect((await self({}, `&token=${mac}`)).json()).toEqual(INVALID);
  });

  it("accepts the token from the parameter, both headers and the cookie; a tampered cookie signs nobody in", async () => {
    const { token } = await tokenFor({ username: "admin", password: PASSWORDS.admin });
    const me = { username: "admin", role: "org_admin" };
    expect((await self({}, `&token=${token}`)).json()).toMatchObject(me);
    expect((await self({ "x-esri-authorization": `Bearer ${token}` })).json()).toMatchObject(me);
    expect((await self({ authorization: `Bearer ${token}` })).json()).toMatchObject(me);
    const cookie = (t: string) =>
      `vendor_authcookie=${encodeURIComponent(JSON.stringify({ token: t, expires: 0, allSSL: false, persistent: false, email: "admin", role: "org_admin" }))}`;
    expect((await self({ cookie: cookie(token) })).json()).toMatchObject(me);
    // A tampered cookie is no sign-in at all (the browser sent it unasked): anonymous, so 499 here.
    expect((await self({ cookie: cookie(`${token.slice(0, -3)}AAA`) })).json()).toMatchObject({ error: { code: 499 } });
    // A POST body token works as well (the ArcGIS client sends it last in the form).
    const post = await call(`${rest()}/community/self`, { ca: engine.ca, body: form({ f: "json", token }) });
    expect(post.json()).toMatchObject(me);
  });

  it("answers anonymous callers of community/self and portals/self/servers with 499", async () => {
    expect((await self({})).json()).toEqual(REQUIRED);
    const servers = await call(`${rest()}/portals/self/servers?f=json`, { ca: engine.ca });
    expect(servers.json()).toEqual(REQUIRED);
  });

  it("lists the organization's federated servers to its members", async () => {
    const { token } = await tokenFor({ username: "user", password: PASSWORDS.user });
    const res = await call(`${rest()}/portals/self/servers?f=json&token=${token}`, { ca: engine.ca });
    const { servers } = res.json<{ servers: { url: string; isHosted: boolean; serverType: string }[] }>();
    expect(servers).toContainEqual(
      expect.objectContaining({ url: `${engine.ready.https}/arcgis`, isHosted: true, serverType: "ArcGIS" }),
    );
    const other = await call(`${rest()}/portals/NotMyPortal12345/servers?f=json&token=${token}`, { ca: engine.ca });
    expect(other.json()).toMatchObject({ error: { code: 403, messageCode: "GWM_0003" } });
  });

  it("links from the Servers page only to what answers", async () => {
    const { token } = await tokenFor({ username: "user", password: PASSWORDS.user });
    const page = await call(`${rest()}/portals/self/servers?f=html&token=${token}`, { ca: engine.ca });
    // Every hosted server (other tests of this file register more than the demo's), each with the same three.
    const { servers } = (await call(`${rest()}/portals/self/servers?f=json&token=${token}`, { ca: engine.ca })).json<{
      servers: { url: string }[];
    }>();
    expect(servers.map((s) => s.url)).toContain(`${engine.ready.https}/arcgis`);
    const hrefs = [...page.text.matchAll(/href="([^"]+)"/g)].map((m) => (m[1] as string).replace(/&#38;/g, "&"));
    expect(hrefs).toEqual([
      ...servers.flatMap(({ url }) => [
        `${url}/rest/services?f=html`,
        `${url}/rest/info?f=html`,
        `${url}/services?wsdl`,
      ]),
      "?f=pjson",
      "/portal/sharing/rest?f=html",
    ]);
    expect(page.text).toContain("No administrator API is served here");
    for (const href of hrefs) {
      const url = new URL(href, `${rest()}/portals/self/servers?token=${token}`);
      if (href === "?f=pjson") url.searchParams.set("token", token);
      const res = await call(url.toString(), { ca: engine.ca });
      expect(res.status, href).toBe(200);
      expect(res.text, href).not.toMatch(/"error"|class="error"|<soap:Fault>/);
    }
  });

  it("never writes passwords or tokens to the logs", async () => {
    const { token } = await tokenFor({ username: "admin", password: PASSWORDS.admin });
    await self({}, `&token=${token}`);
    await new Promise((r) => setTimeout(r, 100));
    const all = engine.lines.join("\n");
    for (const secret of [PASSWORDS.admin, PASSWORDS.publisher, PASSWORDS.user, token])
      expect(all).not.toContain(secret);
  });
});
