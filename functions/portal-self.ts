// GET|POST …/sharing/rest/portals/<portalId | self>: the organization's public description,
// plus the signed-in user when the caller belongs to it.
import { notFound } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { basemapSettings } from "#shared/portal-basemap.ts";
import { getPortal } from "#shared/stores/portals.ts";
import { fullProfile } from "#shared/user-views.ts";
import { hostAndPath, PORTAL_REST_VERSION, portalUrl } from "#shared/urls.ts";

const PORTAL_ID = /^[A-Za-z0-9]{1,64}$/;

export const handler = restHandler({ name: "Portal" }, async (req) => {
  const requested = req.pathParameters.portalId ?? "self";
  if (requested !== "self" && !PORTAL_ID.test(requested)) throw notFound();
  const portal = requested === "self" || requested === req.portal.portalId ? req.portal : await getPortal(requested);
  if (!portal) throw notFound();
  const own = req.identity.kind === "user" && req.identity.user.portalId === portal.portalId;
  return {
    id: portal.portalId,
    name: portal.name,
    portalName: portal.name,
    isPortal: true,
    portalMode: "multitenant",
    allSSL: portal.allSSL,
    currentVersion: PORTAL_REST_VERSION,
    portalHostname: `${hostAndPath(req.httpsOrigin)}/portal`,
    url: portalUrl(req.httpsOrigin),
    // OAuth 2.0 answers at sharing/rest/oauth2 (authorize, token, revokeToken) for registered apps.
    supportsOAuth: true,
    maxTokenExpirationMinutes: portal.maxTokenExpirationMinutes,
    created: portal.created,
    modified: portal.modified,
    // Who may read this organization's answers from other origins' pages (empty: every origin).
    allowedOrigins: portal.allowedOrigins,
    // What the ArcGIS Maps SDK reads to give a new web map its basemap (WebMap.save() writes it into the map), and
    // mapgate's viewer too: the administrator's choice, else the demo's tiled basemap (shared/portal-basemap.ts).
    ...basemapSettings(portal, req.httpsOrigin),
    // The caller's own record, as community/self answers it but without groups (as on ArcGIS): the SDK's
    // PortalUser reads it (its `id` builds `content/users/<id>/addItem`).
    ...(own && req.identity.kind === "user" ? { user: fullProfile(req.identity.user, req.identity.privileges) } : {}),
  };
});
