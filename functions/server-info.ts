// GET|POST /<server>/rest/info: a hosted federated server's description; its token service is the portal's.
import { noSuchResource } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { getHostedServerByName, SERVER_NAME } from "#shared/stores/servers.ts";
import { generateTokenUrl, portalUrl, SERVER_FULL_VERSION, SERVER_REST_VERSION } from "#shared/urls.ts";

export const handler = restHandler({ name: "Server Info" }, async (req) => {
  const name = req.pathParameters.server ?? "";
  const server = SERVER_NAME.test(name) ? await getHostedServerByName(name) : undefined;
  if (!server) throw noSuchResource([`No server is hosted at /${name.slice(0, 64)}.`]);
  return {
    currentVersion: SERVER_REST_VERSION,
    fullVersion: SERVER_FULL_VERSION,
    owningSystemUrl: portalUrl(req.httpsOrigin),
    owningTenant: server.portalId,
    authInfo: {
      isTokenBasedSecurity: true,
      tokenServicesUrl: generateTokenUrl(req.httpsOrigin),
      shortLivedTokenValidity: 60,
    },
  };
});
