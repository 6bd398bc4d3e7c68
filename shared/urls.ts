// Public URLs of the portal and its hosted servers, built from the request's origin.
import { PORTAL_ROOT } from "#infra/system.ts";

/** The versions this deployment reports: an ArcGIS Enterprise 10.8.1 portal and server. */
export const PORTAL_REST_VERSION = "8.2";
export const SERVER_REST_VERSION = 10.81;
export const SERVER_FULL_VERSION = "10.8.1";

export const portalUrl = (origin: string) => `${origin}${PORTAL_ROOT.replace(/\/sharing\/rest$/, "")}`;
export const sharingRestUrl = (origin: string) => `${origin}${PORTAL_ROOT}`;
export const generateTokenUrl = (origin: string) => `${sharingRestUrl(origin)}/generateToken`;
