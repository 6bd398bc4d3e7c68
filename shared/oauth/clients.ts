// Client authentication at the OAuth endpoints that take it (token, RFC 6749 §2.3; revocation, RFC 7009 §2.1):
// one reading of the credentials, so no endpoint accepts what another refuses.
import { OAuthError } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { allowAppOrigin } from "#shared/oauth/apps.ts";
import { type App, getApp, secretMatches } from "#shared/stores/apps.ts";

export interface AuthenticatedClient {
  readonly app: App;
  /** Whether the request proved the client secret (only `server` apps have one). */
  readonly authenticated: boolean;
}

const BASIC = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i;

/** The `Authorization: Basic` credentials (RFC 6749 §2.3.1), if the request sends that scheme. */
function basicCredentials(req: RestRequest): { clientId: string; secret: string } | undefined {
  const header = req.event.headers?.authorization;
  if (header === undefined || !/^Basic(\s|$)/i.test(header)) return undefined;
  const malformed = () => new OAuthError("invalid_client", "Malformed Basic credentials.");
  // Credentials the client did send are never skipped over, however they are spelled.
  const encoded = BASIC.exec(header)?.[1];
  if (!encoded) throw malformed();
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) throw malformed();
  // Both halves are form-urlencoded before they are joined.
  const formDecode = (v: string) => {
    try {
      return decodeURIComponent(v.replace(/\+/g, " "));
    } catch {
      throw malformed();
    }
  };
  return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

/**
 * The calling app, by `client_secret_basic` or `client_secret_post`, or by its `client_id` alone (whether that
 * is enough is the endpoint's call). A secret that is sent is always checked: a wrong one is never ignored.
 */
export async function authenticateClient(req: RestRequest): Promise<AuthenticatedClient> {
  let clientId = req.params.get("client_id");
  let secret = req.params.get("client_secret");
  const basic = basicCredentials(req);
  if (basic) {
    if (clientId !== undefined && clientId !== basic.clientId) {
      throw new OAuthError("invalid_request", "Two different client ids.");
    }
    // RFC 6749 §2.3: one authentication method per request.
    if (secret !== undefined) throw new OAuthError("invalid_request", "Use one client authentication method.");
    ({ clientId, secret } = basic);
  }
  if (!clientId) throw new OAuthError("invalid_request", "'client_id' must be specified.");
  const app = clientId.length <= 64 ? await getApp(clientId) : undefined;
  if (!app) throw new OAuthError("invalid_client", "Invalid client_id.");
  if (secret !== undefined && !secretMatches(app, secret)) {
    throw new OAuthError("invalid_client", "Invalid client credentials.");
  }
  allowAppOrigin(req, app);
  return { app, authenticated: secret !== undefined };
}

/**
 * A confidential client authenticates on every request that takes client authentication (RFC 6749 §3.2.1,
 * RFC 7009 §2.1), unless its administrator registered it for ArcGIS REST JS's server-side flow, which never
 * sends the secret.
 */
export function requireSecretIfConfidential(client: AuthenticatedClient): void {
  if (client.app.secretHash && !client.authenticated && !client.app.exchangeWithoutSecret) {
    throw new OAuthError("invalid_client", "This application must authenticate with its client_secret.");
  }
}
