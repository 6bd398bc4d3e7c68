// GET|POST …/sharing/rest/oauth2/signout: GET shows a confirmation form (a cross-site link cannot sign anyone
// out); its POST revokes the cookie's token, clears the cookie and returns to a path on this deployment.
import { CLEARED_AUTH_COOKIE } from "#shared/auth/identity.ts";
import { forbidden } from "#shared/errors.ts";
import { escapeHtml, page, renderForm } from "#shared/http/html.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { localRedirect } from "#shared/oauth/session.ts";
import { revokeAccessToken } from "#shared/stores/oauth.ts";

function render(data: object, req: RestRequest): string {
  const d = data as { signedIn: string | undefined; redirect: string };
  const who = d.signedIn ? `You are signed in as ${escapeHtml(d.signedIn)}.` : "You are not signed in.";
  const form = renderForm([{ name: "redirect", type: "hidden" }], new Map([["redirect", d.redirect]]), req.csrf, {
    action: req.path,
    formats: false,
    submit: "Sign out",
  });
  return page("Sign Out", `<h1>Sign out</h1><p>${who}</p>${form}`);
}

export const handler = restHandler({ name: "Sign Out", httpsOnly: true, html: render }, async (req) => {
  const redirect = localRedirect(req.params.get("redirect") ?? req.params.get("redirect_uri"), req);
  const identity = req.identity.kind === "user" ? req.identity : undefined;
  if (req.method !== "POST") return { signedIn: identity?.user.username, redirect };
  if (!req.csrfValid) {
    throw forbidden(["The sign-out form could not be verified (CSRF check failed): reload the page and try again."]);
  }
  // Only the cookie's own token is revoked here; an explicit token is revoked at oauth2/revokeToken.
  if (identity?.credential.source === "cookie") {
    await revokeAccessToken(identity.claims.id, identity.claims.expires);
  }
  return new Redirect(redirect, [CLEARED_AUTH_COOKIE]);
});
