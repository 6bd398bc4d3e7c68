// Tokens are encrypted JWTs, compact JWE `dir` + `A256GCM` (RFC 7516): a token says nothing to whoever holds
// it, and any change to it fails decryption. The format is standard (jose or any JOSE library opens a token
// with the key), but the code is node:crypto alone: jose's WebCrypto path cost ~6× an HMAC per verification.
// Verification order: structure (exact header, sizes, canonical base64url, known key id) → decryption →
// claims (issuer, expiry) → client binding → audience. Revocation and the user's current state are checked by
// the caller.
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { keyFor, tokenKeys } from "#shared/auth/keys.ts";
import { invalidToken } from "#shared/errors.ts";

/** Bindings a generateToken caller may ask for. */
export const CLIENTS = ["referer", "ip", "requestip"] as const;
/**
 * `none` is an unbound bearer token: issued only by OAuth 2.0 and the sign-in page, whose tokens travel in
 * places (an app's server, a cookie) where the requester's address or referer says nothing useful.
 */
export type ClientKind = (typeof CLIENTS)[number] | "none";
const BINDINGS: readonly string[] = [...CLIENTS, "none"];

/** A portal token is good at the portal and its hosted servers; a server-token only at its server. */
export type Audience = { readonly kind: "portal" } | { readonly kind: "server"; readonly serverId: string };

export interface TokenClaims {
  /** A user's token, or an application's own token (OAuth client credentials: no user behind it). */
  readonly kind: "user" | "app";
  /** The user's name; for an app token, the application's client id. */
  readonly username: string;
  readonly portalId: string;
  readonly audience: Audience;
  /** What the token is bound to: a referer (prefix), or an IP address. */
  readonly client: ClientKind;
  readonly bound: string;
  readonly expires: number;
  readonly issued: number;
  readonly id: string;
  /** The OAuth application the token was issued to. */
  readonly clientId?: string | undefined;
  /** The refresh-token family it came from: revoking the family revokes the token. */
  readonly family?: string | undefined;
  /** The token this one was exchanged for (a server-token): revoking that one revokes this one too. */
  readonly parent?: string | undefined;
  /** The user's token generation at issue (0 when absent): a password reset raises it and ends older tokens. */
  readonly generation?: number | undefined;
}

export type NewToken = Omit<TokenClaims, "id" | "issued" | "kind"> & { readonly kind?: TokenClaims["kind"] };

const MAX_TOKEN_LENGTH = 4096;
const ISSUER = "mapgate";
/** A256GCM: a 96-bit IV and a 128-bit tag, which are 16 and 22 base64url characters. */
const IV_CHARS = 16;
const TAG_BYTES = 16;
const TAG_CHARS = 22;
const MAX_KID_LENGTH = 64;

const audienceClaim = (a: Audience) => (a.kind === "portal" ? "portal" : `server:${a.serverId}`);

// Importing raw key bytes costs several times the decryption itself (createDecipheriv with a Uint8Array
// imports it on every call): import each key once.
// A cache of keys, never of verdicts (see `Opened` for the opened tokens); a reloaded key
// set brings new Uint8Arrays and the old entries go with them.
const secretKeys = new WeakMap<Uint8Array, KeyObject>();
function secretKey(key: Uint8Array): KeyObject {
  let k = secretKeys.get(key);
  if (!k) {
    k = createSecretKey(key);
    secretKeys.set(key, k);
  }
  return k;
}

/** The protected header byte for byte as jose wrote it (members in this order), so the format does not drift. */
const protectedHeader = (kid: string) =>
  Buffer.from(JSON.stringify({ alg: "dir", enc: "A256GCM", kid }), "utf8").toString("base64url");

/** Issues a token; `expires` comes back rounded up to the whole second the token carries. */
export async function issueToken(claims: NewToken): Promise<{ token: string; id: string; expires: number }> {
  const { current } = await tokenKeys();
  const id = randomBytes(12).toString("base64url");
  const exp = Math.ceil(claims.expires / 1000);
  const payload = {
    org: claims.portalId,
    cli: claims.client,
    bnd: claims.bound,
    ...(claims.kind === "app" ? { knd: "app" } : {}),
    ...(claims.clientId ? { app: claims.clientId } : {}),
    ...(claims.family ? { fam: claims.family } : {}),
    ...(claims.parent ? { par: claims.parent } : {}),
    ...(claims.generation ? { gen: claims.generation } : {}),
    iss: ISSUER,
    sub: claims.username,
    aud: audienceClaim(claims.audience),
    jti: id,
    iat: Math.floor(Date.now() / 1000),
    exp,
  };
  const header = protectedHeader(current.kid);
  // A random 96-bit IV per token, as jose does: sound for up to 2^32 tokens per key (NIST SP 800-38D).
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", secretKey(current.key), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(header, "ascii"));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  const token = `${header}..${iv.toString("base64url")}.${ciphertext.toString("base64url")}.${tag.toString("base64url")}`;
  return { token, id, expires: exp * 1000 };
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes base64url only in its one canonical spelling: no padding, no other characters (Buffer would skip
 * them), no length that cannot be base64, and zero unused bits in the last character (Buffer would ignore
 * them). So any change to a token's text, not just to its bytes, makes it another, refused, token.
 */
function canonicalBase64url(text: string): Buffer | undefined {
  const rest = text.length % 4;
  if (rest === 1 || !BASE64URL.test(text)) return undefined;
  if (rest !== 0 && (ALPHABET.indexOf(text.charAt(text.length - 1)) & (rest === 2 ? 0x0f : 0x03)) !== 0) {
    return undefined;
  }
  return Buffer.from(text, "base64url");
}

function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  const value: unknown = JSON.parse(strictUtf8.decode(bytes));
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The key id of a protected header that is exactly `{alg: "dir", enc: "A256GCM", kid}`: any other member
 * (`zip`, `crit`, `typ`, an `epk`…) or algorithm is refused rather than understood.
 */
function headerKid(bytes: Buffer): string | undefined {
  let header: Record<string, unknown> | undefined;
  try {
    header = jsonObject(bytes);
  } catch {
    return undefined;
  }
  if (!header || Object.keys(header).length !== 3 || header.alg !== "dir" || header.enc !== "A256GCM") {
    return undefined;
  }
  const { kid } = header;
  return typeof kid === "string" && kid !== "" && kid.length <= MAX_KID_LENGTH ? kid : undefined;
}

interface Compact {
  /** The protected header as sent: its ASCII is the AAD, so the tag covers it byte for byte. */
  readonly aad: Buffer;
  readonly kid: string;
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
  readonly tag: Buffer;
}

/** The five parts of a compact JWE as this service issues them, or undefined for anything else. */
function parseCompact(token: string): Compact | undefined {
  if (token.length > MAX_TOKEN_LENGTH) return undefined;
  // protected header . encrypted key (empty for `dir`) . IV . ciphertext . tag
  const [protectedText = "", encryptedKey, ivText = "", ciphertextText = "", tagText = "", extra] = token.split(".", 6);
  if (encryptedKey !== "" || extra !== undefined || ivText.length !== IV_CHARS || tagText.length !== TAG_CHARS) {
    return undefined;
  }
  const header = canonicalBase64url(protectedText);
  const iv = canonicalBase64url(ivText);
  const ciphertext = canonicalBase64url(ciphertextText);
  const tag = canonicalBase64url(tagText);
  if (!header || !iv || !ciphertext || !tag) return undefined;
  const kid = headerKid(header);
  if (kid === undefined) return undefined;
  return { aad: Buffer.from(protectedText, "ascii"), kid, iv, ciphertext, tag };
}

/** The claims of an authentic token (its tag checked against the key and the header), or undefined. */
function decrypt(jwe: Compact, key: Uint8Array): Record<string, unknown> | undefined {
  try {
    const decipher = createDecipheriv("aes-256-gcm", secretKey(key), jwe.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(jwe.aad);
    decipher.setAuthTag(jwe.tag);
    // update() hands out plaintext before the tag is checked: nothing reads it unless final() succeeds.
    const plaintext = decipher.update(jwe.ciphertext);
    decipher.final();
    return jsonObject(plaintext);
  } catch {
    return undefined;
  }
}

/** One spelling per address (`0:0:0:0:0:0:0:1` is `::1`), so bindings compare addresses, not text. */
export function canonicalIp(ip: string): string {
  const version = isIP(ip);
  if (version === 6) return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  return ip;
}

/** How a bound referer matches the request's Referer: the same value, or a URL under it. */
export function refererMatches(bound: string, referer: string | undefined): boolean {
  if (!referer) return false;
  if (referer === bound) return true;
  if (!referer.startsWith(bound)) return false;
  const next = referer.charAt(bound.length);
  return bound.endsWith("/") || next === "/" || next === "?" || next === "#";
}

export interface Presented {
  readonly sourceIp: string;
  readonly referer: string | undefined;
  /** Where the token is used: the portal, or a hosted server (with the portal that owns it). */
  readonly at:
    { readonly kind: "portal" } | { readonly kind: "server"; readonly serverId: string; readonly portalId: string };
}

/**
 * What decryption made of a token: its claims are a function of the token's bytes and the key alone, so a token
 * presented again under the same key need not be parsed and decrypted again. Nothing that can change is kept:
 * expiry, the client binding and the audience are checked on every request below, and revocation, the user's
 * token generation and the caller's state by the caller, from the store. Only a token that decrypted enters (a
 * tampered one fails its tag first), and an entry holds only for the very key object that opened it: a reloaded
 * key set (a rotation) brings new keys, so no entry of the old set is used again.
 */
interface Opened {
  readonly kid: string;
  readonly key: Uint8Array;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** At most this many tokens (a token is at most 4 KiB: 4 MB at worst), least recently presented first out. */
export const OPENED_TOKENS_MAX = 1000;
const opened = new Map<string, Opened>();

/** Forgets every opened token (tests). */
export function forgetOpenedTokens(): void {
  opened.clear();
}

/** The number of opened tokens kept, and whether one is (tests). */
export const openedTokenCount = (): number => opened.size;
export const isTokenOpened = (token: string): boolean => opened.has(token);

/** The token's decrypted claims, from the cache when the same key opened it before; undefined if not authentic. */
async function openToken(token: string): Promise<Readonly<Record<string, unknown>> | undefined> {
  const hit = opened.get(token);
  if (hit) {
    // The key set may have been reloaded since: the entry holds only if the key id still names the same key.
    const key = await keyFor(hit.kid);
    if (key === hit.key) {
      // Most recently used last: a Map iterates in insertion order, so the first key is the one to evict.
      opened.delete(token);
      opened.set(token, hit);
      return hit.payload;
    }
    opened.delete(token);
    if (!key) return undefined;
  }
  const jwe = parseCompact(token);
  if (!jwe) return undefined;
  // After every structural check, so only a well-formed token can make a function reload the secret. Not
  // inside a try: a key that cannot be loaded is our fault (500), not the caller's token.
  const key = await keyFor(jwe.kid);
  if (!key) return undefined;
  const payload = decrypt(jwe, key);
  if (!payload) return undefined;
  opened.set(token, { kid: jwe.kid, key, payload: Object.freeze(payload) });
  if (opened.size > OPENED_TOKENS_MAX) {
    const oldest = opened.keys().next().value;
    if (oldest !== undefined) opened.delete(oldest);
  }
  return payload;
}

/** Opens and checks a token; every failure is the same 498, so nothing is learned from which check failed. */
export async function verifyToken(token: string, presented: Presented, now = Date.now()): Promise<TokenClaims> {
  const payload = await openToken(token);
  if (!payload) throw invalidToken();
  // The registered claims jose checked before: the issuer, and a `nbf` (never issued, honoured if present).
  const nbf = payload.nbf;
  if (payload.iss !== ISSUER || (nbf !== undefined && (typeof nbf !== "number" || nbf * 1000 > now))) {
    throw invalidToken();
  }
  const { sub, org, cli, bnd, aud, exp, iat, jti, knd, app, fam, par, gen } = payload;
  if (
    typeof sub !== "string" ||
    typeof org !== "string" ||
    typeof bnd !== "string" ||
    typeof aud !== "string" ||
    typeof exp !== "number" ||
    typeof iat !== "number" ||
    typeof jti !== "string" ||
    !BINDINGS.includes(cli as string) ||
    (knd !== undefined && knd !== "app") ||
    (app !== undefined && typeof app !== "string") ||
    (fam !== undefined && typeof fam !== "string") ||
    (par !== undefined && typeof par !== "string") ||
    (gen !== undefined && (!Number.isSafeInteger(gen) || (gen as number) < 1))
  ) {
    throw invalidToken();
  }
  // Expiry on read, whatever a TTL did: never trust deletion to have happened.
  const expires = exp * 1000;
  if (expires <= now) throw invalidToken();
  const client = cli as ClientKind;
  const bindingHolds =
    client === "none" ||
    (client === "referer" ? refererMatches(bnd, presented.referer) : bnd === canonicalIp(presented.sourceIp));
  if (!bindingHolds) throw invalidToken();
  const audience: Audience =
    aud === "portal" ? { kind: "portal" } : { kind: "server", serverId: aud.slice("server:".length) };
  if (audience.kind === "server" && !aud.startsWith("server:")) throw invalidToken();
  const at = presented.at;
  const fits =
    at.kind === "portal"
      ? audience.kind === "portal"
      : audience.kind === "portal"
        ? org === at.portalId
        : audience.serverId === at.serverId;
  if (!fits) throw invalidToken();
  return {
    kind: knd === "app" ? "app" : "user",
    username: sub,
    portalId: org,
    audience,
    client,
    bound: bnd,
    expires,
    issued: iat * 1000,
    id: jti,
    clientId: app as string | undefined,
    family: fam as string | undefined,
    parent: par as string | undefined,
    generation: gen as number | undefined,
  };
}
