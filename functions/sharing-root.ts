// GET …/sharing/rest: the directory. In a browser it shows the signed-in user what this service offers, with
// links to each operation's form (every operation renders its result as a readable page); as JSON it
// answers the version, as the original does. `?jobId=…` is the directory's job lookup (a GET form cannot
// put the id in the path): it sends the browser to that job's page.
import { badRequest } from "#shared/errors.ts";
import { type Directory, directoryPage } from "#shared/directory-page.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { DIRECTORY_PATH } from "#shared/oauth/session.ts";
import { listPortalDataStores } from "#shared/stores/datastores.ts";
import { mayUseDataStore } from "#shared/publishing.ts";
import { PORTAL_REST_VERSION } from "#shared/urls.ts";

const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;

export const handler = restHandler({ name: "Directory", html: directoryPage }, async (req): Promise<object> => {
  const jobId = req.params.get("jobId");
  if (jobId !== undefined) {
    if (!JOB_ID.test(jobId)) throw badRequest("Invalid job id.", ["A job id has 1–64 letters, digits, '-' or '_'."]);
    const key = req.params.get("key");
    const q = new URLSearchParams({ ...(key ? { key } : {}), f: "html" });
    return new Redirect(`${DIRECTORY_PATH}/portals/self/jobs/${jobId}?${q}`);
  }
  if (req.identity.kind !== "user") return { currentVersion: PORTAL_REST_VERSION } satisfies Directory;
  const { user, privileges, portal } = req.identity;
  // The stores the caller may use, by the rule every data store operation asks: no other member's is listed.
  const stores =
    req.format === "html" ? (await listPortalDataStores(portal.portalId)).filter((s) => mayUseDataStore(user, s)) : [];
  return {
    currentVersion: PORTAL_REST_VERSION,
    user: { username: user.username, role: user.role, privileges },
    dataStores: stores.map((s) => ({ datastoreId: s.datastoreId, title: s.title, kind: s.kind, owner: s.owner })),
  } satisfies Directory;
});
