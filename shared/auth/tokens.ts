// Tokens are encrypted JWTs (JWE `dir` + `A256GCM`, jose): a token says nothing to whoever holds it,
// and any change to it fails decryption. Verification order: structure and algorithms → decryption →
// expiry → client binding → audience. Revocation and the user's current state are checked by the caller.
import { randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { decodeProtectedHeader, EncryptJWT, jwtDecrypt } from "jose";
import { keyFor, tokenKeys } from "#shared/auth/keys.ts";
import { invalidToken } from "#shared/http/errors.ts";

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
}

export type NewToken = Omit<TokenClaims, "id" | "issued" | "kind"> & { readonly kind?: TokenClaims["kind"] };

const MAX_TOKEN_LENGTH = 4096;
const COMPACT_JWE = /^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const audienceClaim = (a: Audience) => (a.kind === "portal" ? "portal" : `server:${a.serverId}`);

/** Issues a token; `expires` comes back rounded up to the whole second the token carries. */
export async function issueToken(claims: NewToken): Promise<{ token: string; id: string; expires: number }> {
  const { current } = await tokenKeys();
  const id = randomBytes(12).toString("base64url");
  const exp = Math.ceil(claims.expires / 1000);
  const extra = {
    ...(claims.kind === "app" ? { knd: "app" } : {}),
    ...(claims.clientId ? { app: claims.clientId } : {}),
    ...(claims.family ? { fam: claims.family } : {}),
    ...(claims.parent ? { par: claims.parent } : {}),
  };
  const token = await new EncryptJWT({ org: claims.portalId, cli: claims.client, bnd: claims.bound, ...extra })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: current.kid })
    .setIssuer("mapgate")
    .setSubject(claims.username)
    .setAudience(audienceClaim(claims.audience))
    .setJti(id)
    .setIssuedAt()
    .setExpirationTime(exp)
    .encrypt(current.key);
  return { token, id, expires: exp * 1000 };
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

/** Opens and checks a token; every failure is the same 498, so nothing is learned from which check failed. */
export async function verifyToken(token: string, presented: Presented, now = Date.now()): Promise<TokenClaims> {
  if (token.length > MAX_TOKEN_LENGTH || !COMPACT_JWE.test(token)) throw invalidToken();
  let payload: Record<string, unknown>;
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw invalidToken();
  }
  // Outside the try: a key that cannot be loaded is our fault (500), not the caller's token.
  const key = typeof header.kid === "string" && header.kid.length <= 64 ? await keyFor(header.kid) : undefined;
  try {
    if (!key || header.alg !== "dir" || header.enc !== "A256GCM" || header.zip !== undefined) throw invalidToken();
    ({ payload } = await jwtDecrypt(token, key, {
      keyManagementAlgorithms: ["dir"],
      contentEncryptionAlgorithms: ["A256GCM"],
      issuer: "mapgate",
      currentDate: new Date(now),
    }));
  } catch {
    throw invalidToken();
  }
  const { sub, org, cli, bnd, aud, exp, iat, jti, knd, app, fam, par } = payload;
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
    (par !== undefined && typeof par !== "string")
  ) {
    throw invalidToken();
  }
  // Expiry is checked here whatever jose or a TTL did: never trust deletion to have happened.
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
  };
}
