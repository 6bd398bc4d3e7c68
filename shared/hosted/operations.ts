// The hosted-layer operations of the sharing wire, served by the function that takes uploads (addItem): analyze a
// file (an uploaded item, or a file sent with the request), publish a file item as a hosted feature service, and an
// item's status (what clients poll after publishing).
import type { FamilyOperation } from "#shared/http/router.ts";
import { badRequest, forbidden } from "#shared/http/errors.ts";
import { requireUser } from "#shared/http/pipeline.ts";
import { canManage, visibleItem } from "#shared/items.ts";
import { analysis, fileTypeOf, parametersOf, publishHosted, publishInput, readTable } from "#shared/hosted/publish.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import { uploadStatus } from "#shared/upload-parts.ts";

const PUBLISH_PRIVILEGE = "portal:publisher:publishFeatures";
const CREATE_ITEM_PRIVILEGE = "portal:user:createItem";

/** POST …/content/features/analyze: `itemId` (a file item the caller sees) or `file`, `filetype`. */
export const analyzeOperation: FamilyOperation = {
  op: { name: "Analyze", postOnly: true, files: ["file"], defaultFormat: "json" },
  compute: async (req) => {
    const what = "Unable to analyze.";
    const { user, privileges } = requireUser(req);
    if (user.role !== "org_admin" && !privileges.includes(CREATE_ITEM_PRIVILEGE)) throw forbidden();
    const parameters = parametersOf(req.params.caseless("analyzeParameters"), "analyzeParameters", what);
    const sent = req.params.file("file");
    const itemId = req.params.caseless("itemId");
    if (sent) {
      const filetype = fileTypeOf(req.params.caseless("filetype"), what);
      const table = readTable(sent.bytes, filetype, parameters, what);
      return analysis(filetype, sent.filename.replace(/\.[^.]*$/, ""), table);
    }
    if (!itemId) throw badRequest(what, ["Give 'itemId' (an uploaded file's item) or send the 'file' itself."]);
    const item = await visibleItem(req.identity, itemId);
    if (!item.file) throw badRequest(what, ["The item holds no uploaded file to analyze."]);
    const filetype = fileTypeOf(req.params.caseless("filetype") ?? item.type, what, item);
    const bytes = await itemFiles().get(item.itemId);
    if (!bytes) throw new Error(`the file of item ${item.itemId} is missing`);
    return analysis(filetype, item.title, readTable(bytes, filetype, parameters, what));
  },
};

/** POST …/content/users/<u>/publish: `itemId`, `filetype`, `publishParameters` → the hosted service. */
export const publishOperation: FamilyOperation = {
  op: { name: "Publish Item", postOnly: true, defaultFormat: "json" },
  compute: async (req) => {
    const what = "Unable to publish item.";
    const identity = requireUser(req);
    const { user } = identity;
    if (user.role !== "org_admin" && !identity.privileges.includes(PUBLISH_PRIVILEGE)) throw forbidden();
    const input = publishInput(req.params, what);
    if (input.overwrite)
      throw badRequest(what, ["Publishing over an existing service (overwrite=true) is not available yet."]);
    const source = await visibleItem(req.identity, input.itemId);
    // The path names whose content the service joins: the caller's own, or (an administrator) the item's owner's.
    const owner = req.pathParameters.username ?? "";
    if (owner !== user.username && !(user.role === "org_admin" && owner === source.owner)) throw forbidden();
    if (!canManage(req.identity, source)) throw forbidden();
    if (!source.file) throw badRequest(what, ["The item holds no uploaded file to publish."]);
    const filetype = fileTypeOf(input.filetype ?? source.type, what, source);
    return publishHosted(
      {
        source: { ...source, file: source.file },
        filetype,
        parameters: input.parameters,
        owner,
        origin: req.httpsOrigin,
      },
      what,
    );
  },
};

/**
 * GET|POST …/content/users/<u>/items/<id>/status: an item made by publishing (or uploaded in one request) is whole
 * once it exists, as a publish finishes within its request: `completed`, as ArcGIS answers a finished job. A file
 * uploaded in parts is `partial`, `processing` or `failed` until its commit makes it whole (shared/upload-parts.ts).
 */
export const statusOperation: FamilyOperation = {
  op: { name: "Item Status", defaultFormat: "json" },
  compute: async (req) => {
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    const jobId = req.params.caseless("jobId");
    return {
      ...(await uploadStatus(req, item)),
      itemId: item.itemId,
      ...(jobId && /^[0-9a-f]{32}$/.test(jobId) ? { jobId } : {}),
    };
  },
};
