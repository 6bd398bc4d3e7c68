// GET|POST …/sharing/rest/community/self: the signed-in user, with their groups; 499 to anonymous callers
// (clients rely on it).
import { groupView } from "#shared/groups.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { groupsOf } from "#shared/stores/groups.ts";
import { fullProfile } from "#shared/user-views.ts";

export const handler = restHandler({ name: "User" }, async (req) => {
  const { user, privileges } = requireUser(req);
  return { ...fullProfile(user, privileges), groups: (await groupsOf(user)).map((g) => groupView(g)) };
});
