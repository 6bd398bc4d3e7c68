// Token key rotation, in-process against the real key file reader: a warm function that loaded the old
// key accepts tokens from a new key once the secret names it, and old tokens keep working.
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { inProcessStore } from "./helpers/in-process.ts";

let dynamo: Awaited<ReturnType<typeof inProcessStore>>;
beforeAll(async () => {
  dynamo = await inProcessStore();
});
afterAll(async () => {
  vi.useRealTimers();
  await dynamo?.close();
});

it("rotates without invalidating issued tokens, and learns a new key id on first sight", async () => {
  const { issueToken, verifyToken } = await import("#shared/auth/tokens.ts");
  const file = process.env.TOKEN_KEY_FILE as string;
  const old = { kid: "t1", k: "a".repeat(43) };
  const claims = {
    username: "u",
    portalId: "p",
    audience: { kind: "portal" } as const,
    client: "requestip" as const,
    bound: "192.0.2.1",
    expires: Date.now() + 600_000,
  };
  const at = { sourceIp: "192.0.2.1", referer: undefined, at: { kind: "portal" } as const };
  const before = await issueToken(claims); // this warm "function" has loaded t1
  // Another function (or the operator) rotates: t2 is current, t1 still opens old tokens.
  writeFileSync(file, JSON.stringify({ kid: "t2", k: "b".repeat(43), previous: [old] }));
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.now() + 6_000);
  const { EncryptJWT } = await import("jose");
  const { hkdfSync } = await import("node:crypto");
  const k2 = new Uint8Array(hkdfSync("sha256", Buffer.from("b".repeat(43)), "mapgate-token", "A256GCM", 32));
  const fromNewKey = await new EncryptJWT({ org: "p", cli: "requestip", bnd: "192.0.2.1" })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: "t2" })
    .setIssuer("mapgate")
    .setSubject("u")
    .setAudience("portal")
    .setJti("n1")
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
    .encrypt(k2);
  await expect(verifyToken(fromNewKey, at)).resolves.toMatchObject({ username: "u" });
  await expect(verifyToken(before.token, at)).resolves.toMatchObject({ username: "u" });
  // New tokens now come from t2, and jose opens them with t2's key.
  const after = await issueToken({ ...claims, expires: Date.now() + 600_000 });
  expect(JSON.parse(Buffer.from(after.token.split(".")[0] ?? "", "base64url").toString()).kid).toBe("t2");
  const { jwtDecrypt } = await import("jose");
  const opened = await jwtDecrypt(after.token, k2, { issuer: "mapgate" });
  expect(opened.protectedHeader).toEqual({ alg: "dir", enc: "A256GCM", kid: "t2" });
  expect(opened.payload).toMatchObject({ sub: "u", jti: after.id });
});

it("reloads the secret for an unknown key id at most every 5 s, and a malformed token never does", async () => {
  // Continues from the rotation above: the Date is fake, and this function last loaded the secret just now.
  const { verifyToken } = await import("#shared/auth/tokens.ts");
  const { tokenKeys } = await import("#shared/auth/keys.ts");
  const { EncryptJWT } = await import("jose");
  const { hkdfSync } = await import("node:crypto");
  const file = process.env.TOKEN_KEY_FILE as string;
  const k3 = new Uint8Array(hkdfSync("sha256", Buffer.from("c".repeat(43)), "mapgate-token", "A256GCM", 32));
  const at = { sourceIp: "192.0.2.1", referer: undefined, at: { kind: "portal" } as const };
  const t3 = await new EncryptJWT({ org: "p", cli: "requestip", bnd: "192.0.2.1" })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: "t3" })
    .setIssuer("mapgate")
    .setSubject("u")
    .setAudience("portal")
    .setJti("n3")
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
    .encrypt(k3);
  writeFileSync(file, JSON.stringify({ kid: "t3", k: "c".repeat(43), previous: [{ kid: "t2", k: "b".repeat(43) }] }));
  // Within 5 s of the last load the unknown kid is refused without reading the secret again.
  const loaded = await tokenKeys();
  await expect(verifyToken(t3, at)).rejects.toMatchObject({ code: 498 });
  expect(await tokenKeys()).toBe(loaded);
  vi.setSystemTime(Date.now() + 6_000);
  // A token with an unknown kid but a header that is not exactly dir + A256GCM is refused before any reload.
  const zipped = `${Buffer.from(JSON.stringify({ alg: "dir", enc: "A256GCM", kid: "t3", zip: "DEF" })).toString("base64url")}.${t3.split(".").slice(1).join(".")}`;
  await expect(verifyToken(zipped, at)).rejects.toMatchObject({ code: 498 });
  expect(await tokenKeys()).toBe(loaded);
  // The well-formed one makes this function learn t3.
  await expect(verifyToken(t3, at)).resolves.toMatchObject({ username: "u", id: "n3" });
  expect(await tokenKeys()).not.toBe(loaded);
});
