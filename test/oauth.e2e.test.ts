// OAuth 2.0, the sign-in page and its cookie, through the local engine over HTTPS: the protocol as RFC 6749,
// RFC 7636 and RFC 7009 describe it, and the attacks it must refuse. (The real ArcGIS client's OAuth flows are
// in oauth-client.e2e.test.ts; the real browser is in browser.e2e.test.ts.)
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { type Answer, call, form, formOf, setCookies } from "./helpers/http.ts";

let engine: RunningEngine;
let portalId: string;
let adminToken: string;
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const SERVER_REDIRECT = "https://app.example.test/callback";
const NATIVE_REDIRECT = "http://127.0.0.1:7777/cb";

interface Registered {
  client_id: string;
  client_secret?: string;
}
let serverApp: Registered;
let browserApp: Registered;

function admin(...args: string[]): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
    cwd: ROOT,
    encoding: "utf8",
  });
}

/** A server app registered with the operator command, owned by admin. */
function registerServerAppByCommand(name: string, redirectUri: string): Registered & { redirect_uris: string[] } {
  const args = ["--portal", portalId, "--name", name, "--type", "server", "--owner", "admin"];
  return JSON.parse(admin("register-app", ...args, "--redirect-uri", redirectUri)) as Registered & {
    redirect_uris: string[];
  };
}

async function generateToken(username: string, password: string): Promise<string> {
  const res = await call(`${rest()}/generateToken`, { ca: engine.ca, body: form({ f: "json", username, password }) });
  const token = res.json<{ token?: string }>().token;
  if (!token) throw new Error(res.text);
  return token;
}

const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  call(`${rest()}/${path}`, { ca: engine.ca, body: form(fields), headers });

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

/** Signs in on the authorization page and answers where the browser is sent (the redirect with the code). */
async function authorize(params: Record<string, string>, who = { username: "admin", password: PASSWORDS.admin }) {
  const query = new URLSearchParams({ response_type: "code", ...params }).toString();
  const url = `${rest()}/oauth2/authorize?${query}`;
  const { cookie, csrf } = await formOf(url, engine.ca);
  const res = await call(url, {
    ca: engine.ca,
    body: form({ ...params, response_type: "code", csrf, ...who }),
    headers: { cookie },
  });
  return res;
}

async function codeFor(app: Registered, redirectUri: string, challenge?: string): Promise<string> {
  const res = await authorize({
    client_id: app.client_id,
    redirect_uri: redirectUri,
    state: "xyz",
    ...(challenge ? { code_challenge: challenge, code_challenge_method: "S256" } : {}),
  });
  expect(res.status).toBe(303);
  const location = new URL(String(res.headers.location));
  expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
  expect(location.searchParams.get("state")).toBe("xyz");
  const code = location.searchParams.get("code");
  if (!code) throw new Error(`no code: ${location}`);
  return code;
}

/**
 * What a browser sends from the page's form whose button reads `button`: every named input exactly as the page
 * renders it (a checkbox only when checked), with what the user types in place of the typed fields' values.
 * The authorization page's forms have inputs only. Sent to the form's action, without the page's query string.
 */
function submission(pageUrl: string, html: string, button: string, typed: Record<string, string> = {}) {
  const chosen = (html.match(/<form\b[^>]*>[\s\S]*?<\/form>/g) ?? []).find((f) => f.includes(`>${button}</button>`));
  if (!chosen) throw new Error(`no form with the button "${button}" in ${html.slice(0, 400)}`);
  const unescape = (v: string) => v.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
  const attr = (tag: string, name: string) => {
    const raw = new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1];
    return raw === undefined ? undefined : unescape(raw);
  };
  const fields: [string, string][] = [];
  for (const input of chosen.match(/<input\b[^>]*>/g) ?? []) {
    const name = attr(input, "name");
    if (name === undefined) continue;
    if (attr(input, "type") === "checkbox" && !/\schecked\b/.test(input)) continue;
    fields.push([name, attr(input, "value") ?? ""]);
  }
  for (const [name, value] of Object.entries(typed)) {
    const field = fields.find(([n]) => n === name);
    if (!field) throw new Error(`the form has no field "${name}"`);
    field[1] = value;
  }
  const action = new URL(attr(/<form\b[^>]*>/.exec(chosen)?.[0] ?? "", "action") ?? "", pageUrl).toString();
  return { action, names: fields.map(([n]) => n), body: new URLSearchParams(fields).toString() };
}

interface Tokens {
  access_token: string;
  token_type: string;
  expires_in: number;
  username: string;
  ssl: boolean;
  refresh_token: string;
  refresh_token_expires_in: number;
}

const serverClient = () => ({ client_id: serverApp.client_id, client_secret: serverApp.client_secret as string });

const tokenRequest = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  post("oauth2/token", fields, headers);

async function whoAmI(token: string): Promise<Record<string, unknown>> {
  return (await call(`${rest()}/community/self?f=json&token=${token}`, { ca: engine.ca })).json();
}

beforeAll(async () => {
  engine = await startEngine();
  adminToken = await generateToken("admin", PASSWORDS.admin);
  const self = await call(`${rest()}/portals/self?f=json&token=${adminToken}`, { ca: engine.ca });
  portalId = self.json<{ id: string }>().id;
  const register = async (name: string, appType: string, uris: string[]) =>
    (
      await post("portals/self/apps/register", {
        f: "json",
        token: adminToken,
        name,
        appType,
        redirect_uris: JSON.stringify(uris),
      })
    ).json<Registered>();
  serverApp = await register("Server App", "server", [SERVER_REDIRECT]);
  browserApp = await register("Native App", "native", [NATIVE_REDIRECT, "com.example.mapgate:/cb"]);
}, 60_000);

afterAll(async () => {
  await engine?.stop();
});

describe("applications", () => {
  it("registers apps for administrators only, with the secret shown once and validated redirect URIs", async () => {
    expect(serverApp.client_id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(serverApp.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(browserApp.client_secret).toBeUndefined();
    // Said truthfully: the OAuth 2.0 endpoints answer.
    const self = await call(`${rest()}/portals/self?f=json`, { ca: engine.ca });
    expect(self.json()).toMatchObject({ supportsOAuth: true });
    const listed = await call(`${rest()}/portals/self/apps?f=json&token=${adminToken}`, { ca: engine.ca });
    const apps = listed.json<{ apps: Record<string, unknown>[] }>().apps;
    expect(apps.map((a) => a.client_id)).toEqual(expect.arrayContaining([serverApp.client_id, browserApp.client_id]));
    expect(listed.text).not.toContain(serverApp.client_secret);

    const userToken = await generateToken("user", PASSWORDS.user);
    const refused = await post("portals/self/apps/register", {
      f: "json",
      token: userToken,
      name: "Mine",
      appType: "browser",
      redirect_uris: '["https://x.example/cb"]',
    });
    expect(refused.json()).toMatchObject({ error: { code: 403 } });

    const bad = await post("portals/self/apps/register", {
      f: "json",
      token: adminToken,
      name: "",
      appType: "desktop",
      redirect_uris: JSON.stringify(["http://evil.example/cb", "https://ok.example/cb#frag", "javascript:alert(1)"]),
    });
    expect(bad.json()).toEqual({
      error: {
        code: 400,
        message: "Unable to register the application.",
        details: [
          "'name' must be specified.",
          "'appType' must be one of browser, native, server.",
          "'redirect_uris': plain-HTTP redirect URIs must point at the loopback address.",
          "'redirect_uris': a redirect URI may not have a fragment.",
          "'redirect_uris': the scheme javascript: is not allowed (HTTPS; loopback HTTP; reverse-DNS schemes for native apps).",
        ],
      },
    });
  });

  it("registers an app from the operator command too", () => {
    const out = registerServerAppByCommand("CLI App", "https://cli.example/cb");
    expect(out.client_id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(out.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(out.redirect_uris).toEqual(["https://cli.example/cb"]);
    const listed = JSON.parse(admin("list-apps", "--portal", portalId)) as Registered[];
    expect(listed.find((a) => a.client_id === out.client_id)).toMatchObject({ name: "CLI App" });
    expect(JSON.stringify(listed)).not.toContain(out.client_secret);
  });
});

describe("authorization code with PKCE", () => {
  it("issues two-week bearer tokens and a refresh token for a code, once", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(browserApp, NATIVE_REDIRECT, challenge);
    const exchange = {
      grant_type: "authorization_code",
      client_id: browserApp.client_id,
      code,
      redirect_uri: NATIVE_REDIRECT,
      code_verifier: verifier,
    };
    const res = await tokenRequest(exchange);
    expect(res.status).toBe(200);
    expect(res.headers["cache-control"]).toBe("no-store");
    const tokens = res.json<Tokens>();
    expect(tokens).toMatchObject({ token_type: "Bearer", username: "admin", ssl: false });
    expect(tokens.expires_in).toBeGreaterThan(14 * 24 * 3600 - 30);
    expect(tokens.expires_in).toBeLessThanOrEqual(14 * 24 * 3600);
    expect(tokens.refresh_token_expires_in).toBeGreaterThan(14 * 24 * 3600 - 30);
    expect(await whoAmI(tokens.access_token)).toMatchObject({ username: "admin" });

    // Code reuse: refused, and what the first use produced is revoked (RFC 6749 §4.1.2).
    const again = await tokenRequest(exchange);
    expect(again.status).toBe(400);
    expect(again.json()).toEqual({
      error: "invalid_grant",
      error_description: "The authorization code is invalid, expired or already used.",
    });
    expect(await whoAmI(tokens.access_token)).toMatchObject({ error: { code: 498 } });
    const refreshed = await tokenRequest({
      grant_type: "refresh_token",
      client_id: browserApp.client_id,
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("refuses a PKCE mismatch, a missing verifier and a different redirect URI (and burns the code)", async () => {
    const { challenge } = pkce();
    for (const [extra, description] of [
      [{ code_verifier: pkce().verifier }, "The code_verifier does not match the code_challenge."],
      [{}, "The code_verifier does not match the code_challenge."],
      [{ redirect_uri: "com.example.mapgate:/cb" }, "redirect_uri differs from the authorization request's."],
    ] as const) {
      const code = await codeFor(browserApp, NATIVE_REDIRECT, challenge);
      const res = await tokenRequest({
        grant_type: "authorization_code",
        client_id: browserApp.client_id,
        code,
        redirect_uri: NATIVE_REDIRECT,
        ...extra,
      });
      expect(res.status).toBe(400);
      expect(res.json()).toEqual({ error: "invalid_grant", error_description: description });
    }
  });

  it("refuses a code issued to another client", async () => {
    const code = await codeFor(serverApp, SERVER_REDIRECT);
    const res = await tokenRequest({
      grant_type: "authorization_code",
      client_id: browserApp.client_id,
      code,
      redirect_uri: SERVER_REDIRECT,
    });
    expect(res.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("never sends an error to an unregistered redirect URI, and sends protocol errors to a registered one", async () => {
    const unknownClient = await call(`${rest()}/oauth2/authorize?client_id=nope&response_type=code`, { ca: engine.ca });
    expect(unknownClient.status).toBe(200);
    expect(unknownClient.headers.location).toBeUndefined();
    expect(unknownClient.text).toContain("Invalid client_id.");
    for (const uri of ["https://evil.example/cb", `${NATIVE_REDIRECT}/more`, "http://127.0.0.1:7777/cb?x=1"]) {
      const q = new URLSearchParams({ client_id: browserApp.client_id, response_type: "code", redirect_uri: uri });
      const res = await call(`${rest()}/oauth2/authorize?${q}`, { ca: engine.ca });
      expect(res.status).toBe(200);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain("Invalid redirect_uri");
    }
    const redirected = async (params: Record<string, string>) => {
      const q = new URLSearchParams({
        client_id: browserApp.client_id,
        redirect_uri: NATIVE_REDIRECT,
        state: "s",
        ...params,
      });
      const res = await call(`${rest()}/oauth2/authorize?${q}`, { ca: engine.ca });
      expect(res.status).toBe(303);
      return Object.fromEntries(new URL(String(res.headers.location)).searchParams);
    };
    expect(await redirected({ response_type: "token" })).toMatchObject({
      error: "unsupported_response_type",
      state: "s",
    });
    expect(await redirected({ response_type: "code" })).toEqual({
      error: "invalid_request",
      error_description: "PKCE (code_challenge with S256) is required for browser and native apps.",
      state: "s",
    });
    expect(
      await redirected({ response_type: "code", code_challenge: pkce().challenge, code_challenge_method: "plain" }),
    ).toMatchObject({ error: "invalid_request", error_description: "code_challenge_method must be S256." });
  });

  it("refuses the authorization form without its CSRF field", async () => {
    const params = { client_id: serverApp.client_id, redirect_uri: SERVER_REDIRECT, response_type: "code" };
    const url = `${rest()}/oauth2/authorize?${new URLSearchParams(params)}`;
    const { cookie } = await formOf(url, engine.ca);
    const forged = await call(url, {
      ca: engine.ca,
      body: form({ ...params, username: "admin", password: PASSWORDS.admin }),
      headers: { cookie },
    });
    expect(forged.status).toBe(200);
    expect(forged.headers.location).toBeUndefined();
    expect(forged.text).toContain("CSRF check failed");
  });
});

describe("the authorization page's own forms, as a browser submits them", () => {
  /** The page for these authorization parameters, its form filled in and sent; answers where it sends the browser. */
  async function throughForm(
    params: Record<string, string>,
    button: string,
    typed: Record<string, string>,
    signedIn?: string,
  ) {
    const url = `${rest()}/oauth2/authorize?${new URLSearchParams({ response_type: "code", ...params })}`;
    const { page, cookie } = await formOf(url, engine.ca, signedIn);
    const sent = submission(url, page.text, button, typed);
    const res = await call(sent.action, {
      ca: engine.ca,
      body: sent.body,
      headers: { cookie: signedIn ? `${signedIn}; ${cookie}` : cookie },
    });
    return {
      names: sent.names,
      res,
      location: res.headers.location ? new URL(String(res.headers.location)) : undefined,
    };
  }

  const redeem = async (code: string, client: Record<string, string>) => {
    const res = await tokenRequest({
      grant_type: "authorization_code",
      code,
      redirect_uri: SERVER_REDIRECT,
      ...client,
    });
    expect(res.status).toBe(200);
    const tokens = res.json<Tokens>();
    expect(await whoAmI(tokens.access_token)).toMatchObject({ username: "admin" });
  };

  it("signs in and allows a server app without PKCE, which redeems the code with its secret", async () => {
    const who = { username: "admin", password: PASSWORDS.admin };
    const plain = await throughForm(
      { client_id: serverApp.client_id, redirect_uri: SERVER_REDIRECT, state: "xyz" },
      "Sign in and allow",
      who,
    );
    expect(plain.res.status, plain.res.text.slice(0, 600)).toBe(303);
    expect(`${plain.location?.origin}${plain.location?.pathname}`).toBe(SERVER_REDIRECT);
    expect(Object.fromEntries(plain.location?.searchParams ?? [])).toEqual({ code: expect.any(String), state: "xyz" });
    await redeem(plain.location?.searchParams.get("code") as string, serverClient());
    // Absent parameters stay absent: an empty code_challenge_method would read as a wrong one.
    expect(plain.names).not.toContain("code_challenge");
    expect(plain.names).not.toContain("code_challenge_method");

    // Neither state nor redirect_uri (the app's only registered URI is meant): the form sends neither.
    const bare = await throughForm({ client_id: serverApp.client_id }, "Sign in and allow", who);
    expect(bare.res.status, bare.res.text.slice(0, 600)).toBe(303);
    expect(Object.fromEntries(bare.location?.searchParams ?? [])).toEqual({ code: expect.any(String) });
    await redeem(bare.location?.searchParams.get("code") as string, serverClient());
    expect(bare.names).not.toContain("redirect_uri");
    expect(bare.names).not.toContain("state");

    // A page rendered before absent fields were left out sends them empty: empty is absent (RFC 6749 §3.1).
    const stale = await authorize({
      client_id: serverApp.client_id,
      redirect_uri: SERVER_REDIRECT,
      code_challenge: "",
      code_challenge_method: "",
    });
    expect(Object.fromEntries(new URL(String(stale.headers.location)).searchParams)).toEqual({
      code: expect.any(String),
    });

    // With PKCE, the form carries the challenge on unchanged.
    const { verifier, challenge } = pkce();
    const withPkce = await throughForm(
      {
        client_id: browserApp.client_id,
        redirect_uri: NATIVE_REDIRECT,
        code_challenge: challenge,
        code_challenge_method: "S256",
      },
      "Sign in and allow",
      who,
    );
    expect(withPkce.res.status).toBe(303);
    const tokens = await tokenRequest({
      grant_type: "authorization_code",
      client_id: browserApp.client_id,
      code: withPkce.location?.searchParams.get("code") as string,
      redirect_uri: NATIVE_REDIRECT,
      code_verifier: verifier,
    });
    expect(tokens.json()).toHaveProperty("access_token");
  });

  it("asks a signed-in user to allow a server app without PKCE, or to deny it", async () => {
    const signInUrl = `${rest()}/oauth2/signin`;
    const { cookie, csrf } = await formOf(signInUrl, engine.ca);
    const signedIn = await call(signInUrl, {
      ca: engine.ca,
      body: form({ username: "admin", password: PASSWORDS.admin, csrf }),
      headers: { cookie },
    });
    const auth = (setCookies(signedIn).find((c) => c.startsWith("vendor_authcookie=")) ?? "").split(";")[0] as string;
    const params = { client_id: serverApp.client_id, redirect_uri: SERVER_REDIRECT, state: "abc" };
    const allowed = await throughForm(params, "Allow as admin", {}, auth);
    expect(allowed.res.status, allowed.res.text.slice(0, 600)).toBe(303);
    expect(Object.fromEntries(allowed.location?.searchParams ?? [])).toEqual({
      code: expect.any(String),
      state: "abc",
    });
    expect(allowed.names).not.toContain("code_challenge");
    expect(allowed.names).not.toContain("code_challenge_method");
    const basic = Buffer.from(`${serverApp.client_id}:${serverApp.client_secret as string}`).toString("base64");
    const res = await tokenRequest(
      {
        grant_type: "authorization_code",
        code: allowed.location?.searchParams.get("code") as string,
        redirect_uri: SERVER_REDIRECT,
      },
      { authorization: `Basic ${basic}` },
    );
    expect(await whoAmI(res.json<Tokens>().access_token)).toMatchObject({ username: "admin" });

    const denied = await throughForm(params, "Deny", {}, auth);
    expect(denied.res.status).toBe(303);
    expect(Object.fromEntries(denied.location?.searchParams ?? [])).toEqual({
      error: "access_denied",
      error_description: "The user denied the request.",
      state: "abc",
    });
  });
});

describe("refresh tokens", () => {
  async function freshTokens(): Promise<Tokens> {
    const code = await codeFor(serverApp, SERVER_REDIRECT);
    const res = await tokenRequest({
      grant_type: "authorization_code",
      client_id: serverApp.client_id,
      client_secret: serverApp.client_secret as string,
      code,
      redirect_uri: SERVER_REDIRECT,
    });
    return res.json<Tokens>();
  }

  it("rotates on every use; a spent refresh token revokes its whole family", async () => {
    const first = await freshTokens();
    const refresh = (token: string, grant = "refresh_token") =>
      tokenRequest({ grant_type: grant, ...serverClient(), refresh_token: token });
    const second = (await refresh(first.refresh_token)).json<Tokens>();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.refresh_token_expires_in).toBeLessThanOrEqual(first.refresh_token_expires_in);
    const third = (await refresh(second.refresh_token, "exchange_refresh_token")).json<Tokens>();
    expect(await whoAmI(third.access_token)).toMatchObject({ username: "admin" });

    // The first refresh token again: someone holds a copy. Everything of the family stops working.
    const replay = await refresh(first.refresh_token);
    expect(replay.status).toBe(400);
    expect(replay.json()).toEqual({
      error: "invalid_grant",
      error_description: "The refresh token was already used: its whole family is revoked. Sign in again.",
    });
    for (const t of [first, second, third])
      expect(await whoAmI(t.access_token)).toMatchObject({ error: { code: 498 } });
    expect((await refresh(third.refresh_token)).json()).toMatchObject({ error: "invalid_grant" });

    // Another sign-in is another family, untouched.
    const other = await freshTokens();
    expect(await whoAmI(other.access_token)).toMatchObject({ username: "admin" });
  });

  it("revokes refresh and access tokens at revokeToken (RFC 7009), only for the app they were issued to", async () => {
    const tokens = await freshTokens();
    const foreign = await post("oauth2/revokeToken", {
      client_id: browserApp.client_id,
      auth_token: tokens.access_token,
    });
    expect(foreign.json()).toEqual({ success: true });
    expect(await whoAmI(tokens.access_token)).toMatchObject({ username: "admin" });
    // A confidential app authenticates here as at the token endpoint (RFC 7009 §2.1): its client_id alone is not it.
    const unauthenticated = await post("oauth2/revokeToken", {
      client_id: serverApp.client_id,
      auth_token: tokens.access_token,
    });
    expect([unauthenticated.status, unauthenticated.json()]).toMatchObject([401, { error: "invalid_client" }]);
    expect(await whoAmI(tokens.access_token)).toMatchObject({ username: "admin" });
    const revoked = await post("oauth2/revokeToken", { ...serverClient(), auth_token: tokens.access_token });
    expect(revoked.json()).toEqual({ success: true });
    expect(await whoAmI(tokens.access_token)).toMatchObject({ error: { code: 498 } });
    const byRfcName = await post("oauth2/revokeToken", { ...serverClient(), token: tokens.refresh_token });
    expect(byRfcName.json()).toEqual({ success: true });
    const res = await tokenRequest({
      grant_type: "refresh_token",
      ...serverClient(),
      refresh_token: tokens.refresh_token,
    });
    expect(res.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("authenticates the app at revokeToken by HTTP Basic too, and never ignores a wrong secret", async () => {
    const basic = (id: string, secret: string) => ({
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
    });
    const good = basic(serverApp.client_id, serverApp.client_secret as string);
    const wrong = basic(serverApp.client_id, "x".repeat(43));
    const tokens = await freshTokens();
    const access = { auth_token: tokens.access_token };
    for (const [fields, headers, status, body] of [
      [{ client_id: serverApp.client_id, ...access }, wrong, 401, ["invalid_client", "Invalid client credentials."]],
      [access, wrong, 401, ["invalid_client", "Invalid client credentials."]],
      [
        { client_id: serverApp.client_id, ...access },
        { authorization: "Basic not-base64!" },
        401,
        ["invalid_client", "Malformed Basic credentials."],
      ],
      [{ client_id: browserApp.client_id, ...access }, good, 400, ["invalid_request", "Two different client ids."]],
      [
        { client_secret: serverApp.client_secret as string, ...access },
        good,
        400,
        ["invalid_request", "Use one client authentication method."],
      ],
    ] as const) {
      const refused = await post("oauth2/revokeToken", fields, headers);
      expect(refused.status).toBe(status);
      expect(refused.json()).toEqual({ error: body[0], error_description: body[1] });
      if (status === 401) expect(refused.headers["www-authenticate"]).toBe('Basic realm="mapgate"');
      expect(await whoAmI(tokens.access_token)).toMatchObject({ username: "admin" });
    }
    expect((await post("oauth2/revokeToken", access, good)).json()).toEqual({ success: true });
    expect(await whoAmI(tokens.access_token)).toMatchObject({ error: { code: 498 } });
    const spent = await post("oauth2/revokeToken", { token: tokens.refresh_token }, good);
    expect(spent.json()).toEqual({ success: true });
    const refresh = { grant_type: "refresh_token", refresh_token: tokens.refresh_token };
    expect((await tokenRequest(refresh, good)).json()).toMatchObject({ error: "invalid_grant" });

    // A public app has no secret: its client_id in the form is all it sends.
    const { verifier, challenge } = pkce();
    const code = await codeFor(browserApp, NATIVE_REDIRECT, challenge);
    const own = (
      await tokenRequest({
        grant_type: "authorization_code",
        client_id: browserApp.client_id,
        code,
        redirect_uri: NATIVE_REDIRECT,
        code_verifier: verifier,
      })
    ).json<Tokens>();
    const revoked = await post("oauth2/revokeToken", { client_id: browserApp.client_id, token: own.access_token });
    expect(revoked.json()).toEqual({ success: true });
    expect(await whoAmI(own.access_token)).toMatchObject({ error: { code: 498 } });
  });

  it("makes a confidential app authenticate on every grant", async () => {
    const code = await codeFor(serverApp, SERVER_REDIRECT);
    const exchange = { grant_type: "authorization_code", code, redirect_uri: SERVER_REDIRECT };
    const anonymous = await tokenRequest({ ...exchange, client_id: serverApp.client_id });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json()).toEqual({
      error: "invalid_client",
      error_description: "This application must authenticate with its client_secret.",
    });
    const tokens = (await tokenRequest({ ...exchange, ...serverClient() })).json<Tokens>();
    const refresh = await tokenRequest({
      grant_type: "refresh_token",
      client_id: serverApp.client_id,
      refresh_token: tokens.refresh_token,
    });
    expect(refresh.json()).toMatchObject({ error: "invalid_client" });
    // A malformed Basic header is the client's fault (401), never ours.
    const basic = Buffer.from(`${serverApp.client_id}:%zz`).toString("base64");
    const bad = await tokenRequest({ grant_type: "client_credentials" }, { authorization: `Basic ${basic}` });
    expect(bad.status).toBe(401);
    expect(bad.json()).toEqual({ error: "invalid_client", error_description: "Malformed Basic credentials." });
  });

  it("revokes a server-token exchanged from an OAuth token along with its family", async () => {
    const tokens = await freshTokens();
    const swap = await post("generateToken", {
      f: "json",
      token: tokens.access_token,
      serverURL: `${engine.ready.https}/arcgis`,
    });
    const serverToken = swap.json<{ token: string }>().token;
    const atServer = () =>
      call(`${engine.ready.https}/arcgis/rest/info?f=json&token=${serverToken}`, { ca: engine.ca });
    expect((await atServer()).json()).toMatchObject({ currentVersion: expect.any(Number) });
    await post("oauth2/revokeToken", { ...serverClient(), auth_token: tokens.access_token });
    expect((await atServer()).json()).toMatchObject({ error: { code: 498 } });
  });
});

describe("client credentials and the password grant", () => {
  it("gives a server app its own token (secret by form or Basic), which is no user", async () => {
    const secret = serverApp.client_secret as string;
    const basic = Buffer.from(`${serverApp.client_id}:${secret}`).toString("base64");
    for (const [fields, headers] of [
      [{ client_id: serverApp.client_id, client_secret: secret }, {}],
      [{}, { authorization: `Basic ${basic}` }],
    ] as const) {
      const res = await post(
        "oauth2/token/",
        { grant_type: "client_credentials", expiration: "120", ...fields },
        headers,
      );
      const t = res.json<{ access_token: string; expires_in: number; token_type: string }>();
      expect(t.token_type).toBe("Bearer");
      expect(t.expires_in).toBeGreaterThan(7190);
      expect(t.expires_in).toBeLessThanOrEqual(7200);
      const portal = await call(`${rest()}/portals/self?f=json&token=${t.access_token}`, { ca: engine.ca });
      expect(portal.json()).toMatchObject({ id: portalId });
      expect(await whoAmI(t.access_token)).toMatchObject({
        error: { code: 403, details: ["An application token does not act for a user."] },
      });
    }
    const wrong = await tokenRequest({
      grant_type: "client_credentials",
      client_id: serverApp.client_id,
      client_secret: "x".repeat(43),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers["www-authenticate"]).toBe('Basic realm="mapgate"');
    expect(wrong.json()).toEqual({ error: "invalid_client", error_description: "Invalid client credentials." });
    const publicApp = await tokenRequest({ grant_type: "client_credentials", client_id: browserApp.client_id });
    expect(publicApp.json()).toMatchObject({ error: "unauthorized_client" });
  });

  it("stops every token of an app the moment it is unregistered", async () => {
    const out = registerServerAppByCommand("Brief", "https://brief.example/cb");
    const t = (
      await tokenRequest({
        grant_type: "client_credentials",
        client_id: out.client_id,
        client_secret: out.client_secret as string,
      })
    ).json<{ access_token: string }>().access_token;
    const portal = () => call(`${rest()}/portals/self?f=json&token=${t}`, { ca: engine.ca });
    expect((await portal()).json()).toMatchObject({ id: portalId });
    const gone = await post(`portals/self/apps/${out.client_id}/unregister`, { f: "json", token: adminToken });
    expect(gone.json()).toEqual({ success: true, client_id: out.client_id });
    expect((await portal()).json()).toMatchObject({ error: { code: 498 } });
  });

  it("allows the password grant only where the organization enables it", async () => {
    const grant = {
      grant_type: "password",
      ...serverClient(),
      username: "publisher",
      password: PASSWORDS.publisher,
    };
    expect((await tokenRequest(grant)).json()).toEqual({
      error: "unauthorized_client",
      error_description: "This organization does not allow the password grant.",
    });
    admin("update-portal", "--portal", portalId, "--password-grant", "true");
    try {
      const t = (await tokenRequest(grant)).json<Tokens>();
      expect(t).toMatchObject({ username: "publisher", token_type: "Bearer" });
      expect(await whoAmI(t.access_token)).toMatchObject({ username: "publisher" });
      expect((await tokenRequest({ ...grant, password: "wrong" })).json()).toEqual({
        error: "invalid_grant",
        error_description: "Invalid username or password.",
      });
    } finally {
      admin("update-portal", "--portal", portalId, "--password-grant", "false");
    }
  });

  it("answers RFC 6749 errors for malformed token requests, and never over GET or plain HTTP", async () => {
    expect((await tokenRequest({ client_id: serverApp.client_id })).json()).toEqual({
      error: "invalid_request",
      error_description: "'grant_type' must be specified.",
    });
    expect((await tokenRequest({ grant_type: "implicit", client_id: serverApp.client_id })).json()).toMatchObject({
      error: "unsupported_grant_type",
    });
    const unknown = await tokenRequest({ grant_type: "refresh_token", client_id: "nobody", refresh_token: "x" });
    expect(unknown.status).toBe(401);
    expect(unknown.json()).toMatchObject({ error: "invalid_client" });
    const get = await call(`${rest()}/oauth2/token?grant_type=client_credentials&client_id=x`, { ca: engine.ca });
    expect(get.status).toBe(400);
    expect(get.json()).toMatchObject({ error: "invalid_request" });
    const plain = await call(`${engine.ready.http}/portal/sharing/rest/oauth2/token`, {
      body: form({ grant_type: "client_credentials", client_id: serverApp.client_id }),
    });
    expect(plain.status).toBe(400);
    expect(plain.json()).toMatchObject({
      error: "invalid_request",
      error_description: expect.stringMatching(/SSL Required/),
    });
    // JSONP and HTML are not offered: a token answer is always JSON.
    const jsonp = await post("oauth2/token?callback=cb&f=html", {
      grant_type: "client_credentials",
      client_id: serverApp.client_id,
      client_secret: serverApp.client_secret as string,
    });
    expect(jsonp.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(jsonp.json()).toHaveProperty("access_token");
  });
});

describe("the sign-in page and its cookie", () => {
  const signInUrl = (redirect?: string) =>
    `${rest()}/oauth2/signin${redirect === undefined ? "" : `?redirect=${encodeURIComponent(redirect)}`}`;

  async function signIn(fields: Record<string, string>, redirect?: string) {
    const { cookie, csrf } = await formOf(signInUrl(redirect), engine.ca);
    return call(signInUrl(), {
      ca: engine.ca,
      body: form({ username: "admin", password: PASSWORDS.admin, csrf, ...fields }),
      headers: { cookie },
    });
  }

  const authCookie = (res: Answer) => setCookies(res).find((c) => c.startsWith("vendor_authcookie="));

  it("sets vendor_authcookie exactly as specified: a session cookie, or two weeks when asked", async () => {
    const session = await signIn({ redirect: "/portal/sharing/rest/portals/self?f=html" });
    expect(session.status).toBe(303);
    expect(session.headers.location).toBe("/portal/sharing/rest/portals/self?f=html");
    const cookie = authCookie(session) as string;
    expect(cookie).toMatch(/^vendor_authcookie=[^;]+; Path=\/; Secure; HttpOnly; SameSite=Lax$/);
    const value = JSON.parse(decodeURIComponent(cookie.slice("vendor_authcookie=".length).split(";")[0] as string));
    expect(value).toMatchObject({ allSSL: false, persistent: false, username: "admin", role: "org_admin" });
    expect(value.expires).toBeGreaterThan(Date.now() + 14 * 24 * 3600_000 - 60_000);
    expect(await whoAmI(value.token)).toMatchObject({ username: "admin" });

    const persistent = await signIn({ persistent: "true" });
    expect(authCookie(persistent)).toMatch(
      /^vendor_authcookie=[^;]+; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=1209600$/,
    );
  });

  it("never redirects off the site", async () => {
    for (const target of [
      "https://evil.example/",
      "//evil.example/x",
      "/\\evil.example",
      "javascript:alert(1)",
      "http://evil.example@localhost/",
      "\t//evil.example",
      "/.//evil.example/x",
      "/%2e//evil.example/x",
      "/portal/..//evil.example/x",
    ]) {
      const res = await signIn({ redirect: target });
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe("/portal/sharing/rest");
    }
    const own = await signIn({ redirect: `${engine.ready.https}/portal/sharing/rest/community/self?f=html` });
    expect(own.headers.location).toBe("/portal/sharing/rest/community/self?f=html");
  });

  it("refuses a sign-in form without its CSRF pair, from another site, or over plain HTTP (no cookie ever set)", async () => {
    const { cookie, csrf } = await formOf(signInUrl(), engine.ca);
    const other = await formOf(signInUrl(), engine.ca);
    const body = (extra: Record<string, string>) => form({ username: "admin", password: PASSWORDS.admin, ...extra });
    for (const [b, headers] of [
      [body({}), { cookie }],
      [body({ csrf }), {}],
      [body({ csrf: other.csrf }), { cookie }],
      [body({ csrf }), { cookie, origin: "https://evil.example" }],
      [body({ csrf }), { cookie, "sec-fetch-site": "cross-site" }],
    ] as const) {
      const res = await call(signInUrl(), { ca: engine.ca, body: b, headers });
      expect(res.status).toBe(200);
      expect(res.text).toContain("CSRF check failed");
      expect(authCookie(res)).toBeUndefined();
    }
    for (const res of [
      await call(`${engine.ready.http}/portal/sharing/rest/oauth2/signin`),
      await call(`${engine.ready.http}/portal/sharing/rest/oauth2/signin`, {
        body: body({ csrf }),
        headers: { cookie },
      }),
    ]) {
      expect(res.text).toContain("SSL Required");
      expect(setCookies(res)).toEqual([]);
    }
  });

  it("lets the cookie change state only through our own forms, and signs out for good", async () => {
    const signedIn = authCookie(await signIn({})) as string;
    const auth = signedIn.split(";")[0] as string;
    const value = JSON.parse(decodeURIComponent(auth.slice("vendor_authcookie=".length))) as { token: string };
    const createUrl = `${rest()}/portals/self/createRole`;
    const { cookie: csrfCookie, csrf } = await formOf(`${createUrl}?f=html`, engine.ca, auth);
    const both = `${auth}; ${csrfCookie}`;
    const noCsrf = await call(createUrl, {
      ca: engine.ca,
      body: form({ f: "json", name: "Cookie Only" }),
      headers: { cookie: auth },
    });
    expect(noCsrf.json()).toMatchObject({ error: { code: 403 } });
    const created = await call(createUrl, {
      ca: engine.ca,
      body: form({ f: "json", name: "Via Form", csrf }),
      headers: { cookie: both },
    });
    expect(created.json()).toMatchObject({ success: true, id: expect.any(String) });

    const out = await formOf(`${rest()}/oauth2/signout`, engine.ca, both);
    const signOut = await call(`${rest()}/oauth2/signout`, {
      ca: engine.ca,
      body: form({ csrf: out.csrf, redirect: "https://evil.example/" }),
      headers: { cookie: both },
    });
    expect(signOut.status).toBe(303);
    expect(signOut.headers.location).toBe("/portal/sharing/rest");
    expect(setCookies(signOut)).toEqual(["vendor_authcookie=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0"]);
    expect(await whoAmI(value.token)).toMatchObject({ error: { code: 498 } });
  });

  it("shares the generateToken lockout", async () => {
    const name = `ghost${Date.now()}`;
    for (let i = 0; i < 5; i++) {
      const res = await signIn({ username: name, password: "wrong-password" });
      expect(res.text).toContain("Invalid username or password.");
    }
    const locked = await call(`${rest()}/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: name, password: "wrong-password" }),
    });
    expect(locked.json()).toMatchObject({
      error: { details: ["Too many invalid sign-in attempts. Try again later."] },
    });
    expect((await signIn({ username: name, password: "x" })).text).toContain("Too many invalid sign-in attempts.");
  });
});

describe("hardening", () => {
  it("refuses secrets in the URL", async () => {
    const res = await call(
      `${rest()}/oauth2/token?client_secret=${serverApp.client_secret as string}&grant_type=client_credentials`,
      { ca: engine.ca, body: form({ client_id: serverApp.client_id }) },
    );
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({
      error: "invalid_request",
      error_description: "Credentials in the URL. 'client_secret' must be sent in the request body, never in the URL.",
    });
    const signIn = await call(`${rest()}/oauth2/signin?f=json&password=x`, { ca: engine.ca, body: form({}) });
    expect(signIn.json()).toMatchObject({ error: { code: 400, message: "Credentials in the URL." } });
  });

  it("lets a browser app's own origin read its token answers (CORS), and no other origin", async () => {
    const app = (
      await post("portals/self/apps/register", {
        f: "json",
        token: adminToken,
        name: "Browser App",
        appType: "browser",
        redirect_uris: JSON.stringify(["https://web.example.test/app/cb"]),
      })
    ).json<Registered>();
    const { verifier, challenge } = pkce();
    const code = await codeFor(app, "https://web.example.test/app/cb", challenge);
    const fields = {
      grant_type: "authorization_code",
      client_id: app.client_id,
      code,
      redirect_uri: "https://web.example.test/app/cb",
      code_verifier: verifier,
    };
    // The organization lists one origin only: the app's own is read whatever the list says, another is not.
    const limit = (allowedOrigins: string) =>
      post("portals/self/update", { f: "json", token: adminToken, allowedOrigins });
    expect((await limit("https://other.example.test")).json()).toMatchObject({ success: true });
    try {
      const ok = await tokenRequest(fields, { origin: "https://web.example.test" });
      expect(ok.json()).toHaveProperty("access_token");
      expect(ok.headers["access-control-allow-origin"]).toBe("https://web.example.test");
      // The SDK sends its requests to the portal with credentials (the token endpoint reads no cookie).
      expect(ok.headers["access-control-allow-credentials"]).toBe("true");
      expect(ok.headers.vary).toContain("Origin");
      const replay = await tokenRequest(fields, { origin: "https://web.example.test" });
      expect(replay.status).toBe(400);
      expect(replay.headers["access-control-allow-origin"]).toBe("https://web.example.test");
      const other = await tokenRequest(fields, { origin: "https://evil.example" });
      expect(other.headers["access-control-allow-origin"]).toBeUndefined();
    } finally {
      expect((await limit("")).json()).toMatchObject({ success: true, allowedOrigins: [] });
    }
    // With no list (every origin, as on ArcGIS), any page may read the token endpoint's answers: they hold a
    // token only for a code and verifier the page already has, and no cookie is ever read there.
    const open = await tokenRequest(fields, { origin: "https://evil.example" });
    expect(open.headers["access-control-allow-origin"]).toBe("https://evil.example");
  });

  it("serves authorization code + PKCE, revocation, sign-in and sign-out at sharing/oauth2 too (no rest), as ArcGIS does", async () => {
    const bare = `${engine.ready.https}/portal/sharing/oauth2`;
    const { verifier, challenge } = pkce();
    const params = {
      response_type: "code",
      client_id: browserApp.client_id,
      redirect_uri: NATIVE_REDIRECT,
      state: "bare",
      code_challenge: challenge,
      code_challenge_method: "S256",
    };
    const url = `${bare}/authorize?${new URLSearchParams(params).toString()}`;
    const { page, cookie, csrf } = await formOf(url, engine.ca);
    // The page posts back where it was served.
    expect(page.text).toContain('action="/portal/sharing/oauth2/authorize"');
    const authorized = await call(`${bare}/authorize`, {
      ca: engine.ca,
      body: form({ ...params, csrf, username: "admin", password: PASSWORDS.admin }),
      headers: { cookie },
    });
    expect(authorized.status).toBe(303);
    const location = new URL(String(authorized.headers.location));
    expect(`${location.origin}${location.pathname}`).toBe(NATIVE_REDIRECT);
    expect(location.searchParams.get("state")).toBe("bare");
    const code = location.searchParams.get("code") as string;
    const exchanged = await call(`${bare}/token`, {
      ca: engine.ca,
      body: form({
        grant_type: "authorization_code",
        client_id: browserApp.client_id,
        code,
        redirect_uri: NATIVE_REDIRECT,
        code_verifier: verifier,
      }),
    });
    expect(exchanged.status).toBe(200);
    const tokens = exchanged.json<Tokens>();
    expect(await whoAmI(tokens.access_token)).toMatchObject({ username: "admin" });
    const revoked = await call(`${bare}/revokeToken`, {
      ca: engine.ca,
      body: form({ client_id: browserApp.client_id, token: tokens.access_token }),
    });
    expect(revoked.json()).toEqual({ success: true });
    expect(await whoAmI(tokens.access_token)).toMatchObject({ error: { code: 498 } });

    // The sign-in page and sign-out: the cookie for the whole host, the redirect kept on the site.
    const signInPage = await formOf(`${bare}/signin`, engine.ca);
    expect(signInPage.page.text).toContain('action="/portal/sharing/oauth2/signin"');
    const signedIn = await call(`${bare}/signin`, {
      ca: engine.ca,
      body: form({ username: "admin", password: PASSWORDS.admin, csrf: signInPage.csrf, redirect: "/portal/home" }),
      headers: { cookie: signInPage.cookie },
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.location).toBe("/portal/home");
    const auth = (setCookies(signedIn).find((c) => c.startsWith("vendor_authcookie=")) ?? "").split(";")[0] as string;
    expect(setCookies(signedIn).find((c) => c.startsWith("vendor_authcookie="))).toContain("; Path=/;");
    const both = `${auth}; ${signInPage.cookie}`;
    const out = await formOf(`${bare}/signout`, engine.ca, both);
    expect(out.page.text).toContain('action="/portal/sharing/oauth2/signout"');
    const signedOut = await call(`${bare}/signout`, {
      ca: engine.ca,
      body: form({ csrf: out.csrf }),
      headers: { cookie: both },
    });
    expect(signedOut.status).toBe(303);
    expect(setCookies(signedOut)).toEqual(["vendor_authcookie=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0"]);
  });

  it("lets the consent page's form reach the app's redirect URI, and nothing else (CSP form-action)", async () => {
    const q = new URLSearchParams({
      client_id: browserApp.client_id,
      response_type: "code",
      redirect_uri: NATIVE_REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: "S256",
    });
    const page = await call(`${rest()}/oauth2/authorize?${q}`, { ca: engine.ca });
    expect(page.headers["content-security-policy"]).toContain("form-action 'self' http://127.0.0.1:7777;");
    const directory = await call(`${rest()}?f=html`, { ca: engine.ca });
    expect(directory.headers["content-security-policy"]).toContain("form-action 'self';");
  });

  it("signs nobody in when two sign-in cookies arrive (one was planted by a sibling site)", async () => {
    const cookie = (t: string) => `vendor_authcookie=${encodeURIComponent(JSON.stringify({ token: t }))}`;
    const res = await call(`${rest()}/community/self?f=json`, {
      ca: engine.ca,
      headers: { cookie: `${cookie(adminToken)}; ${cookie(adminToken)}` },
    });
    expect(res.json()).toMatchObject({ error: { code: 499 } });
  });
});

describe("npm run admin -- reset-password", () => {
  const cli = (args: string[], password = "") =>
    execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, MAPGATE_USER_PASSWORD: password },
      stdio: "pipe",
    });

  it("ends every token, session, refresh token and code of the user at once; the new password signs in, the old does not", async () => {
    const username = "resetme";
    const first = "resetme-Pass-1234";
    cli(["add-user", "--portal", portalId, "--username", username, "--role", "org_user"], first);
    // Before: a generateToken token, a server-token exchanged from it, a sign-in cookie, an OAuth family, a code.
    const who = { username, password: first };
    const token = await generateToken(username, first);
    const exchanged = await post("generateToken", {
      f: "json",
      token,
      serverURL: `${engine.ready.https}/arcgis`,
    });
    const serverToken = exchanged.json<{ token: string }>().token;
    expect(serverToken).toEqual(expect.any(String));
    const signInPage = await formOf(`${rest()}/oauth2/signin`, engine.ca);
    const signedIn = await call(`${rest()}/oauth2/signin`, {
      ca: engine.ca,
      body: form({ ...who, csrf: signInPage.csrf }),
      headers: { cookie: signInPage.cookie },
    });
    const cookie = (setCookies(signedIn).find((c) => c.startsWith("vendor_authcookie=")) ?? "").split(";")[0] as string;
    const codeRequest = { client_id: serverApp.client_id, redirect_uri: SERVER_REDIRECT, state: "s" };
    const codeOf = async () =>
      new URL(String((await authorize(codeRequest, who)).headers.location)).searchParams.get("code") as string;
    const redeem = (code: string) =>
      tokenRequest({ grant_type: "authorization_code", ...serverClient(), code, redirect_uri: SERVER_REDIRECT });
    const oauth = (await redeem(await codeOf())).json<Tokens>();
    const unused = await codeOf();
    const selfWithCookie = () =>
      call(`${rest()}/community/self?f=json`, { ca: engine.ca, headers: { cookie } }).then((r) => r.json());
    const serverInfo = (t: string) =>
      call(`${engine.ready.https}/arcgis/rest/services?f=json&token=${t}`, { ca: engine.ca }).then((r) => r.json());
    expect(await whoAmI(token)).toMatchObject({ username });
    expect(await whoAmI(oauth.access_token)).toMatchObject({ username });
    expect(await selfWithCookie()).toMatchObject({ username });
    expect(await serverInfo(serverToken)).not.toHaveProperty("error");

    const printed = cli(["reset-password", "--user", username]);
    const out = JSON.parse(printed) as Record<string, unknown>;
    // The password field is the password alone (`jq -r .password` gives it); what to know of it is a field apart.
    expect(out).toEqual({
      username,
      password: expect.stringMatching(/^[A-Za-z0-9]{20}$/),
      passwordNote: "shown only now: mapgate keeps only its hash",
      tokens: "every earlier token and session of this user is refused",
    });
    const fresh = String(out.password);

    // Each on its very next request.
    expect(await whoAmI(token)).toEqual({
      error: { code: 498, message: "Invalid token.", details: ["Invalid token."] },
    });
    expect(await whoAmI(oauth.access_token)).toMatchObject({ error: { code: 498 } });
    expect(await serverInfo(serverToken)).toMatchObject({ error: { code: 498 } });
    expect(await selfWithCookie()).toMatchObject({ error: { code: 499 } });
    const refreshed = await tokenRequest({
      grant_type: "refresh_token",
      ...serverClient(),
      refresh_token: oauth.refresh_token,
    });
    expect(refreshed.json()).toEqual({
      error: "invalid_grant",
      error_description: "The user's password was reset: sign in again.",
    });
    expect((await redeem(unused)).json()).toEqual({
      error: "invalid_grant",
      error_description: "The authorization code is invalid, expired or already used.",
    });
    const old = await post("generateToken", { f: "json", username, password: first });
    expect(old.json()).toMatchObject({ error: { code: 400, details: ["Invalid username or password."] } });
    expect(await whoAmI(await generateToken(username, fresh))).toMatchObject({ username });

    let refused = "";
    try {
      cli(["reset-password", "--user", "nobody-here"]);
    } catch (err) {
      refused = String((err as { stderr: string }).stderr);
    }
    expect(refused).toBe("mapgate admin: no user nobody-here\n");
  });
});
