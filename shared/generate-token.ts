// generateToken's use cases: a token for a user (username + password), or a server-token for a federated server of
// the caller's organization (serverURL with a portal token or credentials).
import { checkCredentials, SignInRefused } from "#shared/auth/credentials.ts";
import { isIP } from "node:net";
import { CLIENTS, type ClientKind, canonicalIp, issueToken } from "#shared/auth/tokens.ts";
import { badRequest } from "#shared/errors.ts";
import type { Params } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import type { Identity } from "#shared/auth/identity.ts";
import { type Portal, getPortal } from "#shared/stores/portals.ts";
import { listPortalServers, type Server, serverUrl } from "#shared/stores/servers.ts";
import type { User } from "#shared/stores/users.ts";

const FAILED = "Unable to generate token.";
const DEFAULT_MINUTES = 60;

interface Binding {
  client: ClientKind;
  bound: string;
}

/** Validates every parameter at once, so one answer lists every problem. */
export function readRequest(params: Params, req: RestRequest, withToken: boolean) {
  const problems: string[] = [];
  const username = params.get("username") ?? "";
  const password = params.get("password") ?? "";
  const serverURL = params.get("serverURL") ?? params.get("serverUrl");
  if (!withToken) {
    if (!username) problems.push("'username' must be specified.");
    if (!password) problems.push("'password' must be specified.");
  }
  let binding: Binding | undefined;
  const client = params.get("client") ?? (params.get("referer") ? "referer" : "requestip");
  if (!(CLIENTS as readonly string[]).includes(client)) {
    problems.push(`'client' must be one of ${CLIENTS.join(", ")}.`);
  } else if (client === "referer") {
    const referer = params.get("referer") ?? "";
    if (!referer) problems.push("'referer' must be specified when client is referer.");
    else if (referer.length > 2048) problems.push("'referer' may have at most 2048 characters.");
    else binding = { client, bound: referer };
  } else if (client === "ip") {
    const ip = params.get("ip") ?? "";
    if (!ip) problems.push("'ip' must be specified when client is ip.");
    else if (!isIP(ip)) problems.push("'ip' must be an IP address.");
    else binding = { client, bound: canonicalIp(ip) };
  } else binding = { client: "requestip", bound: canonicalIp(req.sourceIp) };
  let minutes: number | undefined;
  const expiration = params.get("expiration");
  if (expiration !== undefined && expiration !== "") {
    minutes = Number(expiration);
    if (!Number.isSafeInteger(minutes) || minutes < 1) {
      problems.push("'expiration' must be a whole number of minutes, at least 1.");
      minutes = undefined;
    }
  }
  if (problems.length > 0) throw badRequest(FAILED, problems);
  return { username, password, serverURL, binding: binding as Binding, minutes };
}

function checkExpiration(minutes: number | undefined, portal: Portal): number {
  const chosen = minutes ?? Math.min(DEFAULT_MINUTES, portal.maxTokenExpirationMinutes);
  if (chosen > portal.maxTokenExpirationMinutes) {
    throw badRequest(FAILED, [
      `'expiration' may be at most ${portal.maxTokenExpirationMinutes} minutes in this organization.`,
    ]);
  }
  return chosen;
}

/** A registered server's URL as clients write it: the root, or anything under /rest or /services. */
async function findServer(portalId: string, url: string, req: RestRequest): Promise<Server> {
  const wanted = url.trim().replace(/\/+$/, "").toLowerCase();
  for (const server of await listPortalServers(portalId)) {
    for (const origin of new Set([req.origin, req.httpsOrigin])) {
      const root = serverUrl(server, origin).toLowerCase();
      if (wanted === root || wanted.startsWith(`${root}/rest`) || wanted.startsWith(`${root}/services`)) return server;
    }
  }
  throw badRequest(FAILED, ["'serverURL' is not a server registered with this organization."]);
}

async function signIn(username: string, password: string): Promise<User> {
  try {
    return await checkCredentials(username, password);
  } catch (err) {
    if (err instanceof SignInRefused) throw badRequest(FAILED, [err.message]);
    throw err;
  }
}

export type TokenRequest = ReturnType<typeof readRequest>;
type SignedIn = Extract<Identity, { kind: "user" }>;

/** A portal token exchanged for a server-token: same user, binding and (at most) expiry. */
export async function serverTokenFor(signedIn: SignedIn, input: TokenRequest, req: RestRequest) {
  if (!input.serverURL) throw badRequest(FAILED, ["'serverURL' must be specified with 'token'."]);
  if (signedIn.claims.audience.kind !== "portal") {
    throw badRequest(FAILED, ["Only a portal token can be exchanged for a server-token."]);
  }
  const server = await findServer(signedIn.portal.portalId, input.serverURL, req);
  const minutes = input.minutes === undefined ? undefined : checkExpiration(input.minutes, signedIn.portal);
  const expires = Math.min(signedIn.claims.expires, minutes ? Date.now() + minutes * 60_000 : Infinity);
  const issued = await issueToken({
    username: signedIn.user.username,
    portalId: signedIn.portal.portalId,
    audience: { kind: "server", serverId: server.serverId },
    client: signedIn.claims.client,
    bound: signedIn.claims.bound,
    expires,
    // Whatever revokes the portal token (sign-out, revokeToken, a replayed refresh token, an unregistered
    // app) revokes this server-token with it.
    clientId: signedIn.claims.clientId,
    family: signedIn.claims.family,
    parent: signedIn.claims.parent ?? signedIn.claims.id,
    generation: signedIn.user.tokenGeneration,
  });
  return { token: issued.token, expires: issued.expires, ssl: signedIn.portal.allSSL };
}

/** A token for a user who signs in with a username and password: for the portal, or for one of its servers. */
export async function signedInToken(input: TokenRequest, req: RestRequest) {
  const user = await signIn(input.username, input.password);
  // Anonymous callers arrive with the default organization loaded already: most users belong to it.
  const portal = user.portalId === req.portal.portalId ? req.portal : await getPortal(user.portalId);
  if (!portal) throw new Error(`user ${user.username} belongs to missing portal ${user.portalId}`);
  const minutes = checkExpiration(input.minutes, portal);
  const server = input.serverURL ? await findServer(portal.portalId, input.serverURL, req) : undefined;
  const issued = await issueToken({
    username: user.username,
    portalId: portal.portalId,
    audience: server ? { kind: "server", serverId: server.serverId } : { kind: "portal" },
    client: input.binding.client,
    bound: input.binding.bound,
    expires: Date.now() + minutes * 60_000,
    generation: user.tokenGeneration,
  });
  return { token: issued.token, expires: issued.expires, ssl: portal.allSSL };
}
