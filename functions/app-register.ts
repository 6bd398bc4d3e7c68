// POST …/portals/<self | id>/apps/register: an administrator registers an OAuth 2.0 application. The answer
// holds the client id and, for a server app, the client secret: shown this once, only its hash is kept.
import { badRequest } from "#shared/errors.ts";
import { requirePrivilege, restHandler } from "#shared/http/pipeline.ts";
import { APP_ADMIN_PRIVILEGE, appRegistrationAnswer, readAppRegistration } from "#shared/oauth/apps.ts";
import { registerApp } from "#shared/stores/apps.ts";

/** Redirect URIs as a JSON array (the original's form) or one per line / comma-separated (a person's form). */
function redirectUris(raw: string | undefined): string[] {
  if (!raw) return [];
  const text = raw.trim();
  if (text.startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (Array.isArray(parsed) && parsed.every((u) => typeof u === "string")) return parsed;
    } catch {
      // fall through to the message below
    }
    throw badRequest("Unable to register the application.", ["'redirect_uris' is not a JSON array of strings."]);
  }
  return text.split(/[\s,]+/);
}

export const handler = restHandler(
  {
    name: "Register Application",
    postOnly: true,
    form: [
      { name: "name", label: "Name", required: true },
      { name: "appType", label: "Type", options: ["browser", "native", "server"] },
      { name: "redirect_uris", label: "Redirect URIs (one per line)", type: "textarea", required: true },
      { name: "exchangeWithoutSecret", label: "Server app: exchange codes without its secret", type: "checkbox" },
    ],
  },
  async (req) => {
    const { user, portal } = requirePrivilege(req, APP_ADMIN_PRIVILEGE);
    const input = readAppRegistration({
      name: req.params.get("name"),
      appType: req.params.get("appType"),
      redirectUris: redirectUris(req.params.get("redirect_uris")),
      exchangeWithoutSecret: req.params.get("exchangeWithoutSecret"),
    });
    if (!input.ok) throw badRequest("Unable to register the application.", input.problems);
    const { app, clientSecret } = await registerApp({
      ...input.value,
      portalId: portal.portalId,
      owner: user.username,
    });
    return appRegistrationAnswer(app, clientSecret);
  },
);
