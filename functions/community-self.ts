// GET|POST …/sharing/rest/community/self: the signed-in user, with their groups (each with the user's
// membership, as ArcGIS answers it) and the bytes of uploaded files they keep against their quota; 499 to
// anonymous callers (clients rely on it).
import { config } from "#shared/config.ts";
import { groupView, userMembership } from "#shared/groups.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { groupsOf, membershipsOf } from "#shared/stores/groups.ts";
import { storageUsed } from "#shared/stores/items.ts";
import { fullProfile } from "#shared/user-views.ts";

export const handler = restHandler({ name: "User" }, async (req) => {
  const { user, privileges } = requireUser(req);
  const groups = await groupsOf(user);
  const members = await membershipsOf(
    user.username,
    groups.map((g) => g.groupId),
  );
  return {
    ...fullProfile(user, privileges),
    storageUsage: await storageUsed(user.portalId, user.username),
    storageQuota: config().storageQuota.userBytes,
    groups: groups.map((g) => groupView(g, userMembership(g, user.username, members.get(g.groupId)))),
  };
});
