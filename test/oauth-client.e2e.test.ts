// The real ArcGIS REST JS client (@esri/arcgis-rest-request 4.10.2) through the local engine's OAuth 2.0
// endpoints over HTTPS: exchangeAuthorizationCode, refreshCredentials and exchangeRefreshToken (with refresh
// token rotation and the family revocation a spent refresh token triggers), ApplicationCredentialsManager
// (client credentials) and revokeToken. The protocol itself, attacks included, is in oauth.e2e.test.ts.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form, formOf } from "./helpers/http.ts";
import { runJson } from "./helpers/run.ts";

const REDIRECT = "https://app.example.test/callback";
const MINUTE = 60_000;
const TWO_WEEKS = 14 * 24 * 60 * MINUTE;
/** ArcGIS REST JS counts OAuth expiries five minutes short, to refresh early. */
const EARLY = 5 * MINUTE;

let engine: RunningEngine;
let portalId: string;
let result: Record<string, unknown>;
const rest = () => `${engine.ready.https}/portal/sharing/rest`;

/** A browser signing "admin" in on the authorization page (no PKCE: a server app); answers the code. */
async function authorizationCode(clientId: string): Promise<string> {
  const params = { client_id: clientId, response_type: "code", redirect_uri: REDIRECT, state: "s1" };
  const url = `${rest()}/oauth2/authorize?${new URLSearchParams(params).toString()}`;
  const { cookie, csrf } = await formOf(url, engine.ca);
  const res = await call(url, {
    ca: engine.ca,
    body: form({ ...params, csrf, username: "admin", password: PASSWORDS.admin }),
    headers: { cookie },
  });
  const location = res.status === 303 ? new URL(String(res.headers.location)) : undefined;
  const code = location?.searchParams.get("code");
  if (!location || !code || `${location.origin}${location.pathname}` !== REDIRECT) {
    throw new Error(`no code: ${res.status} ${String(res.headers.location)} ${res.text.slice(0, 400)}`);
  }
  if (location.searchParams.get("state") !== "s1") throw new Error(`state lost: ${location.href}`);
  return code;
}

beforeAll(async () => {
  engine = await startEngine();
  const signIn = await call(`${rest()}/generateToken`, {
    ca: engine.ca,
    body: form({ f: "json", username: "admin", password: PASSWORDS.admin }),
  });
  const adminToken = signIn.json<{ token?: string }>().token;
  if (!adminToken) throw new Error(signIn.text);
  portalId = (await call(`${rest()}/portals/self?f=json`, { ca: engine.ca })).json<{ id: string }>().id;
  const registered = await call(`${rest()}/portals/self/apps/register`, {
    ca: engine.ca,
    body: form({
      f: "json",
      token: adminToken,
      name: "ArcGIS REST JS server app",
      appType: "server",
      redirect_uris: JSON.stringify([REDIRECT]),
      // The library's server-side flow never sends the client secret: the administrator allows that explicitly.
      exchangeWithoutSecret: "true",
    }),
  });
  const app = registered.json<{ client_id?: string; client_secret?: string }>();
  if (!app.client_id || !app.client_secret) throw new Error(registered.text);
  const codes = [await authorizationCode(app.client_id), await authorizationCode(app.client_id)];
  result = await runJson(
    process.execPath,
    [
      join(ROOT, "test/clients/arcgis-oauth.ts"),
      JSON.stringify({
        portal: rest(),
        clientId: app.client_id,
        clientSecret: app.client_secret,
        redirectUri: REDIRECT,
        codes,
      }),
    ],
    { NODE_EXTRA_CA_CERTS: engine.ready.cert },
  );
}, 90_000);

afterAll(async () => {
  await engine?.stop();
});

interface Timed {
  before: number;
  after: number;
}

/** An expiry the library computed from `expires_in` (whole seconds, answered between before and after). */
function expectExpiry(expires: unknown, at: Timed, lifetime: number): void {
  expect(typeof expires).toBe("number");
  expect(expires).toBeGreaterThanOrEqual(at.before + lifetime - EARLY - 2_000);
  expect(expires).toBeLessThanOrEqual(at.after + lifetime - EARLY);
}

const INVALID_TOKEN = { name: "ArcGISAuthError", code: 498, message: "498: Invalid token." };
/**
 * How the library reports a refused token request. The endpoint answers RFC 6749 errors with their HTTP
 * status ({error, error_description}); the library reads only the status from that body.
 */
const tokenRequestError = (code: string, status: string) => ({
  name: "ArcGISTokenRequestError",
  code,
  message: expect.stringMatching(new RegExp(`^${code}: HTTP ${status}`)) as unknown,
});
const REFRESH_FAILED = tokenRequestError("TOKEN_REFRESH_FAILED", "400 Bad Request");
const EXCHANGE_FAILED = tokenRequestError("REFRESH_TOKEN_EXCHANGE_FAILED", "400 Bad Request");

describe("ArcGISIdentityManager", () => {
  it("exchanges an authorization code for a manager: admin's token for two weeks, and a refresh token", () => {
    const exchange = result.exchange as Timed & Record<string, unknown>;
    expect(exchange).toMatchObject({
      username: "admin",
      redirectUri: REDIRECT,
      ssl: false,
      tokenType: "string",
      refreshTokenShape: true,
      canRefresh: true,
      calls: ["token:authorization_code"],
    });
    expectExpiry(exchange.tokenExpires, exchange, TWO_WEEKS);
    expectExpiry(exchange.refreshTokenExpires, exchange, TWO_WEEKS);
    expect(result.signedIn).toEqual({
      getUser: "admin",
      self: { username: "admin", role: "org_admin" },
      calls: ["self", "self"],
    });
  });

  it("refreshCredentials gets a new token; the server rotates the refresh token, which the library drops", () => {
    const refresh = result.refresh as Timed & Record<string, unknown>;
    expect(refresh).toMatchObject({
      newToken: true,
      libraryKeptRefreshToken: true,
      serverRotated: true,
      who: "admin",
      calls: ["token:refresh_token", "self"],
    });
    expectExpiry(refresh.tokenExpires, refresh, TWO_WEEKS);
  });

  it("exchangeRefreshToken rotates and stores the new refresh token, again and again, in the same family", () => {
    const chain = result.exchangeChain as (Timed & Record<string, unknown>)[];
    expect(chain).toHaveLength(2);
    const exchange = result.exchange as Record<string, unknown>;
    const familyEnds = exchange.refreshTokenExpires as number;
    for (const step of chain) {
      expect(step).toMatchObject({
        newToken: true,
        rotated: true,
        sameFamily: true,
        who: "admin",
        calls: ["token:exchange_refresh_token", "self"],
      });
      expectExpiry(step.tokenExpires, step, TWO_WEEKS);
      // Rotation never extends the family: each new refresh token ends when the first one did (to the
      // second: expires_in is whole seconds).
      expect(Math.abs((step.refreshTokenExpires as number) - familyEnds)).toBeLessThanOrEqual(1_000);
    }
  });

  it("a spent refresh token presented again revokes the family: every token it issued stops working", () => {
    expect(result.reuse).toEqual({
      firstRefresh: { newToken: true, who: "admin", calls: ["token:refresh_token", "self"] },
      secondRefresh: REFRESH_FAILED,
      secondCalls: ["token:refresh_token"],
      keptTokenUnchanged: true,
      afterReuse: {
        who: INVALID_TOKEN,
        calls: ["self"],
        // A 498, then the library's one refresh attempt (with the spent token again), which fails.
        viaManager: REFRESH_FAILED,
        viaManagerCalls: ["self", "token:refresh_token"],
      },
      familyTokens: [INVALID_TOKEN, INVALID_TOKEN, INVALID_TOKEN, INVALID_TOKEN, INVALID_TOKEN],
      currentRefreshToken: EXCHANGE_FAILED,
    });
  });
});

describe("ApplicationCredentialsManager", () => {
  it("gets an app token with client credentials; the library asks for 7200 minutes and gets them", () => {
    const app = result.appCredentials as Timed & Record<string, unknown>;
    expect(app).toMatchObject({ tokenType: "string", duration: 7200, calls: ["token:client_credentials"] });
    expectExpiry(app.expires, app, 7200 * MINUTE);
  });

  it("an app asking for more than two weeks is clamped to two weeks", () => {
    const clamped = result.appClamped as Timed & Record<string, unknown>;
    expectExpiry(clamped.expires, clamped, TWO_WEEKS);
  });

  it("the app token reads portals/self but does not act for a user (community/self is 403)", () => {
    expect(result.appPortalSelf).toMatchObject({ id: portalId, calls: ["self"] });
    // The library names the error by its messageCode when there is one; the ArcGIS code is 403.
    expect(result.appCommunitySelf).toEqual({
      name: "ArcGISRequestError",
      code: "GWM_0003",
      message: "GWM_0003: You do not have permissions to access this resource or perform this operation.",
      status: 403,
      calls: ["self"],
    });
  });

  it("a wrong client secret is an ArcGISTokenRequestError", () => {
    expect(result.appWrongSecret).toEqual(tokenRequestError("TOKEN_REFRESH_FAILED", "401 Unauthorized"));
  });
});

describe("revokeToken", () => {
  it("revokes an access token (its refresh token goes on); signOut revokes the refresh token and its family", () => {
    expect(result.revoke).toEqual({
      whoBefore: "admin",
      revoked: { success: true },
      whoAfter: INVALID_TOKEN,
      calls: ["token:authorization_code", "self", "revokeToken", "self"],
      renewed: { newToken: true, who: "admin" },
      signOut: { success: true },
      renewedAfterSignOut: INVALID_TOKEN,
      exchangeAfterSignOut: EXCHANGE_FAILED,
      signOutCalls: ["token:exchange_refresh_token", "self", "revokeToken", "token:exchange_refresh_token", "self"],
    });
    expect(result.revokeAppToken).toEqual({ revoked: { success: true }, portalSelf: INVALID_TOKEN });
  });
});
