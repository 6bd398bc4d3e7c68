// POST …/sharing/rest/oauth2/token: the OAuth 2.0 token endpoint (RFC 6749 §3.2). Grants: authorization_code
// (PKCE S256), refresh_token and the original's exchange_refresh_token (both rotate the refresh token),
// client_credentials (an app's own token) and password (only where the organization allows it); each is a
// function of shared/oauth/grants.ts.
import { OAuthError } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { grantOf, required, tokenClient } from "#shared/oauth/grants.ts";

export const handler = restHandler(
  {
    name: "OAuth 2.0 Token",
    protocol: "oauth",
    httpsOnly: true,
    ignoreCookie: true,
    bodyOnly: ["client_secret", "code", "code_verifier", "refresh_token", "password"],
  },
  async (req) => {
    // Credentials never travel in a URL (they would land in logs and histories).
    if (req.method !== "POST") throw new OAuthError("invalid_request", "The token endpoint accepts POST only.");
    const grant = grantOf(required(req, "grant_type"));
    const client = await tokenClient(req);
    return grant(req, client);
  },
);
