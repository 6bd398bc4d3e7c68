// What each built-in role may do, in the original's privilege strings.
const USER = [
  "portal:user:createGroup",
  "portal:user:createItem",
  "portal:user:joinGroup",
  "portal:user:shareToGroup",
  "portal:user:shareToOrg",
  "portal:user:shareToPublic",
  "portal:user:viewOrgGroups",
  "portal:user:viewOrgItems",
  "portal:user:viewOrgUsers",
];

const PUBLISHER = [
  ...USER,
  "portal:publisher:publishFeatures",
  "portal:publisher:publishTiles",
  "portal:publisher:publishScenes",
  "portal:publisher:publishDynamicImagery",
  "portal:publisher:publishTiledImagery",
  "portal:publisher:publishServerServices",
  "portal:publisher:bulkPublishFromDataStores",
  "portal:publisher:registerDataStores",
];

const ADMIN = [
  ...PUBLISHER,
  "portal:admin:viewUsers",
  "portal:admin:updateUsers",
  "portal:admin:deleteUsers",
  "portal:admin:viewItems",
  "portal:admin:updateItems",
  "portal:admin:deleteItems",
  "portal:admin:viewGroups",
  "portal:admin:updateGroups",
  "portal:admin:deleteGroups",
  "portal:admin:reassignGroups",
  "portal:admin:assignToGroups",
  "portal:admin:manageRoles",
  "portal:admin:manageSecurity",
  "portal:admin:manageServers",
  "portal:admin:manageLicenses",
  "portal:admin:updateOrg",
];

export const BUILT_IN_PRIVILEGES: Readonly<Record<string, readonly string[]>> = {
  org_admin: ADMIN,
  org_publisher: PUBLISHER,
  org_user: USER,
};

/**
 * Standard ArcGIS privileges a custom role may hold that no operation here asks for yet (editing features,
 * premium analysis): accepted and kept, so a role made for ArcGIS works here unchanged, and granting nothing more.
 */
export const KEPT_PRIVILEGES = [
  "features:user:edit",
  "features:user:fullEdit",
  "portal:user:categorizeItems",
  "portal:user:viewTracks",
  "premium:user:geocode",
  "premium:user:networkanalysis",
  "premium:user:spatialanalysis",
  "premium:user:geoenrichment",
  "premium:user:demographics",
  "premium:user:elevation",
  "premium:user:featurereport",
] as const;

/** Every privilege a custom role may hold, in the order a form offers them. */
export const ROLE_PRIVILEGES: readonly string[] = [...ADMIN, ...KEPT_PRIVILEGES];

/** Every privilege string mapgate knows (a custom role may hold any of them). */
export const KNOWN_PRIVILEGES: ReadonlySet<string> = new Set(ROLE_PRIVILEGES);

/** The built-in role a set of privileges amounts to, as the original reports custom roles. */
export function baseRole(privileges: readonly string[]): string {
  if (privileges.some((p) => p.startsWith("portal:admin:"))) return "org_admin";
  if (privileges.some((p) => p.startsWith("portal:publisher:"))) return "org_publisher";
  return "org_user";
}
