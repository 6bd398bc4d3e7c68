// The OAuth 2.0 token endpoint's grants (RFC 6749 §3.2), one function each over the authenticated client:
// authorization_code (PKCE S256), refresh_token and the original's exchange_refresh_token (both rotate the refresh
// token), client_credentials (an app's own token) and password (only where the organization allows it).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { checkCredentials, SignInRefused } from "#shared/auth/credentials.ts";
import { issueToken } from "#shared/auth/tokens.ts";
import { config } from "#shared/config.ts";
import { OAuthError } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { authenticateClient, requireSecretIfConfidential } from "#shared/oauth/clients.ts";
import { accessTokenMinutes, issueUserToken } from "#shared/oauth/session.ts";
import type { App } from "#shared/stores/apps.ts";
import { isConditionFailure } from "#shared/stores/dynamo.ts";
import { consumeCode, createFamily, revokeFamily, rotateRefreshToken } from "#shared/stores/oauth.ts";
import { getPortal, type Portal } from "#shared/stores/portals.ts";
import { getUser, type User } from "#shared/stores/users.ts";

type Grant = (req: RestRequest, client: Client) => Promise<object>;

export interface Client {
  readonly app: App;
  readonly portal: Portal;
  /** Whether the request proved the client secret (only `server` apps have one). */
  readonly authenticated: boolean;
}

export function required(req: RestRequest, name: string): string {
  const v = req.params.get(name);
  if (!v) throw new OAuthError("invalid_request", `'${name}' must be specified.`);
  return v;
}

/** The authenticated client and its organization; a confidential one must have proved its secret. */
export async function tokenClient(req: RestRequest): Promise<Client> {
  const client = await authenticateClient(req);
  const { app, authenticated } = client;
  // Most apps belong to the organization the request already loaded.
  const portal = app.portalId === req.portal.portalId ? req.portal : await getPortal(app.portalId);
  if (!portal) throw new OAuthError("invalid_client", "Invalid client_id.");
  requireSecretIfConfidential(client);
  return { app, portal, authenticated };
}

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

function pkceHolds(challenge: string | undefined, verifier: string | undefined): boolean {
  // RFC 9700 §2.1.1: a verifier without a challenge is refused too (a downgrade attempt).
  if (challenge === undefined) return verifier === undefined;
  if (verifier === undefined || !VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(createHash("sha256").update(verifier, "ascii").digest("base64url"));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

async function member(username: string, portal: Portal): Promise<User> {
  const user = await getUser(username);
  if (!user || user.portalId !== portal.portalId) throw new OAuthError("invalid_grant", "The user no longer exists.");
  return user;
}

const refreshMinutes = () => config().oauth.refreshTokenMinutes;

/** The answer for a user: an access token and (for every user grant) a refresh token of its family. */
async function userTokens(user: User, client: Client, family: { id: string; refreshToken: string; expires: number }) {
  const access = await issueUserToken(user, client.portal, { clientId: client.app.clientId, family: family.id });
  return {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: Math.floor((access.expires - Date.now()) / 1000),
    username: user.username,
    ssl: client.portal.allSSL,
    refresh_token: family.refreshToken,
    refresh_token_expires_in: Math.max(0, Math.floor((family.expires - Date.now()) / 1000)),
  };
}

async function newFamily(id: string, user: User, client: Client) {
  const expires = Date.now() + refreshMinutes() * 60_000;
  try {
    const refreshToken = await createFamily({
      id,
      clientId: client.app.clientId,
      username: user.username,
      portalId: client.portal.portalId,
      expires,
      generation: user.tokenGeneration,
    });
    return { id, refreshToken, expires };
  } catch (err) {
    if (isConditionFailure(err)) throw new OAuthError("invalid_grant", "The authorization code was already used.");
    throw err;
  }
}

const INVALID_CODE = "The authorization code is invalid, expired or already used.";

async function authorizationCode(req: RestRequest, client: Client) {
  const code = required(req, "code");
  const redirectUri = required(req, "redirect_uri");
  const consumed = await consumeCode(code);
  if (!consumed || consumed.grant.clientId !== client.app.clientId) throw new OAuthError("invalid_grant", INVALID_CODE);
  const { grant } = consumed;
  if (consumed.replayed) {
    // RFC 6749 §4.1.2: a code used twice revokes what its first use produced.
    await revokeFamily(grant.family, Date.now() + refreshMinutes() * 60_000);
    throw new OAuthError("invalid_grant", INVALID_CODE);
  }
  if (grant.expires <= Date.now()) throw new OAuthError("invalid_grant", INVALID_CODE);
  if (redirectUri !== grant.redirectUri) {
    throw new OAuthError("invalid_grant", "redirect_uri differs from the authorization request's.");
  }
  if (!pkceHolds(grant.challenge, req.params.get("code_verifier"))) {
    throw new OAuthError("invalid_grant", "The code_verifier does not match the code_challenge.");
  }
  const user = await member(grant.username, client.portal);
  // The user's password was reset after the code was issued.
  if (grant.generation !== user.tokenGeneration) throw new OAuthError("invalid_grant", INVALID_CODE);
  return userTokens(user, client, await newFamily(grant.family, user, client));
}

async function refresh(req: RestRequest, client: Client) {
  const rotation = await rotateRefreshToken(required(req, "refresh_token"), client.app.clientId);
  if (!rotation.ok) {
    const why =
      rotation.reason === "reused"
        ? "The refresh token was already used: its whole family is revoked. Sign in again."
        : rotation.reason === "expired"
          ? "The refresh token has expired. Sign in again."
          : "Invalid refresh_token.";
    throw new OAuthError("invalid_grant", why);
  }
  const user = await member(rotation.family.username, client.portal);
  if (rotation.family.generation !== user.tokenGeneration) {
    // The user's password was reset after this family started: it ends here, as every token of the user did.
    await revokeFamily(rotation.family.id, rotation.family.expires);
    throw new OAuthError("invalid_grant", "The user's password was reset: sign in again.");
  }
  return userTokens(user, client, {
    id: rotation.family.id,
    refreshToken: rotation.refreshToken,
    expires: rotation.family.expires,
  });
}

async function clientCredentials(req: RestRequest, client: Client) {
  if (!client.app.secretHash) {
    throw new OAuthError("unauthorized_client", "Only server apps (with a client secret) get app tokens.");
  }
  if (!client.authenticated) throw new OAuthError("invalid_client", "'client_secret' must be specified.");
  const max = accessTokenMinutes(client.portal);
  const raw = req.params.get("expiration");
  let minutes = max;
  if (raw !== undefined && raw !== "") {
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 1) {
      throw new OAuthError("invalid_request", "'expiration' must be a whole number of minutes.");
    }
    // The original clamps an app's request to the organization's limit; so do we.
    minutes = Math.min(n, max);
  }
  const issued = await issueToken({
    kind: "app",
    username: client.app.clientId,
    portalId: client.portal.portalId,
    audience: { kind: "portal" },
    client: "none",
    bound: "",
    expires: Date.now() + minutes * 60_000,
    clientId: client.app.clientId,
  });
  return {
    access_token: issued.token,
    token_type: "Bearer",
    expires_in: Math.floor((issued.expires - Date.now()) / 1000),
    ssl: client.portal.allSSL,
  };
}

async function password(req: RestRequest, client: Client) {
  if (!client.portal.allowPasswordGrant) {
    throw new OAuthError("unauthorized_client", "This organization does not allow the password grant.");
  }
  const username = required(req, "username");
  const pass = required(req, "password");
  let user: User;
  try {
    user = await checkCredentials(username, pass);
  } catch (err) {
    if (err instanceof SignInRefused) throw new OAuthError("invalid_grant", err.message);
    throw err;
  }
  if (user.portalId !== client.portal.portalId) throw new OAuthError("invalid_grant", "Invalid username or password.");
  return userTokens(user, client, await newFamily(randomBytes(16).toString("base64url"), user, client));
}

/** Each grant type the endpoint takes, and what answers it. */
const GRANTS: Readonly<Record<string, Grant>> = {
  authorization_code: authorizationCode,
  refresh_token: refresh,
  exchange_refresh_token: refresh,
  client_credentials: clientCredentials,
  password,
};

/** The grant a `grant_type` names; any other is unsupported. */
export function grantOf(grantType: string): Grant {
  const grant = Object.hasOwn(GRANTS, grantType) ? GRANTS[grantType] : undefined;
  if (!grant) throw new OAuthError("unsupported_grant_type", `Unsupported grant_type.`);
  return grant;
}
