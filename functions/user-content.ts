// GET|POST …/sharing/rest/content/users/<username>: the items of a user's root folder that the caller may see,
// newest first, paged with start (1-based) and num (≤ 100), with the user's folders (their own and administrators'
// view). Signed-in callers only. A folder's items are listed by the item-add family (shared/user-content.ts).
import { restHandler } from "#shared/http/pipeline.ts";
import { userContent, userContentPage } from "#shared/user-content.ts";

export const handler = restHandler({ name: "User Content", html: userContentPage }, userContent);
