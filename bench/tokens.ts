// Token figures, measured in-process through the real handlers and an in-memory dynalite:
// verification next to a bare HMAC-SHA256 of the same bytes, generateToken split into password hashing
// and the rest, unknown-user vs wrong-password latency, DynamoDB requests per request, and OAuth 2.0 tokens
// (issued by the token endpoint, verified, carried by a request) next to generateToken ones.
import { createHmac, randomBytes } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { Presented } from "#shared/auth/tokens.ts";
import { apiEvent, EVENT_SOURCE_IP, eventCallerToken, lambdaContext } from "../test/helpers/in-process.ts";
import { dynamoRequests } from "./requests.ts";
import { median } from "./stats.ts";

export async function tokenBench(): Promise<void> {
  {
    const { bootstrapOrganization } = await import("#infra/admin/operations.ts");
    const { verifyPassword, hashPassword } = await import("#shared/auth/passwords.ts");
    const { forgetOpenedTokens, verifyToken } = await import("#shared/auth/tokens.ts");
    const generate = (await import("#functions/generate-token.ts")).handler;
    const self = (await import("#functions/community-self.ts")).handler;
    const portalSelf = (await import("#functions/portal-self.ts")).handler;
    const password = "bench-password-1";
    const { portal } = await bootstrapOrganization({ name: "Bench", admin: { username: "bench", password } });

    // 1. verification vs HMAC
    const token = await eventCallerToken("bench", portal.portalId);
    const presented = { sourceIp: EVENT_SOURCE_IP, referer: undefined, at: { kind: "portal" } as const };
    const N = 5000;
    // A token's first verification opens it (parse and decrypt); later ones under the same key take its claims
    // from the opened tokens (shared/auth/tokens.ts) and run only the checks. Both are measured: the first against
    // the HMAC, as every token meets it once per warm function.
    const opening = async () => {
      forgetOpenedTokens();
      await verifyToken(token, presented);
    };
    for (let i = 0; i < 200; i++) await opening();
    let t = performance.now();
    for (let i = 0; i < N; i++) await opening();
    const verifyUs = ((performance.now() - t) / N) * 1000;
    for (let i = 0; i < 200; i++) await verifyToken(token, presented);
    t = performance.now();
    for (let i = 0; i < N; i++) await verifyToken(token, presented);
    const openedUs = ((performance.now() - t) / N) * 1000;
    const hmacKey = randomBytes(32);
    t = performance.now();
    for (let i = 0; i < N; i++) createHmac("sha256", hmacKey).update(token).digest();
    const hmacUs = ((performance.now() - t) / N) * 1000;
    console.log(`\nToken verification (${N} calls, ${token.length}-byte token)`);
    console.log(`  verifyToken, first use (JWE dir+A256GCM, all claim checks)  ${verifyUs.toFixed(1)} µs/call`);
    console.log(`  verifyToken, opened before (all claim checks)              ${openedUs.toFixed(1)} µs/call`);
    console.log(`  bare HMAC-SHA256 of the same bytes                          ${hmacUs.toFixed(1)} µs/call`);
    console.log(`  ratio (first use / HMAC)                                    ${(verifyUs / hmacUs).toFixed(1)}×`);

    // 2. generateToken: scrypt vs everything else
    const body = (user: string, pw: string) => `f=json&username=${user}&password=${pw}&client=requestip`;
    const runs = 15;
    const totals: number[] = [];
    const hashes: number[] = [];
    const stored = await hashPassword(password);
    for (let i = 0; i < runs; i++) {
      t = performance.now();
      const r = (await generate(
        apiEvent("/portal/sharing/rest/generateToken", { body: body("bench", password) }),
        lambdaContext(),
      )) as APIGatewayProxyStructuredResultV2;
      totals.push(performance.now() - t);
      if (!r.body?.includes('"token"')) throw new Error(r.body);
      t = performance.now();
      await verifyPassword(password, stored);
      hashes.push(performance.now() - t);
    }
    const total = median(totals);
    const hash = median(hashes);
    console.log(`\ngenerateToken latency, median of ${runs} (in-process, in-memory dynalite)`);
    console.log(
      `  whole request ${total.toFixed(1)} ms = scrypt ${hash.toFixed(1)} ms + everything else ${(total - hash).toFixed(1)} ms`,
    );

    // 3. unknown user vs wrong password (the lockout window is reset by a success between rounds)
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 4; i++) {
      t = performance.now();
      await generate(apiEvent("/portal/sharing/rest/generateToken", { body: body("bench", "nope") }), lambdaContext());
      wrong.push(performance.now() - t);
      t = performance.now();
      await generate(
        apiEvent("/portal/sharing/rest/generateToken", { body: body(`ghost${i}`, "nope") }),
        lambdaContext(),
      );
      unknown.push(performance.now() - t);
    }
    console.log(
      `  wrong password ${median(wrong).toFixed(1)} ms vs unknown user ${median(unknown).toFixed(1)} ms (ratio ${(median(unknown) / median(wrong)).toFixed(2)})`,
    );

    // 4. DynamoDB requests per request
    const count = async (fn: () => Promise<unknown>) => {
      const before = dynamoRequests();
      await fn();
      return dynamoRequests() - before;
    };
    const auth = { headers: { authorization: `Bearer ${token}` } };
    await self(apiEvent("/portal/sharing/rest/community/self", { query: "f=json", ...auth }), lambdaContext());
    const perAuth = await count(() =>
      self(apiEvent("/portal/sharing/rest/community/self", { query: "f=json", ...auth }), lambdaContext()),
    );
    const perAnon = await count(() =>
      portalSelf(apiEvent("/portal/sharing/rest/portals/self", { query: "f=json" }), lambdaContext()),
    );
    const perSignIn = await count(() =>
      generate(apiEvent("/portal/sharing/rest/generateToken", { body: body("bench", password) }), lambdaContext()),
    );
    console.log("\nDynamoDB requests per request (warm function)");
    console.log(`  authenticated (community/self)  ${perAuth}  (one BatchGetItem: user, organization, revocation)`);
    console.log(`  anonymous (portals/self)        ${perAnon}`);
    console.log(`  generateToken                   ${perSignIn}  (organization, lock check, user, clear failures)`);

    // 5. OAuth 2.0 tokens next to generateToken ones: issuing, verifying, and a request carrying each.
    await oauthBench({ portalId: portal.portalId, userToken: token, presented, generateMs: total, scryptMs: hash });
  }
}

/** Microseconds per call of `fn`, over `n` calls in a row. */
async function perCallUs(fn: () => Promise<unknown>, n: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return ((performance.now() - t) / n) * 1000;
}

/** Medians of per-call times of `a` and `b`, measured in alternating blocks so drift hits both alike. */
async function sideBySide(a: () => Promise<unknown>, b: () => Promise<unknown>, blocks: number, n: number) {
  const as: number[] = [];
  const bs: number[] = [];
  for (let i = 0; i < blocks; i++) {
    as.push(await perCallUs(a, n));
    bs.push(await perCallUs(b, n));
  }
  return { a: median(as), b: median(bs) };
}

async function oauthBench(base: {
  portalId: string;
  /** A requestip-bound token as generateToken issues it. */
  userToken: string;
  presented: Presented;
  /** generateToken's median latency (ms) measured above, and the scrypt part of it. */
  generateMs: number;
  scryptMs: number;
}): Promise<void> {
  const { registerApp } = await import("#shared/stores/apps.ts");
  const { createFamily } = await import("#shared/stores/oauth.ts");
  const { forgetOpenedTokens, verifyToken } = await import("#shared/auth/tokens.ts");
  // Each verification opens its token, as the first use in a warm function does (not the opened tokens' lookup).
  const opening = async (token: string, presented: Presented) => {
    forgetOpenedTokens();
    return verifyToken(token, presented);
  };
  const tokenEndpoint = (await import("#functions/oauth-token.ts")).handler;
  const self = (await import("#functions/community-self.ts")).handler;
  const { app, clientSecret } = await registerApp({
    portalId: base.portalId,
    name: "Bench server app",
    appType: "server",
    redirectUris: ["https://bench.example.test/cb"],
    exchangeWithoutSecret: false,
    owner: "bench",
  });
  if (!clientSecret) throw new Error("a server app has a secret");
  const grant = async (fields: Record<string, string>) => {
    const r = (await tokenEndpoint(
      apiEvent("/portal/sharing/rest/oauth2/token", { body: new URLSearchParams(fields).toString() }),
      lambdaContext(),
    )) as APIGatewayProxyStructuredResultV2;
    const answer = JSON.parse(r.body ?? "{}") as { access_token?: string; refresh_token?: string };
    if (r.statusCode !== 200 || !answer.access_token) throw new Error(`token endpoint: ${r.statusCode} ${r.body}`);
    return answer;
  };
  const clientCredentials = () =>
    grant({ grant_type: "client_credentials", client_id: app.clientId, client_secret: clientSecret });
  // A refresh family as an authorization code starts it; every refresh rotates it, and the next uses the new one.
  let refreshToken = await createFamily({
    id: randomBytes(16).toString("base64url"),
    clientId: app.clientId,
    username: "bench",
    portalId: base.portalId,
    generation: 0,
    expires: Date.now() + 14 * 24 * 3600_000,
  });
  let oauthToken = "";
  const refresh = async () => {
    const answer = await grant({
      grant_type: "refresh_token",
      client_id: app.clientId,
      client_secret: clientSecret,
      refresh_token: refreshToken,
    });
    if (!answer.refresh_token) throw new Error("no refresh_token");
    refreshToken = answer.refresh_token;
    oauthToken = answer.access_token ?? "";
  };

  // Issuing: the token endpoint's two cheapest grants, per call, next to generateToken's whole request and
  // generateToken without its scrypt (the part an OAuth grant does not have).
  for (let i = 0; i < 20; i++) {
    await clientCredentials();
    await refresh();
  }
  const issue = await sideBySide(clientCredentials, refresh, 10, 30);
  const issueMs = { cc: issue.a / 1000, rt: issue.b / 1000 };
  const withoutScrypt = base.generateMs - base.scryptMs;
  console.log(
    `\nOAuth token endpoint (handler in-process), medians of 10 blocks × 30 calls, next to generateToken above`,
  );
  console.log(`${"".padEnd(40)}${"ms".padStart(7)}${"× generateToken".padStart(17)}${"× without scrypt".padStart(18)}`);
  const issueLine = (label: string, ms: number) =>
    console.log(
      `${label.padEnd(40)}${ms.toFixed(2).padStart(7)}${(ms / base.generateMs).toFixed(3).padStart(17)}${(ms / withoutScrypt).toFixed(2).padStart(18)}`,
    );
  issueLine("  generateToken (scrypt)", base.generateMs);
  issueLine("  client_credentials (SHA-256 secret)", issueMs.cc);
  issueLine("  refresh_token (rotation)", issueMs.rt);

  // Verification: an OAuth access token (unbound, names its app and family) vs a generateToken one (requestip).
  await refresh();
  const oauth = oauthToken;
  const N = 5000;
  for (let i = 0; i < 200; i++) {
    await opening(oauth, base.presented);
    await opening(base.userToken, base.presented);
  }
  const verify = await sideBySide(
    () => opening(oauth, base.presented),
    () => opening(base.userToken, base.presented),
    10,
    N / 10,
  );
  console.log(
    `\nVerification, OAuth vs generateToken token (verifyToken, first use, medians of 10 blocks × ${N / 10} calls)`,
  );
  const row = (label: string, value: string) => console.log(`  ${label.padEnd(54)}${value}`);
  row(`OAuth (client none, app + family claims, ${oauth.length} bytes)`, `${verify.a.toFixed(1)} µs/call`);
  row(`generateToken (requestip, ${base.userToken.length} bytes)`, `${verify.b.toFixed(1)} µs/call`);
  row("ratio (OAuth / generateToken)", `${(verify.a / verify.b).toFixed(2)}×`);

  // A whole authenticated request (community/self) carrying each token.
  const selfWith = (t: string) => async () => {
    const r = (await self(
      apiEvent("/portal/sharing/rest/community/self", {
        query: "f=json",
        headers: { authorization: `Bearer ${t}` },
      }),
      lambdaContext(),
    )) as APIGatewayProxyStructuredResultV2;
    if (r.statusCode !== 200 || r.body?.includes('"error"')) throw new Error(`community/self: ${r.body}`);
  };
  for (let i = 0; i < 50; i++) {
    await selfWith(oauth)();
    await selfWith(base.userToken)();
  }
  const full = await sideBySide(selfWith(oauth), selfWith(base.userToken), 10, 50);
  const count = async (fn: () => Promise<unknown>) => {
    const before = dynamoRequests();
    await fn();
    return dynamoRequests() - before;
  };
  const perOAuth = await count(selfWith(oauth));
  const perGenerate = await count(selfWith(base.userToken));
  console.log(`\nAuthenticated request (community/self handler), medians of 10 blocks × 50 requests`);
  const requestRow = (label: string, us: number, requests: number, read: string) =>
    row(label, `${(us / 1000).toFixed(2)} ms  (${requests} DynamoDB request: ${read})`);
  requestRow("with an OAuth token", full.a, perOAuth, "user, app, organization, token and family revocations");
  requestRow("with a generateToken token", full.b, perGenerate, "user, organization, token revocation");
  row("ratio (OAuth / generateToken)", `${(full.a / full.b).toFixed(2)}×`);

  const perCc = await count(clientCredentials);
  const perRt = await count(refresh);
  console.log("\nDynamoDB requests per OAuth token request (warm function)");
  // The pipeline reads the organization the request is addressed to; the app's is that one (no second read).
  console.log(`  client_credentials  ${perCc}  (organization, app)`);
  console.log(`  refresh_token       ${perRt}  (organization, app, family read, conditional rotation write, user)`);
}
