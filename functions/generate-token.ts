// POST …/sharing/rest/generateToken: a token for a user (username + password), or a server-token for a
// federated server of the caller's organization (serverURL with a portal token or credentials).
import { readRequest, serverTokenFor, signedInToken } from "#shared/generate-token.ts";
import { restHandler } from "#shared/http/pipeline.ts";

export const handler = restHandler(
  {
    name: "Generate Token",
    postOnly: true,
    httpsOnly: true,
    ignoreCookie: true,
    form: [
      { name: "username", label: "Username" },
      { name: "password", label: "Password", type: "password" },
      { name: "client", label: "Client", options: ["requestip", "referer", "ip"] },
      { name: "referer", label: "Webapp URL (referer)" },
      { name: "ip", label: "IP address" },
      { name: "expiration", label: "Expiration (minutes)", type: "number" },
      { name: "serverURL", label: "Server URL (for a server-token)" },
    ],
  },
  async (req) => {
    const signedIn = req.identity.kind === "user" ? req.identity : undefined;
    const input = readRequest(req.params, req, signedIn !== undefined && !req.params.get("username"));
    // Exchange a portal token for a server-token, or sign in.
    if (signedIn && !input.username) return serverTokenFor(signedIn, input, req);
    return signedInToken(input, req);
  },
);
