// POST …/sharing/rest/oauth2/revokeToken: revokes an access token or a refresh token (RFC 7009). The token is
// `auth_token` (as the original and ArcGIS REST JS send it) or `token` (RFC 7009). An unknown or foreign
// token is answered like a revoked one: the caller learns nothing about tokens it does not hold.
import { verifyToken } from "#shared/auth/tokens.ts";
import { ApiError, OAuthError } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { authenticateClient, requireSecretIfConfidential } from "#shared/oauth/clients.ts";
import { revokeAccessToken, revokeRefreshToken } from "#shared/stores/oauth.ts";

export const handler = restHandler(
  {
    name: "Revoke Token",
    protocol: "oauth",
    httpsOnly: true,
    ignoreCookie: true,
    bodyOnly: ["auth_token", "token", "client_secret"],
  },
  async (req) => {
    if (req.method !== "POST") throw new OAuthError("invalid_request", "revokeToken accepts POST only.");
    // Credentials are read, and required of confidential apps, as at the token endpoint (RFC 7009 §2.1). A
    // public app names itself by client_id: all it can do is take away a token issued to it.
    const client = await authenticateClient(req);
    requireSecretIfConfidential(client);
    const { app } = client;
    const token = req.params.get("auth_token") ?? req.params.get("token");
    if (!token) throw new OAuthError("invalid_request", "'auth_token' must be specified.");
    if (token.includes("..")) {
      // A compact JWE: an access token. Only the app it was issued to may revoke it.
      try {
        const claims = await verifyToken(token, {
          sourceIp: req.sourceIp,
          referer: req.event.headers?.referer,
          at: { kind: "portal" },
        });
        if (claims.clientId === app.clientId) await revokeAccessToken(claims.id, claims.expires);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
      }
    } else await revokeRefreshToken(token, app.clientId);
    return { success: true };
  },
);
