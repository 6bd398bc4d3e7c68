// Runs the real ArcGIS REST JS client's OAuth 2.0 flows against a running engine and prints what it saw as
// one JSON line. Started by test/oauth-client.e2e.test.ts in its own Node process, with NODE_EXTRA_CA_CERTS
// set to the engine's certificate. Input (one JSON argument): the portal's REST root, a server app's client id
// and secret, its redirect URI, and two authorization codes the test obtained for "admin" without PKCE.
import { ApplicationCredentialsManager, ArcGISIdentityManager, request, revokeToken } from "@esri/arcgis-rest-request";

const input = JSON.parse(process.argv[2] ?? "{}") as {
  portal: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  codes: [string, string];
};
const { portal, clientId, clientSecret, redirectUri } = input;

/** What the library sent: the last path segment, and for the token endpoint the grant type. */
const calls: string[] = [];
/** The refresh token the token endpoint last answered, whether or not the library kept it. */
let answeredRefreshToken: string | undefined;
const realFetch = globalThis.fetch;
globalThis.fetch = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const segments = url.pathname.split("/").filter(Boolean);
  const last = segments.pop() ?? "";
  const isToken = last === "token" && segments.pop() === "oauth2";
  const grant = isToken && typeof init?.body === "string" ? new URLSearchParams(init.body).get("grant_type") : null;
  calls.push(isToken ? `token:${grant ?? "?"}` : last);
  const res = await realFetch(input, init);
  if (isToken && res.ok) {
    const body = (await res.clone().json()) as { refresh_token?: unknown };
    if (typeof body.refresh_token === "string") answeredRefreshToken = body.refresh_token;
  }
  return res;
};
const takeCalls = () => calls.splice(0);

const describe = (err: unknown) => ({
  name: (err as Error).name,
  code: (err as { code?: unknown }).code,
  message: (err as Error).message,
});

/** "resolved", or the error the step threw: what a client sees, as data. */
async function outcome(step: () => Promise<unknown>): Promise<unknown> {
  try {
    await step();
    return "resolved";
  } catch (err) {
    return describe(err);
  }
}

/** Who a bare token is (no manager, so no automatic refresh): the username, or the error it gets. */
async function whoIs(token: string): Promise<unknown> {
  try {
    const me = (await request(`${portal}/community/self`, { params: { token } })) as { username?: unknown };
    return me.username;
  } catch (err) {
    return describe(err);
  }
}

/** portals/self with a bare token: the organization's id, or the error. */
async function portalSelfWith(token: string): Promise<unknown> {
  try {
    return ((await request(`${portal}/portals/self`, { params: { token } })) as { id?: unknown }).id;
  } catch (err) {
    return describe(err);
  }
}

const time = (d: Date | undefined) => (d instanceof Date ? d.getTime() : null);
const refreshTokenShape = (t: string | undefined) => (t === undefined ? null : /^[\w-]{16,64}\.[\w-]{32,128}$/.test(t));
const familyOf = (t: string | undefined) => t?.split(".")[0];

const out: Record<string, unknown> = {};

// a. authorization code → identity manager
let before = Date.now();
const manager = await ArcGISIdentityManager.exchangeAuthorizationCode(
  { clientId, redirectUri, portal },
  input.codes[0],
);
out.exchange = {
  before,
  after: Date.now(),
  username: manager.username,
  clientId: manager.clientId,
  redirectUri: manager.redirectUri,
  ssl: manager.ssl,
  tokenType: typeof manager.token,
  tokenExpires: time(manager.tokenExpires),
  refreshTokenShape: refreshTokenShape(manager.refreshToken),
  refreshTokenExpires: time(manager.refreshTokenExpires),
  canRefresh: manager.canRefresh,
  calls: takeCalls(),
};
const user = await manager.getUser();
const self = (await request(`${portal}/community/self`, { authentication: manager })) as Record<string, unknown>;
out.signedIn = { getUser: user.username, self: { username: self.username, role: self.role }, calls: takeCalls() };

// b. refreshing
const tokens: string[] = [manager.token];
const refreshTokens: string[] = [manager.refreshToken];
const family = familyOf(manager.refreshToken);

// b1. refreshCredentials(): the refresh_token grant. The server rotates the refresh token; the library does
// not keep the one it answers, so this manager now holds a spent one.
before = Date.now();
await manager.refreshCredentials();
tokens.push(manager.token);
const answered1 = answeredRefreshToken;
out.refresh = {
  before,
  after: Date.now(),
  newToken: manager.token !== tokens[0],
  tokenExpires: time(manager.tokenExpires),
  libraryKeptRefreshToken: manager.refreshToken === refreshTokens[0],
  serverRotated: answered1 !== undefined && answered1 !== refreshTokens[0] && familyOf(answered1) === family,
  who: await whoIs(manager.token),
  calls: takeCalls(),
};

// b2. A client that keeps what the server answered (a new manager with the same state and the new refresh
// token) goes on with exchangeRefreshToken(), which does store the new refresh token, twice in a row.
const keeper = new ArcGISIdentityManager({
  clientId,
  portal,
  redirectUri,
  username: manager.username,
  token: manager.token,
  tokenExpires: manager.tokenExpires,
  refreshToken: answered1,
  refreshTokenExpires: manager.refreshTokenExpires,
  ssl: manager.ssl,
});
const exchanges: unknown[] = [];
for (let i = 0; i < 2; i++) {
  const previous = keeper.refreshToken;
  before = Date.now();
  await keeper.exchangeRefreshToken();
  tokens.push(keeper.token);
  refreshTokens.push(keeper.refreshToken);
  exchanges.push({
    before,
    after: Date.now(),
    newToken: new Set(tokens).size === tokens.length,
    rotated: keeper.refreshToken !== previous && keeper.refreshToken === answeredRefreshToken,
    sameFamily: familyOf(keeper.refreshToken) === family,
    tokenExpires: time(keeper.tokenExpires),
    refreshTokenExpires: time(keeper.refreshTokenExpires),
    who: await whoIs(keeper.token),
    calls: takeCalls(),
  });
}
out.exchangeChain = exchanges;

// b3. The same client now uses refreshCredentials() (works: it presents the current refresh token), keeps
// the spent one, and calls refreshCredentials() again: the server sees a refresh token used twice and
// revokes the whole family, including the access token the client was just given.
await keeper.refreshCredentials();
const lastGood = keeper.token;
tokens.push(lastGood);
const firstRefresh = {
  newToken: new Set(tokens).size === tokens.length,
  who: await whoIs(lastGood),
  calls: takeCalls(),
};
const secondRefresh = await outcome(() => keeper.refreshCredentials());
const secondCalls = takeCalls();
const afterReuse: { who: unknown; calls: string[]; viaManager?: unknown; viaManagerCalls?: string[] } = {
  who: await whoIs(lastGood),
  calls: takeCalls(),
};
// The manager's own request: a 498, then its one automatic refresh attempt, which fails too.
afterReuse.viaManager = await outcome(() => request(`${portal}/community/self`, { authentication: keeper }));
afterReuse.viaManagerCalls = takeCalls();
out.reuse = {
  firstRefresh,
  secondRefresh,
  secondCalls,
  keptTokenUnchanged: keeper.token === lastGood,
  afterReuse,
  // Every access token the family issued, oldest first.
  familyTokens: await Promise.all(tokens.map(whoIs)),
  // The current refresh token (the server's answer to the first refreshCredentials) is dead too.
  currentRefreshToken: await outcome(() =>
    new ArcGISIdentityManager({
      clientId,
      portal,
      redirectUri,
      refreshToken: answeredRefreshToken,
    }).exchangeRefreshToken(),
  ),
};
takeCalls();

// c. application credentials (client_credentials)
const app = ApplicationCredentialsManager.fromCredentials({ clientId, clientSecret, portal });
before = Date.now();
const appToken = await app.getToken(`${portal}/portals/self`);
out.appCredentials = {
  before,
  after: Date.now(),
  tokenType: typeof appToken,
  duration: app.duration,
  expires: time(app.expires),
  calls: takeCalls(),
};
const portalSelf = (await request(`${portal}/portals/self`, { authentication: app })) as Record<string, unknown>;
out.appPortalSelf = { id: portalSelf.id, name: portalSelf.name, user: portalSelf.user ?? null, calls: takeCalls() };
try {
  await request(`${portal}/community/self`, { authentication: app });
  out.appCommunitySelf = "resolved";
} catch (err) {
  out.appCommunitySelf = {
    ...describe(err),
    status: (err as { response?: { error?: { code?: unknown } } }).response?.error?.code,
    calls: takeCalls(),
  };
}
// Asking for more than the organization allows (30 days) is clamped to its maximum.
const longApp = ApplicationCredentialsManager.fromCredentials({ clientId, clientSecret, portal, duration: 43_200 });
before = Date.now();
await longApp.getToken(`${portal}/portals/self`);
out.appClamped = { before, after: Date.now(), expires: time(longApp.expires) };
const wrong = ApplicationCredentialsManager.fromCredentials({ clientId, clientSecret: `${clientSecret}x`, portal });
out.appWrongSecret = await outcome(() => wrong.getToken(`${portal}/portals/self`));
takeCalls();

// d. revocation, on a second sign-in: the access token alone, then (signOut) the refresh token and its family.
const second = await ArcGISIdentityManager.exchangeAuthorizationCode({ clientId, redirectUri, portal }, input.codes[1]);
const revokedToken = second.token;
const whoBefore = await whoIs(revokedToken);
const revoked = await revokeToken({ portal, clientId, token: revokedToken });
const whoAfter = await whoIs(revokedToken);
const revokeCalls = takeCalls();
// The refresh token was not revoked: the client gets a new access token with it.
await second.exchangeRefreshToken();
const renewed = second.token;
const renewedWho = await whoIs(renewed);
const signOut = await second.signOut();
const afterSignOut = await outcome(() => second.exchangeRefreshToken());
out.revoke = {
  whoBefore,
  revoked,
  whoAfter,
  calls: revokeCalls,
  renewed: { newToken: renewed !== revokedToken, who: renewedWho },
  signOut,
  renewedAfterSignOut: await whoIs(renewed),
  exchangeAfterSignOut: afterSignOut,
  signOutCalls: takeCalls(),
};
// An app token can be revoked by its app too.
const appRevoked = await revokeToken({ portal, clientId, token: appToken });
out.revokeAppToken = { revoked: appRevoked, portalSelf: await portalSelfWith(appToken) };

process.stdout.write(`${JSON.stringify(out)}\n`);
