// GET|POST /<server>/rest/info: a hosted federated server's description; its token service is the portal's.
import { addressedServer } from "#shared/http/hosted-server.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { generateTokenUrl, portalUrl, SERVER_FULL_VERSION, SERVER_REST_VERSION } from "#shared/urls.ts";

export const handler = restHandler({ name: "Server Info", at: addressedServer }, async (req) => ({
  currentVersion: SERVER_REST_VERSION,
  fullVersion: SERVER_FULL_VERSION,
  owningSystemUrl: portalUrl(req.httpsOrigin),
  owningTenant: req.server?.portalId,
  authInfo: {
    isTokenBasedSecurity: true,
    tokenServicesUrl: generateTokenUrl(req.httpsOrigin),
    shortLivedTokenValidity: 60,
  },
}));
