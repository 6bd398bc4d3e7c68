// The OAuth 2.0 authorization endpoint's use case (RFC 6749 §4.1, PKCE per RFC 7636). The client and its redirect
// URI are checked first: until both are known good, errors are shown on the page and never sent to the redirect
// URI (§4.1.2.1). After that, errors go back to the app as `error=…`. The page asks a signed-in user to allow the
// app, or signs the user in; its POST carries a CSRF field.
import { checkCredentials, SignInRefused } from "#shared/auth/credentials.ts";
import { config } from "#shared/config.ts";
import { badRequest, forbidden } from "#shared/errors.ts";
import { escapeHtml, type FormField, type HtmlPage, page, renderForm } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { formActionFor } from "#shared/oauth/apps.ts";
import { type App, getApp } from "#shared/stores/apps.ts";
import { createCode } from "#shared/stores/oauth.ts";
import type { User } from "#shared/stores/users.ts";

const FAILED = "Unable to authorize the application.";
/** The authorization request's own parameters: those it has are carried through the page's form unchanged. */
const CARRIED = ["client_id", "response_type", "redirect_uri", "state", "code_challenge", "code_challenge_method"];
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export interface Authorization {
  readonly app: App;
  readonly redirectUri: string;
  readonly state: string | undefined;
  readonly challenge: string | undefined;
}

/**
 * An authorization request parameter: an empty one counts as absent (RFC 6749 §3.1). Pages rendered before the
 * form left absent parameters out may still be open, and their empty `code_challenge_method` is no wrong method.
 */
function param(req: RestRequest, name: string): string | undefined {
  const v = req.params.get(name);
  return v === "" ? undefined : v;
}

function back(redirectUri: string, params: Record<string, string | undefined>): Redirect {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return new Redirect(url.toString());
}

/** The client and redirect URI (errors shown here), then the rest of the request (errors sent back). */
export async function readAuthorization(req: RestRequest): Promise<Authorization | Redirect> {
  const clientId = param(req, "client_id") ?? "";
  const app = clientId && clientId.length <= 64 ? await getApp(clientId) : undefined;
  if (!app) throw badRequest(FAILED, ["Invalid client_id."]);
  const given = param(req, "redirect_uri");
  // Exact match only; without one, an app with a single registered URI means that one.
  const redirectUri = given ?? (app.redirectUris.length === 1 ? app.redirectUris[0] : undefined);
  if (!redirectUri || !app.redirectUris.includes(redirectUri)) {
    throw badRequest(FAILED, ["Invalid redirect_uri: it must match one registered for the application exactly."]);
  }
  const state = param(req, "state");
  const fail = (error: string, description: string) =>
    back(redirectUri, { error, error_description: description, state });
  if (state !== undefined && state.length > 1024) return fail("invalid_request", "'state' is too long.");
  if (param(req, "response_type") !== "code") {
    return fail("unsupported_response_type", "Only response_type=code is supported (with PKCE for public apps).");
  }
  const challenge = param(req, "code_challenge");
  const method = param(req, "code_challenge_method");
  if (challenge !== undefined) {
    if (method !== "S256") return fail("invalid_request", "code_challenge_method must be S256.");
    if (!CHALLENGE.test(challenge)) return fail("invalid_request", "code_challenge must be a base64url SHA-256.");
  } else if (method !== undefined) {
    return fail("invalid_request", "code_challenge_method without code_challenge.");
  } else if (app.appType !== "server") {
    // Browser and native apps cannot keep a secret: PKCE is what binds the code to the app that asked for it.
    return fail("invalid_request", "PKCE (code_challenge with S256) is required for browser and native apps.");
  }
  return { app, redirectUri, state, challenge };
}

export interface Consent {
  readonly app: string;
  readonly redirectUri: string;
  readonly signedIn: string | undefined;
  readonly message: string | undefined;
}

/** The page asking a signed-in user to allow the app, or to sign in and allow it. */
export function consentPage(data: object, req: RestRequest): HtmlPage {
  const d = data as Consent;
  // The form's answer redirects to the app: the page's policy must let it go there (Chromium checks).
  const formActions = [formActionFor(d.redirectUri)];
  // Only the parameters the request has: an empty hidden field would come back as a parameter of its own
  // (an empty code_challenge_method reads as a wrong one; an empty redirect_uri as an unregistered one).
  const values = new Map<string, string>();
  for (const name of CARRIED) {
    const value = param(req, name);
    if (value !== undefined) values.set(name, value);
  }
  const carried: FormField[] = [...values.keys()].map((name) => ({ name, type: "hidden" }));
  const message = d.message ? `<div class="error" role="alert"><p>${escapeHtml(d.message)}</p></div>` : "";
  const intro = `<h1>Sign in to ${escapeHtml(d.app)}</h1><p>${escapeHtml(d.app)} asks to use ${escapeHtml(req.portal.name)} on your behalf.</p>`;
  // Every form re-sends the authorization request's own parameters, plus its own fields.
  const form = (fields: readonly FormField[], own: [string, string][], submit: string) =>
    renderForm([...carried, ...fields], new Map([...values, ...own]), req.csrf, {
      action: req.path,
      formats: false,
      submit,
    });
  if (d.signedIn) {
    const decision = { name: "allow", type: "hidden" } as const;
    const allow = form([decision], [["allow", "true"]], `Allow as ${d.signedIn}`);
    const deny = form([decision], [["allow", "false"]], "Deny");
    return { body: page("Authorize", `${intro}${message}${allow}${deny}`), formActions };
  }
  const signIn = form(
    [
      { name: "username", label: "Username", required: true },
      { name: "password", label: "Password", type: "password", required: true },
    ],
    [["username", req.params.get("username") ?? ""]],
    "Sign in and allow",
  );
  return { body: page("Authorize", `${intro}${message}${signIn}`), formActions };
}

/**
 * The consent page (GET, or a sign-in refused), or where the browser goes next: back to the app with a code, or
 * with `access_denied`.
 */
export async function authorize(req: RestRequest, read: Authorization): Promise<Consent | Redirect> {
  const { app, redirectUri, state, challenge } = read;
  const signedIn = req.identity.kind === "user" ? req.identity.user : undefined;
  const consent = (message?: string): Consent => ({
    app: app.name,
    redirectUri,
    signedIn: signedIn?.username,
    message,
  });
  if (req.method !== "POST") return consent();
  if (!req.csrfValid) {
    throw forbidden(["The authorization form could not be verified (CSRF check failed): reload the page."]);
  }
  let user: User;
  const username = req.params.get("username");
  if (username !== undefined) {
    try {
      user = await checkCredentials(username, req.params.get("password") ?? "");
    } catch (err) {
      if (err instanceof SignInRefused) return consent(err.message);
      throw err;
    }
  } else if (signedIn) {
    if (req.params.get("allow") !== "true") {
      return back(redirectUri, { error: "access_denied", error_description: "The user denied the request.", state });
    }
    user = signedIn;
  } else return consent("Sign in to continue.");
  if (user.portalId !== app.portalId) {
    return back(redirectUri, {
      error: "access_denied",
      error_description: "The user is not in the app's organization.",
      state,
    });
  }
  const code = await createCode(
    {
      clientId: app.clientId,
      username: user.username,
      portalId: user.portalId,
      redirectUri,
      challenge,
      generation: user.tokenGeneration,
    },
    config().oauth.codeSeconds * 1000,
  );
  return back(redirectUri, { code, state });
}
