// Token figures, measured in-process through the real handlers and an in-memory dynalite:
// verification next to a bare HMAC-SHA256 of the same bytes, generateToken split into password hashing
// and the rest, unknown-user vs wrong-password latency, and DynamoDB requests per request.
import { createHmac, randomBytes } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { apiEvent, lambdaContext } from "../test/helpers/in-process.ts";
import { dynamoRequests } from "./requests.ts";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

export async function tokenBench(): Promise<void> {
  {
    const { bootstrapOrganization } = await import("#infra/admin/operations.ts");
    const { verifyPassword, hashPassword } = await import("#shared/auth/passwords.ts");
    const { issueToken, verifyToken } = await import("#shared/auth/tokens.ts");
    const generate = (await import("#functions/generate-token.ts")).handler;
    const self = (await import("#functions/community-self.ts")).handler;
    const portalSelf = (await import("#functions/portal-self.ts")).handler;
    const password = "bench-password-1";
    const { portal } = await bootstrapOrganization({ name: "Bench", admin: { username: "bench", password } });

    // 1. verification vs HMAC
    const { token } = await issueToken({
      username: "bench",
      portalId: portal.portalId,
      audience: { kind: "portal" },
      client: "requestip",
      bound: "192.0.2.10",
      expires: Date.now() + 3600_000,
    });
    const presented = { sourceIp: "192.0.2.10", referer: undefined, at: { kind: "portal" } as const };
    const N = 5000;
    for (let i = 0; i < 200; i++) await verifyToken(token, presented);
    let t = performance.now();
    for (let i = 0; i < N; i++) await verifyToken(token, presented);
    const verifyUs = ((performance.now() - t) / N) * 1000;
    const hmacKey = randomBytes(32);
    t = performance.now();
    for (let i = 0; i < N; i++) createHmac("sha256", hmacKey).update(token).digest();
    const hmacUs = ((performance.now() - t) / N) * 1000;
    console.log(`\nToken verification (${N} calls, ${token.length}-byte token)`);
    console.log(`  verifyToken (JWE dir+A256GCM, all claim checks)  ${verifyUs.toFixed(1)} µs/call`);
    console.log(`  bare HMAC-SHA256 of the same bytes               ${hmacUs.toFixed(1)} µs/call`);
    console.log(`  ratio                                            ${(verifyUs / hmacUs).toFixed(1)}×`);

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
  }
}
