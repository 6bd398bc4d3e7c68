// GET|POST …/sharing/rest/community/self: the signed-in user; 499 to anonymous callers (clients rely on it).
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { fullProfile } from "#shared/user-views.ts";

export const handler = restHandler({ name: "User" }, async (req) => {
  const { user, privileges } = requireUser(req);
  return fullProfile(user, privileges);
});
