// GET|POST …/portals/<self | id>/isServiceNameAvailable?name=…&type=…: whether publishing could use that name
// in the root folder of the organization's hosted servers, and for a Feature Service in their Hosted folder too (names
// are unique per folder whatever the type, case-insensitively; a name a publishing job holds is taken). Members only.
import { badRequest } from "#shared/errors.ts";
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { HOSTED_FOLDER, NAME } from "#shared/publishing.ts";
import { ITEM_TYPES } from "#shared/stores/items.ts";
import { listPortalServers } from "#shared/stores/servers.ts";
import { serviceNameTaken } from "#shared/stores/services.ts";

const FAILED = "Unable to check the service name.";
const TYPES = new Set(Object.values(ITEM_TYPES).map((t) => t.toLowerCase()));

export const handler = restHandler({ name: "Is Service Name Available" }, async (req) => {
  const { portal } = requireMember(req);
  const name = req.params.get("name");
  const type = req.params.get("type");
  const problems: string[] = [];
  if (!name) problems.push("'name' must be specified.");
  if (!type) problems.push("'type' must be specified.");
  else if (!TYPES.has(type.toLowerCase()))
    problems.push(`'type' must be one of ${[...new Set(Object.values(ITEM_TYPES))].join(", ")}.`);
  if (problems.length > 0 || !name) throw badRequest(FAILED, problems);
  // A name publishing would refuse is not available (the original answers the same for such names).
  if (!NAME.test(name)) return { available: false };
  const servers = (await listPortalServers(portal.portalId)).filter((s) => s.hosted);
  // A hosted feature service (what clients check before `publish` and `createService`) lives in the Hosted folder.
  const folders = type?.toLowerCase() === "feature service" ? ["", HOSTED_FOLDER] : [""];
  const taken = await Promise.all(
    servers.flatMap((s) => folders.map((folder) => serviceNameTaken(s.serverId, folder, name))),
  );
  return { available: !taken.some(Boolean) };
});
