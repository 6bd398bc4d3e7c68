// GET|POST …/sharing/rest/info: where clients find the token service of this portal.
import { restHandler } from "#shared/http/pipeline.ts";
import { generateTokenUrl, PORTAL_REST_VERSION, portalUrl } from "#shared/urls.ts";

export const handler = restHandler({ name: "Info" }, async (req) => ({
  owningSystemUrl: portalUrl(req.httpsOrigin),
  authInfo: { isTokenBasedSecurity: true, tokenServicesUrl: generateTokenUrl(req.httpsOrigin) },
  currentVersion: PORTAL_REST_VERSION,
}));
