// POST …/sharing/rest/oauth2/revokeToken: revokes an access token or a refresh token (RFC 7009). The token is
// `auth_token` (as the original and ArcGIS REST JS send it) or `token` (RFC 7009). An unknown or foreign
// token is answered like a revoked one: the caller learns nothing about tokens it does not hold.
import { verifyToken } from "#shared/auth/tokens.ts";
import { ApiError, OAuthError } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { allowAppOrigin } from "#shared/oauth/apps.ts";
import { getApp, secretMatches } from "#shared/stores/apps.ts";
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
    const clientId = req.params.get("client_id");
    if (!clientId) throw new OAuthError("invalid_request", "'client_id' must be specified.");
    const app = clientId.length <= 64 ? await getApp(clientId) : undefined;
    if (!app) throw new OAuthError("invalid_client", "Invalid client_id.");
    allowAppOrigin(req, app);
    const secret = req.params.get("client_secret");
    if (secret !== undefined && !secretMatches(app, secret)) {
      throw new OAuthError("invalid_client", "Invalid client credentials.");
    }
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
