// GET|POST …/sharing/rest/oauth2/authorize: the authorization endpoint (RFC 6749 §4.1, PKCE per RFC 7636).
// The client and its redirect URI are checked first: until both are known good, errors are shown on the page
// and never sent to the redirect URI (§4.1.2.1). After that, errors go back to the app as `error=…`.
// The page asks a signed-in user to allow the app, or signs the user in; its POST carries a CSRF field.
import { restHandler } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { authorize, consentPage, readAuthorization } from "#shared/oauth/authorize.ts";

// A refused sign-in shows its form again, answered in place (post/redirect/get is for results).
const op = {
  name: "Authorize",
  httpsOnly: true,
  html: consentPage,
  bodyOnly: ["password"],
  answersPostInPlace: true,
} as const;

export const handler = restHandler(op, async (req) => {
  const read = await readAuthorization(req);
  if (read instanceof Redirect) return read;
  return authorize(req, read);
});
