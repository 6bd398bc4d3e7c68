// GET|POST …/sharing/rest/oauth2/signin: the sign-in page. A successful sign-in sets `vendor_authcookie`
// (see shared/oauth/session.ts) and returns the browser to a path on this deployment.
import { checkCredentials, SignInRefused } from "#shared/auth/credentials.ts";
import { forbidden } from "#shared/errors.ts";
import { escapeHtml, page, renderForm } from "#shared/http/html.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { authCookie, issueUserToken, localRedirect } from "#shared/oauth/session.ts";
import { getPortal } from "#shared/stores/portals.ts";

interface SignInPage {
  readonly redirect: string;
  readonly signedIn: string | undefined;
  readonly message: string | undefined;
}

function render(data: object, req: RestRequest): string {
  const d = data as SignInPage;
  const already = d.signedIn
    ? `<p class="muted">You are signed in as ${escapeHtml(d.signedIn)}. <a href="${escapeHtml(d.redirect)}">Continue</a>, or sign in as someone else.</p>`
    : "";
  const message = d.message ? `<div class="error" role="alert"><p>${escapeHtml(d.message)}</p></div>` : "";
  const form = renderForm(
    [
      { name: "username", label: "Username", required: true },
      { name: "password", label: "Password", type: "password", required: true },
      { name: "persistent", label: "Keep me signed in", type: "checkbox" },
      { name: "redirect", type: "hidden" },
    ],
    new Map([
      ["username", req.params.get("username") ?? ""],
      ["redirect", d.redirect],
    ]),
    req.csrf,
    { action: req.path, formats: false, submit: "Sign in" },
  );
  return page("Sign In", `<h1>Sign in to ${escapeHtml(req.portal.name)}</h1>${already}${message}${form}`);
}

// A refused sign-in shows its form again, answered in place (post/redirect/get is for results).
const op = {
  name: "Sign In",
  httpsOnly: true,
  html: render,
  bodyOnly: ["password"],
  answersPostInPlace: true,
} as const;

export const handler = restHandler(op, async (req) => {
  const redirect = localRedirect(req.params.get("redirect"), req);
  const signedIn = req.identity.kind === "user" ? req.identity.user.username : undefined;
  if (req.method !== "POST") return { redirect, signedIn, message: undefined } satisfies SignInPage;
  if (!req.csrfValid) {
    throw forbidden(["The sign-in form could not be verified (CSRF check failed): reload the page and try again."]);
  }
  const username = req.params.get("username") ?? "";
  const password = req.params.get("password") ?? "";
  if (!username || !password) {
    return { redirect, signedIn, message: "Enter your username and password." } satisfies SignInPage;
  }
  try {
    const user = await checkCredentials(username, password);
    const portal = user.portalId === req.portal.portalId ? req.portal : await getPortal(user.portalId);
    if (!portal) throw new Error(`user ${user.username} belongs to missing portal ${user.portalId}`);
    const issued = await issueUserToken(user, portal);
    const persistent = req.params.get("persistent") === "true";
    return new Redirect(redirect, [authCookie(issued, user, portal, persistent)]);
  } catch (err) {
    if (err instanceof SignInRefused) return { redirect, signedIn, message: err.message } satisfies SignInPage;
    throw err;
  }
});
