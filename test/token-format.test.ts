// The token format, in-process: tokens issued with node:crypto are the compact JWE jose writes and reads
// (dir + A256GCM), tokens jose issued before the change still verify, and anything that is not exactly such a
// token (a changed part, another header, other sizes, loose base64url, bad claims) is the same 498.
import { createCipheriv, hkdfSync, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { deflateRawSync } from "node:zlib";
import { CompactEncrypt, compactDecrypt, EncryptJWT, jwtDecrypt, UnsecuredJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { NewToken, Presented, TokenClaims } from "#shared/auth/tokens.ts";
import { ApiError } from "#shared/errors.ts";
import { inProcessStore } from "./helpers/in-process.ts";

let dynamo: Awaited<ReturnType<typeof inProcessStore>>;
let tokens: typeof import("#shared/auth/tokens.ts");
beforeAll(async () => {
  dynamo = await inProcessStore(); // the key file names kid t1 with k = "a" × 43
  tokens = await import("#shared/auth/tokens.ts");
});
afterAll(async () => {
  await dynamo?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

// Derived here as keys.ts does, not read from it: jose opening a token then also proves the derivation.
const derive = (k: string) =>
  new Uint8Array(hkdfSync("sha256", Buffer.from(k, "utf8"), "mapgate-token", "A256GCM", 32));
const KID = "t1";
const KEY = derive("a".repeat(43));
const AT: Presented = { sourceIp: "192.0.2.1", referer: undefined, at: { kind: "portal" } };

/** The code before the change (jose's EncryptJWT), kept to prove its tokens keep working. */
async function legacyIssue(
  claims: NewToken,
  o: { kid?: string; key?: Uint8Array; id?: string; iv?: Uint8Array } = {},
): Promise<string> {
  const extra = {
    ...(claims.kind === "app" ? { knd: "app" } : {}),
    ...(claims.clientId ? { app: claims.clientId } : {}),
    ...(claims.family ? { fam: claims.family } : {}),
    ...(claims.parent ? { par: claims.parent } : {}),
  };
  const jwt = new EncryptJWT({ org: claims.portalId, cli: claims.client, bnd: claims.bound, ...extra })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: o.kid ?? KID })
    .setIssuer("mapgate")
    .setSubject(claims.username)
    .setAudience(claims.audience.kind === "portal" ? "portal" : `server:${claims.audience.serverId}`)
    .setJti(o.id ?? randomBytes(12).toString("base64url"))
    .setIssuedAt()
    .setExpirationTime(Math.ceil(claims.expires / 1000));
  if (o.iv) jwt.setInitializationVector(o.iv);
  return jwt.encrypt(o.key ?? KEY);
}

/** How the code before the change opened a token (before its own claim checks). */
const legacyOpen = (token: string, key = KEY) =>
  jwtDecrypt(token, key, {
    keyManagementAlgorithms: ["dir"],
    contentEncryptionAlgorithms: ["A256GCM"],
    issuer: "mapgate",
  });

const CLAIMS: Record<string, NewToken> = {
  "a requestip user token": {
    username: "u",
    portalId: "p",
    audience: { kind: "portal" },
    client: "requestip",
    bound: "192.0.2.1",
    expires: Date.now() + 600_000,
  },
  "an OAuth token (app, family, unicode username)": {
    username: "zoë ✓ 名前",
    portalId: "p",
    audience: { kind: "portal" },
    client: "none",
    bound: "",
    expires: Date.now() + 600_000,
    clientId: "appId123",
    family: "fam-1",
  },
  "an app token": {
    kind: "app",
    username: "appId123",
    portalId: "p",
    audience: { kind: "portal" },
    client: "none",
    bound: "",
    expires: Date.now() + 600_000,
    clientId: "appId123",
  },
  "a referer-bound server-token": {
    username: "u",
    portalId: "p",
    audience: { kind: "server", serverId: "srv1" },
    client: "referer",
    bound: "https://app.example.com",
    expires: Date.now() + 600_000,
    parent: "parent-jti",
  },
};
const presentedFor = (c: NewToken): Presented => ({
  sourceIp: c.bound || "192.0.2.1",
  referer: c.client === "referer" ? `${c.bound}/map` : undefined,
  at:
    c.audience.kind === "portal"
      ? { kind: "portal" }
      : { kind: "server", serverId: c.audience.serverId, portalId: "p" },
});
const expected = (c: NewToken) => ({
  kind: c.kind ?? "user",
  username: c.username,
  portalId: c.portalId,
  audience: c.audience,
  client: c.client,
  bound: c.bound,
  expires: Math.ceil(c.expires / 1000) * 1000,
  clientId: c.clientId,
  family: c.family,
  parent: c.parent,
});
const withoutIds = (c: TokenClaims) => ({ ...c, id: undefined, issued: undefined });

describe("interoperability with jose", () => {
  it("jose opens every token this code issues, with the key derived from the secret", async () => {
    for (const [label, c] of Object.entries(CLAIMS)) {
      const { token, id, expires } = await tokens.issueToken(c);
      const { protectedHeader, plaintext } = await compactDecrypt(token, KEY);
      expect(protectedHeader, label).toEqual({ alg: "dir", enc: "A256GCM", kid: KID });
      expect(JSON.parse(new TextDecoder().decode(plaintext)), label).toEqual((await legacyOpen(token)).payload);
      const { payload } = await legacyOpen(token);
      expect(payload, label).toMatchObject({ iss: "mapgate", sub: c.username, org: "p", jti: id });
      expect(payload.exp, label).toBe(expires / 1000);
      expect(await tokens.verifyToken(token, presentedFor(c)), label).toEqual({
        ...expected(c),
        id,
        issued: (payload.iat ?? 0) * 1000,
      });
    }
  });

  it("verifies tokens jose issued before the change, with the same claims", async () => {
    for (const [label, c] of Object.entries(CLAIMS)) {
      const old = await legacyIssue(c);
      const mine = await tokens.issueToken(c);
      const fromOld = await tokens.verifyToken(old, presentedFor(c));
      expect(withoutIds(fromOld), label).toEqual(withoutIds(await tokens.verifyToken(mine.token, presentedFor(c))));
      expect(withoutIds(fromOld), label).toEqual(expected(c));
    }
  });

  it("writes byte for byte the token jose wrote for the same claims, IV and second", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2031-05-06T07:08:09.500Z"));
    for (const [label, c] of Object.entries(CLAIMS)) {
      const { token, id } = await tokens.issueToken(c);
      const iv = Buffer.from(token.split(".")[2] ?? "", "base64url");
      expect(await legacyIssue(c, { id, iv }), label).toBe(token);
    }
  });

  it("accepts the header members in another order (the format is JSON, not a byte string)", async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new CompactEncrypt(Buffer.from(JSON.stringify(payload(now))))
      .setProtectedHeader({ kid: KID, enc: "A256GCM", alg: "dir" })
      .encrypt(KEY);
    await expect(tokens.verifyToken(token, AT)).resolves.toMatchObject({ username: "u" });
  });
});

/** Valid claims for AT, with `over` replacing (or, as undefined, removing) some. */
function payload(now: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    org: "p",
    cli: "requestip",
    bnd: "192.0.2.1",
    iss: "mapgate",
    sub: "u",
    aud: "portal",
    jti: "j1",
    iat: now,
    exp: now + 600,
    ...over,
  };
}

const b64 = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");

/**
 * A compact JWE sealed with node:crypto as given: the AAD is always the header as written, so a token
 * built here authenticates and only the check under test can refuse it.
 */
function seal(o: {
  header?: unknown;
  headerText?: string;
  claims?: unknown;
  plaintext?: Buffer;
  key?: Uint8Array;
  iv?: Buffer;
  tagBytes?: number;
}): string {
  const headerText =
    o.headerText ?? b64(JSON.stringify("header" in o ? o.header : { alg: "dir", enc: "A256GCM", kid: KID }));
  const iv = o.iv ?? randomBytes(12);
  const tagBytes = o.tagBytes ?? 16;
  const cipher = createCipheriv("aes-256-gcm", o.key ?? KEY, iv, { authTagLength: tagBytes });
  cipher.setAAD(Buffer.from(headerText, "ascii"));
  const plaintext =
    o.plaintext ?? Buffer.from(JSON.stringify("claims" in o ? o.claims : payload(Math.floor(Date.now() / 1000))));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [headerText, "", b64(iv), b64(ciphertext), b64(cipher.getAuthTag())].join(".");
}

async function refused(label: string, token: string, at = AT) {
  const error = await tokens.verifyToken(token, at).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, label).toBeInstanceOf(ApiError);
  const { code, message, details } = error as ApiError;
  expect({ code, message, details }, label).toEqual({
    code: 498,
    message: "Invalid token.",
    details: ["Invalid token."],
  });
}

/** A character of `text` at `i` replaced by another base64url character. */
const changeAt = (text: string, i: number) => `${text.slice(0, i)}${text[i] === "A" ? "B" : "A"}${text.slice(i + 1)}`;
const withPart = (token: string, index: number, part: string) =>
  token
    .split(".")
    .map((p, i) => (i === index ? part : p))
    .join(".");
/** Changes the last character's unused bits only: Buffer decodes the same bytes, the text is another. */
function looseTail(part: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const i = alphabet.indexOf(part.at(-1) ?? "");
  const spare = part.length % 4 === 2 ? 0x0f : 0x03;
  if (part.length % 4 === 0) throw new Error("no unused bits in this part");
  return `${part.slice(0, -1)}${alphabet[(i & ~spare) | 1]}`;
}

describe("refused, every one with the same 498", () => {
  it("a control: a token sealed here is accepted, so each refusal below is its one change", async () => {
    await expect(tokens.verifyToken(seal({}), AT)).resolves.toMatchObject({ username: "u", id: "j1" });
  });

  it("any change to any part, and a non-empty encrypted key", async () => {
    const { token } = await tokens.issueToken(CLAIMS["a requestip user token"] as NewToken);
    const parts = token.split(".");
    for (const index of [0, 2, 3, 4]) {
      const part = parts[index] ?? "";
      for (const i of [0, Math.floor(part.length / 2), part.length - 1]) {
        await refused(`part ${index} char ${i}`, withPart(token, index, changeAt(part, i)));
      }
    }
    await refused("encrypted key", withPart(token, 1, "AAAA"));
    await refused("parts swapped", [parts[0], "", parts[4], parts[3], parts[2]].join("."));
    // Whatever the content, a token must still be what it was: not a byte more or less.
    await refused("appended", `${token}A`);
    await refused("cut", token.slice(0, -1));
  });

  it("any header but exactly {alg: dir, enc: A256GCM, kid}", async () => {
    const base = { alg: "dir", enc: "A256GCM", kid: KID };
    const headers: Record<string, unknown> = {
      "alg none": { ...base, alg: "none" },
      "alg A256KW": { ...base, alg: "A256KW" },
      "alg Dir": { ...base, alg: "Dir" },
      "enc A128GCM": { ...base, enc: "A128GCM" },
      "enc A256CBC-HS512": { ...base, enc: "A256CBC-HS512" },
      "enc missing": { alg: "dir", kid: KID },
      zip: { ...base, zip: "DEF" },
      crit: { ...base, crit: ["exp"], exp: 0 },
      "crit empty": { ...base, crit: [] },
      typ: { ...base, typ: "JWT" },
      jku: { ...base, jku: "https://evil.example/keys" },
      "kid missing": { alg: "dir", enc: "A256GCM" },
      "kid a number": { ...base, kid: 1 },
      "kid empty": { ...base, kid: "" },
      "kid unknown": { ...base, kid: "t9" },
      "kid too long": { ...base, kid: "k".repeat(65) },
      "an array": [base],
      null: null,
      "a string": "dir",
    };
    for (const [label, header] of Object.entries(headers)) await refused(label, seal({ header }));
    await refused(
      "zip with deflated claims",
      seal({ header: headers.zip, plaintext: deflateRawSync(JSON.stringify(payload(Math.floor(Date.now() / 1000)))) }),
    );
    await refused("not JSON", seal({ headerText: b64("{alg:dir}") }));
    await refused("not UTF-8", seal({ headerText: b64(Buffer.from([0x7b, 0xff, 0x7d])) }));
    // jose-made tokens of other kinds
    const now = Math.floor(Date.now() / 1000);
    await refused("unsecured JWT", new UnsecuredJWT(payload(now)).encode());
    await refused(
      "jose, A128GCM with a 128-bit key",
      await new CompactEncrypt(Buffer.from(JSON.stringify(payload(now))))
        .setProtectedHeader({ alg: "dir", enc: "A128GCM", kid: KID })
        .encrypt(KEY.slice(0, 16)),
    );
  });

  it("another key under a known kid, and a token from before under a kid that is not known", async () => {
    await refused("other key", seal({ key: derive("b".repeat(43)) }));
    await refused(
      "old path, unknown kid",
      await legacyIssue(CLAIMS["a requestip user token"] as NewToken, { kid: "t9" }),
    );
  });

  it("an IV of other than 12 bytes, a tag of other than 16 (truncated GCM tags authenticate too)", async () => {
    await refused("iv 8 bytes", seal({ iv: randomBytes(8) }));
    await refused("iv 16 bytes", seal({ iv: randomBytes(16) }));
    await refused("tag 12 bytes (GCM-96)", seal({ tagBytes: 12 }));
    await refused("tag 4 bytes", seal({ tagBytes: 4 }));
    const token = seal({});
    const tag = Buffer.from(token.split(".")[4] ?? "", "base64url");
    await refused("tag truncated to 12", withPart(token, 4, b64(tag.subarray(0, 12))));
    await refused("tag truncated to 15", withPart(token, 4, b64(tag.subarray(0, 15))));
    await refused("tag with a byte more", withPart(token, 4, b64(Buffer.concat([tag, Buffer.from([0])]))));
  });

  it("base64url with padding, the other alphabet, other characters or loose trailing bits", async () => {
    // Find a token whose ciphertext spells both base64url-only characters and needs padding.
    let token = seal({});
    while (
      !/-/.test(token.split(".")[3] ?? "") ||
      !/_/.test(token.split(".")[3] ?? "") ||
      (token.split(".")[3] ?? "").length % 4 === 0
    ) {
      token = seal({ claims: payload(Math.floor(Date.now() / 1000), { jti: randomBytes(6).toString("hex") }) });
    }
    await expect(tokens.verifyToken(token, AT)).resolves.toBeTruthy();
    const [header = "", , iv = "", ciphertext = "", tag = ""] = token.split(".");
    const pad = (p: string) => p + "=".repeat((4 - (p.length % 4)) % 4 || 1);
    const changed: Record<string, string> = {
      "padded header": withPart(token, 0, pad(header)),
      "padded ciphertext": withPart(token, 3, pad(ciphertext)),
      "padded tag": withPart(token, 4, pad(tag)),
      "padded iv": withPart(token, 2, `${iv}=`),
      "+ for -": withPart(token, 3, ciphertext.replace("-", "+")),
      "/ for _": withPart(token, 3, ciphertext.replace("_", "/")),
      "standard alphabet throughout": withPart(token, 3, ciphertext.replaceAll("-", "+").replaceAll("_", "/")),
      "a space": withPart(token, 3, `${ciphertext.slice(0, 8)} ${ciphertext.slice(8)}`),
      "a newline": withPart(token, 3, `${ciphertext.slice(0, 8)}\n${ciphertext.slice(8)}`),
      "a !": withPart(token, 3, `${ciphertext.slice(0, 8)}!${ciphertext.slice(8)}`),
      "percent-encoded": withPart(token, 3, ciphertext.replace("-", "%2D")),
      "loose tail, ciphertext": withPart(token, 3, looseTail(ciphertext)),
      "loose tail, tag": withPart(token, 4, looseTail(tag)),
      "a length base64 cannot have": withPart(token, 3, ciphertext + "A".repeat((5 - (ciphertext.length % 4)) % 4)),
    };
    if (header.length % 4 !== 0) changed["loose tail, header"] = withPart(token, 0, looseTail(header));
    for (const [label, t] of Object.entries(changed)) await refused(label, t);
  });

  it("other than five parts, and an authentic token over 4096 characters", async () => {
    const token = seal({});
    for (const t of ["", "....", token.split(".").slice(0, 4).join("."), `${token}.`, `${token}.AAAA`, `.${token}`]) {
      await refused(JSON.stringify(t.slice(0, 20)), t);
    }
    const big = seal({ claims: payload(Math.floor(Date.now() / 1000), { pad: "x".repeat(3200) }) });
    expect(big.length).toBeGreaterThan(4096);
    await refused("too long", big);
  });

  it("authentic tokens whose claims fail: expiry, issuer, nbf, types, not a JSON object", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims: Record<string, unknown> = {
      expired: payload(now, { exp: now - 1 }),
      "expires this second": payload(now, { exp: now }),
      "exp a string": payload(now, { exp: String(now + 600) }),
      "exp missing": payload(now, { exp: undefined }),
      "nbf ahead": payload(now, { nbf: now + 60 }),
      "nbf a string": payload(now, { nbf: "0" }),
      "issuer other": payload(now, { iss: "elsewhere" }),
      "issuer missing": payload(now, { iss: undefined }),
      "iat missing": payload(now, { iat: undefined }),
      "aud an array": payload(now, { aud: ["portal"] }),
      "cli unknown": payload(now, { cli: "cookie" }),
      "knd other": payload(now, { knd: "admin" }),
      "an array": [payload(now)],
      "a string": "token",
      null: null,
    };
    for (const [label, c] of Object.entries(claims)) await refused(label, seal({ claims: c }));
    await refused("not JSON", seal({ plaintext: Buffer.from("{sub:u}") }));
    await refused("not UTF-8", seal({ plaintext: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]) }));
    await expect(tokens.verifyToken(seal({ claims: payload(now, { nbf: now }) }), AT)).resolves.toBeTruthy();
  });
});

describe("opened tokens: decryption is remembered, every check on state is not", () => {
  const user = CLAIMS["a requestip user token"] as NewToken;

  it("opens a token presented again from memory, with the same claims", async () => {
    tokens.forgetOpenedTokens();
    const { token } = await tokens.issueToken(user);
    const first = await tokens.verifyToken(token, presentedFor(user));
    expect(tokens.openedTokenCount()).toBe(1);
    await expect(tokens.verifyToken(token, presentedFor(user))).resolves.toEqual(first);
    expect(tokens.openedTokenCount()).toBe(1);
  });

  it("still refuses an opened token once it expires, and from another address or audience", async () => {
    tokens.forgetOpenedTokens();
    const { token, expires } = await tokens.issueToken(user);
    await tokens.verifyToken(token, presentedFor(user));
    expect(tokens.openedTokenCount()).toBe(1);
    await expect(tokens.verifyToken(token, presentedFor(user), expires)).rejects.toMatchObject({ code: 498 });
    await refused("another address", token, { ...presentedFor(user), sourceIp: "192.0.2.2" });
    await refused("another organization's server", token, {
      ...presentedFor(user),
      at: { kind: "server", serverId: "srv1", portalId: "other" },
    });
    // And it opens again where it holds.
    await expect(tokens.verifyToken(token, presentedFor(user))).resolves.toMatchObject({ username: "u" });
  });

  it("never keeps a token that does not open: a changed one, one under another key, an unknown kid", async () => {
    tokens.forgetOpenedTokens();
    const { token } = await tokens.issueToken(user);
    const parts = token.split(".");
    const changed = withPart(token, 3, changeAt(parts[3] ?? "", 0));
    for (let i = 0; i < 2; i++) await refused("changed", changed);
    await refused("another key", seal({ key: derive("b".repeat(43)) }));
    await refused("unknown kid", seal({ header: { alg: "dir", enc: "A256GCM", kid: "t9" } }));
    expect(tokens.openedTokenCount()).toBe(0);
    // The authentic one, presented after its tampered twin, opens and is the only one kept.
    await tokens.verifyToken(token, presentedFor(user));
    expect(tokens.openedTokenCount()).toBe(1);
  });

  it("keeps at most OPENED_TOKENS_MAX tokens, the least recently presented leaving first", async () => {
    tokens.forgetOpenedTokens();
    const { token: kept } = await tokens.issueToken(user);
    await tokens.verifyToken(kept, presentedFor(user));
    const { token: first } = await tokens.issueToken(user);
    await tokens.verifyToken(first, presentedFor(user));
    for (let i = 0; i < tokens.OPENED_TOKENS_MAX + 10; i++) {
      const { token } = await tokens.issueToken(user);
      await tokens.verifyToken(token, presentedFor(user));
      // Presented again every so often, so it stays among the most recent.
      if (i % 100 === 0) await tokens.verifyToken(kept, presentedFor(user));
    }
    expect(tokens.openedTokenCount()).toBe(tokens.OPENED_TOKENS_MAX);
    expect(tokens.isTokenOpened(kept)).toBe(true);
    expect(tokens.isTokenOpened(first)).toBe(false);
    // A token that left is opened again, like any other, when presented again.
    await expect(tokens.verifyToken(first, presentedFor(user))).resolves.toMatchObject({ username: "u" });
    expect(tokens.isTokenOpened(first)).toBe(true);
  });

  it("never serves an opened token after a rotation gives its key id another key", async () => {
    const keyFile = process.env.TOKEN_KEY_FILE as string;
    const original = readFileSync(keyFile, "utf8");
    tokens.forgetOpenedTokens();
    const { token } = await tokens.issueToken(user);
    await tokens.verifyToken(token, presentedFor(user));
    expect(tokens.isTokenOpened(token)).toBe(true);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      // t1 now names another key; the set is reloaded by the first token under a key id this function has not seen.
      writeFileSync(
        keyFile,
        JSON.stringify({ kid: "t2", k: "c".repeat(43), previous: [{ kid: "t1", k: "b".repeat(43) }] }),
      );
      vi.setSystemTime(Date.now() + 10_000);
      const t2 = seal({ header: { alg: "dir", enc: "A256GCM", kid: "t2" }, key: derive("c".repeat(43)) });
      await expect(tokens.verifyToken(t2, AT)).resolves.toMatchObject({ username: "u" });
      await refused("the opened token, its key id now another key's", token, presentedFor(user));
      expect(tokens.isTokenOpened(token)).toBe(false);
      // What t1 names now opens its own tokens.
      const underNewT1 = seal({ key: derive("b".repeat(43)) });
      await expect(tokens.verifyToken(underNewT1, AT)).resolves.toMatchObject({ username: "u" });
    } finally {
      // The original key back, reloaded the same way.
      writeFileSync(keyFile, original);
      vi.setSystemTime(Date.now() + 10_000);
      await refused(
        "an unknown key id (reloads the key set)",
        seal({ header: { alg: "dir", enc: "A256GCM", kid: "t9" } }),
      );
      vi.useRealTimers();
    }
    await expect(tokens.verifyToken(token, presentedFor(user))).resolves.toMatchObject({ username: "u" });
  });
});
