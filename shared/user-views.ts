// How a user reads on the wire: the public profile anyone in the organization may see, and the full record
// (email, role, privileges) the user themselves and the organization's administrators see.
import { BUILT_IN_PRIVILEGES, baseRole } from "#shared/auth/privileges.ts";
import type { User } from "#shared/stores/users.ts";

/** The profile members of the user's organization see. */
export function publicProfile(user: User): Record<string, unknown> {
  return {
    // ArcGIS answers a 32-hex id, and the ArcGIS Maps SDK builds `content/users/<id>/…` and
    // `community/users/<id>` from it; ArcGIS REST JS and older SDKs build the same URLs from the username. mapgate
    // answers the username as the id: every such route takes it, with no lookup of one by the other (usernames are
    // letters, digits and `_.@-`, safe unencoded in a path, as the SDK puts the id there).
    id: user.username,
    username: user.username,
    fullName: user.fullName,
    description: user.description === "" ? null : user.description,
    tags: [],
    culture: "en",
    region: null,
    units: "metric",
    thumbnail: null,
    access: "org",
    provider: "arcgis",
    created: user.created,
    modified: user.modified,
  };
}

/** The whole record, for the user and their administrators. */
export function fullProfile(user: User, privileges: readonly string[]): Record<string, unknown> {
  const custom = !(user.role in BUILT_IN_PRIVILEGES);
  return {
    ...publicProfile(user),
    email: user.email,
    orgId: user.portalId,
    // As on the original: a custom role is reported as the built-in role its privileges amount to, plus roleId.
    role: custom ? baseRole(privileges) : user.role,
    ...(custom ? { roleId: user.role } : {}),
    privileges,
    level: "2",
    userLicenseTypeId: "creatorUT",
    // A mapgate account signs in here only (ArcGIS: `arcgisonly`, or `both` for Esri's own sites too).
    userType: "arcgisonly",
    disabled: user.disabled,
  };
}
