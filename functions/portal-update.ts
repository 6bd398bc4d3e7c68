// POST …/sharing/rest/portals/<self | id>/update: changes the organization's settings, each by those ArcGIS lets
// change it: `allowedOrigins` (a comma-separated list of origins whose pages may read the organization's answers;
// empty allows every origin), a security setting; and the basemap settings new maps take (`defaultBasemap`,
// `basemapGalleryGroupQuery`, `useVectorBasemaps`, shared/portal-basemap.ts), organization settings. ArcGIS's other
// settings are the operator's (`npm run admin -- update-portal`).
import { readAllowedOrigins } from "#shared/http/cors.ts";
import { badRequest, notFound } from "#shared/errors.ts";
import { requirePrivilege, restHandler, type RestRequest } from "#shared/http/pipeline.ts";
import { basemapSettings, MAX_GALLERY_QUERY_CHARS } from "#shared/portal-basemap.ts";
import { readDefaultBasemap } from "#shared/portal-basemap-check.ts";
import { type PortalSettings, updatePortal } from "#shared/stores/portals.ts";

const FAILED = "Unable to update the organization.";
/** Allowed origins are a security setting, as in ArcGIS's organization settings. */
const SECURITY = "portal:admin:manageSecurity";
/** The basemap settings are the organization's own (ArcGIS's privilege for its settings). */
const ORG_SETTINGS = "portal:admin:updateOrg";
const BASEMAP_PARAMS = ["defaultBasemap", "basemapGalleryGroupQuery", "useVectorBasemaps"] as const;

const given = (req: RestRequest, name: string) => req.params.get(name);

export const handler = restHandler(
  {
    name: "Update Organization",
    postOnly: true,
    form: [
      { name: "allowedOrigins", label: "Allowed origins (comma-separated; empty: every origin)" },
      { name: "defaultBasemap", label: "Default basemap (JSON: title and baseMapLayers)" },
      { name: "basemapGalleryGroupQuery", label: "Basemap gallery group query" },
      { name: "useVectorBasemaps", label: "Use vector basemaps (true or false)" },
    ],
    formValues: async (req) => {
      const { portal } = requirePrivilege(req, SECURITY);
      const basemaps = basemapSettings(portal, req.httpsOrigin);
      return {
        allowedOrigins: portal.allowedOrigins.join(","),
        defaultBasemap: JSON.stringify(basemaps.defaultBasemap),
        basemapGalleryGroupQuery: basemaps.basemapGalleryGroupQuery,
        useVectorBasemaps: String(basemaps.useVectorBasemaps),
      };
    },
  },
  async (req) => {
    const asked = [given(req, "allowedOrigins"), ...BASEMAP_PARAMS.map((p) => given(req, p))];
    if (asked.every((v) => v === undefined))
      throw badRequest(FAILED, [
        `Specify what to change: 'allowedOrigins' or ${BASEMAP_PARAMS.map((p) => `'${p}'`).join(", ")}.`,
      ]);
    // Each setting by those who may change it, all checked before anything changes.
    if (given(req, "allowedOrigins") !== undefined) requirePrivilege(req, SECURITY);
    const { portal } = BASEMAP_PARAMS.some((p) => given(req, p) !== undefined)
      ? requirePrivilege(req, ORG_SETTINGS)
      : requirePrivilege(req, SECURITY);
    const named = req.pathParameters.portalId ?? "self";
    if (named !== "self" && named !== portal.portalId) throw notFound();

    const problems: string[] = [];
    const settings: { -readonly [K in keyof PortalSettings]: PortalSettings[K] } = {};
    const origins = given(req, "allowedOrigins");
    if (origins !== undefined) {
      const read = readAllowedOrigins(origins);
      if (read.ok) settings.allowedOrigins = read.origins;
      else problems.push(...read.problems);
    }
    const basemap = given(req, "defaultBasemap");
    if (basemap !== undefined) {
      const read = await readDefaultBasemap(basemap, req, portal);
      if ("basemap" in read) settings.defaultBasemap = JSON.stringify(read.basemap);
      else problems.push(...read.problems);
    }
    const query = given(req, "basemapGalleryGroupQuery");
    if (query !== undefined) {
      if (query.trim() === "" || query.length > MAX_GALLERY_QUERY_CHARS)
        problems.push(
          `'basemapGalleryGroupQuery' must be a search query of 1 to ${MAX_GALLERY_QUERY_CHARS} characters.`,
        );
      else settings.basemapGalleryGroupQuery = query.trim();
    }
    const vector = given(req, "useVectorBasemaps");
    if (vector !== undefined) {
      if (vector !== "true" && vector !== "false") problems.push("'useVectorBasemaps' must be true or false.");
      else settings.useVectorBasemaps = vector === "true";
    }
    if (problems.length > 0) throw badRequest(FAILED, problems);
    const updated = await updatePortal(portal.portalId, settings);
    // The settings changed, as portals/self now answers them.
    return {
      success: true,
      id: updated.portalId,
      ...(origins !== undefined ? { allowedOrigins: updated.allowedOrigins } : {}),
      ...(BASEMAP_PARAMS.some((p) => given(req, p) !== undefined) ? basemapSettings(updated, req.httpsOrigin) : {}),
    };
  },
);
