// The hosted-layer operations of the sharing wire, served by the function that takes uploads (addItem): analyze a
// file (an uploaded item, or a file sent with the request), publish a file item as a hosted feature service, and an
// item's status (what clients poll after publishing or exporting); and export a hosted layer back to a file item.
import type { FamilyOperation } from "#shared/http/router.ts";
import { badRequest, forbidden } from "#shared/errors.ts";
import { requireUser } from "#shared/http/pipeline.ts";
import { canManage, visibleItem } from "#shared/items.ts";
import { tagsOf } from "#shared/publishing.ts";
import { uploadStatus } from "#shared/upload-parts.ts";
import { addressedServer } from "#shared/http/hosted-server.ts";
import { jobServiceItemId } from "#shared/hosted/publish-job-data.ts";
import { config } from "#shared/config.ts";
import { serviceDefinitionPage } from "#shared/http/definition-page.ts";

/** The file readers and publishing, loaded by the first analyze or publish (uploads never compile them). */
const publishing = () => import("#shared/hosted/publish.ts");

const PUBLISH_PRIVILEGE = "portal:publisher:publishFeatures";
const CREATE_ITEM_PRIVILEGE = "portal:user:createItem";

/** POST …/content/features/analyze: `itemId` (a file item the caller sees) or `file`, `filetype`. */
export const analyzeOperation: FamilyOperation = {
  op: { name: "Analyze", postOnly: true, files: ["file"], defaultFormat: "json" },
  compute: async (req) => {
    const what = "Unable to analyze.";
    const { user, privileges } = requireUser(req);
    if (user.role !== "org_admin" && !privileges.includes(CREATE_ITEM_PRIVILEGE)) throw forbidden();
    const { analysis, fileTypeOf, parametersOf, readTables } = await publishing();
    const { bufferSource, itemFileSource } = await import("#shared/hosted/file-source.ts");
    const parameters = parametersOf(req.params.caseless("analyzeParameters"), "analyzeParameters", what);
    const sent = req.params.file("file");
    const itemId = req.params.caseless("itemId");
    if (sent) {
      const filetype = fileTypeOf(req.params.caseless("filetype"), what);
      return readTables(bufferSource(sent.bytes), filetype, parameters, what, (tables) =>
        analysis(filetype, sent.filename.replace(/\.[^.]*$/, ""), tables),
      );
    }
    if (!itemId) throw badRequest(what, ["Give 'itemId' (an uploaded file's item) or send the 'file' itself."]);
    const item = await visibleItem(req.identity, itemId);
    if (!item.file) throw badRequest(what, ["The item holds no uploaded file to analyze."]);
    const filetype = fileTypeOf(req.params.caseless("filetype") ?? item.type, what, item);
    return readTables(await itemFileSource(item.itemId), filetype, parameters, what, (tables) =>
      analysis(filetype, item.title, tables),
    );
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
    const { fileTypeOf, publishHosted, publishInput } = await publishing();
    const input = publishInput(req.params, what);
    const source = await visibleItem(req.identity, input.itemId);
    // The path names whose content the service joins: the caller's own, or (an administrator) the item's owner's.
    const owner = req.pathParameters.username ?? "";
    if (owner !== user.username && !(user.role === "org_admin" && owner === source.owner)) throw forbidden();
    if (!canManage(req.identity, source)) throw forbidden();
    if (!source.file) throw badRequest(what, ["The item holds no uploaded file to publish."]);
    const filetype = fileTypeOf(input.filetype ?? source.type, what, source);
    const request = {
      source: { ...source, file: source.file },
      filetype,
      parameters: input.parameters,
      owner,
      origin: req.httpsOrigin,
    };
    if (input.overwrite) {
      // Within the request (29 s on AWS): a file that publishing would hand to a job is refused here, said so.
      if (source.file.size > config().publishInRequestBytes)
        throw badRequest(what, [
          `An overwrite takes a file of at most ${Math.floor(config().publishInRequestBytes / 1024 / 1024)} MB (PUBLISH_IN_REQUEST_MB); this one has ${source.file.size} bytes: publish it as a new service instead.`,
        ]);
      // Loaded by the first overwrite: publishing never pays for it.
      const { overwriteHosted } = await import("#shared/hosted/change-data.ts");
      return overwriteHosted(req, request, what);
    }
    // A large file is published by a job (15 minutes of a task, not a request's 29 s), as ArcGIS publishes; what
    // starts jobs is loaded by the first of them.
    return source.file.size <= config().publishInRequestBytes
      ? publishHosted(request, what)
      : (await import("#shared/hosted/publish-job.ts")).startHostedPublish(req, request, what);
  },
};

/**
 * GET|POST …/content/users/<u>/items/<id>/status: a service a publish job makes is `processing` until its job ends,
 * then `completed` or `failed` with the job's message (asked with its `jobId`, as clients poll it); an item that
 * exists (published within its request, or uploaded in one) is whole: `completed`, as ArcGIS answers a finished
 * job. A file uploaded in parts is `partial`, `processing` or `failed` until its commit makes it whole
 * (shared/upload-parts.ts).
 */
export const statusOperation: FamilyOperation = {
  op: { name: "Item Status", defaultFormat: "json" },
  compute: async (req) => {
    const jobId = req.params.caseless("jobId");
    const identity = req.identity;
    // A service a publish job is still making has no item yet: its job answers (to its owner or an administrator).
    const itemId = req.pathParameters.itemId ?? "";
    const ofJob =
      identity.kind === "user" && jobId && /^[0-9a-f]{32}$/.test(jobId) && jobServiceItemId(jobId) === itemId
        ? await (
            await import("#shared/hosted/publish-job.ts")
          ).publishJobStatus(itemId, jobId, {
            username: identity.user.username,
            portalId: identity.portal.portalId,
            admin: identity.user.role === "org_admin",
          })
        : undefined;
    if (ofJob) return ofJob;
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    // An append's statusUrl (shared/hosted/change-data.ts): the append was done within its request, so its job has
    // completed by the time anyone holds this address; answered as ArcGIS answers a finished append job.
    if (req.params.caseless("jobType")?.toLowerCase() === "append" && item.hostedData !== undefined) {
      if (!jobId || !/^[0-9a-f]{32}$/.test(jobId))
        throw badRequest("Unable to get status.", ["'jobId' is missing or no job's."]);
      return { status: "Completed", itemId: item.itemId, jobId };
    }
    return {
      ...(await uploadStatus(req, item)),
      itemId: item.itemId,
      ...(jobId && /^[0-9a-f]{32}$/.test(jobId) ? { jobId } : {}),
    };
  },
};

// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * POST …/content/users/<u>/export: `itemId` (a hosted feature layer), `exportFormat`, `exportParameters`, `title`,
 * `tags` → a file item of the caller's. Its owner and administrators export a layer (ArcGIS also lets others when
 * the layer allows it: mapgate has no such setting yet); the new item is the caller's, so the path names the caller.
 */
export const exportOperation: FamilyOperation = {
  op: { name: "Export Item", postOnly: true, defaultFormat: "json" },
  compute: async (req) => {
    // Loaded by the first export: uploads and publishing never pay for the query's libraries and the file writers.
    const { exportFormatOf, exportHosted, exportParametersOf, WHAT: what } = await import("#shared/hosted/export.ts");
    const identity = requireUser(req);
    const { user } = identity;
    if (user.role !== "org_admin" && !identity.privileges.includes(CREATE_ITEM_PRIVILEGE)) throw forbidden();
    if ((req.pathParameters.username ?? "") !== user.username)
      throw forbidden(["An export becomes an item of the caller's: export into your own content."]);
    const itemId = req.params.caseless("itemId");
    if (itemId === undefined || itemId.trim() === "") throw badRequest(what, ["'itemId' must be specified."]);
    const format = exportFormatOf(req.params.caseless("exportFormat"));
    const parameters = exportParametersOf(
      (await publishing()).parametersOf(req.params.caseless("exportParameters"), "exportParameters", what),
    );
    const title = req.params.caseless("title")?.trim();
    if (title !== undefined && (title.length > 250 || CONTROL.test(title)))
      throw badRequest(what, ["'title' must have at most 250 characters and no control characters."]);
    const source = await visibleItem(req.identity, itemId);
    if (!canManage(req.identity, source)) throw forbidden(["Only the layer's owner or an administrator exports it."]);
    return exportHosted({
      source,
      format,
      parameters,
      owner: user.username,
      title: title || undefined,
      tags: tagsOf(req.params.caseless("tags")),
    });
  },
};

/** POST …/content/users/<u>/createService: an empty hosted feature service (shared/hosted/define.ts). */
export const createServiceOperation: FamilyOperation = {
  op: { name: "Create Service", postOnly: true, defaultFormat: "json" },
  compute: async (req) => {
    const { user, privileges } = requireUser(req);
    if (user.role !== "org_admin" && !privileges.includes(PUBLISH_PRIVILEGE)) throw forbidden();
    // Loaded by the first definition: uploads and publishing never pay for it.
    const { createDefinedService } = await import("#shared/hosted/define.ts");
    return createDefinedService(req);
  },
};

/**
 * POST /<server>/rest/services/<folder>/<name>/FeatureServer/<id>/append: rows of an uploaded file added to (or
 * upserted into) a hosted layer, on its server (its tokens, as the admin wire's).
 */
export const appendOperation: FamilyOperation = {
  op: { name: "Append", postOnly: true, defaultFormat: "json", at: addressedServer },
  compute: async (req) => (await import("#shared/hosted/change-data.ts")).appendToLayer(req),
};

/**
 * POST /<server>/rest/admin/services/…/FeatureServer[/<id>]/<operation>: a hosted service's definition, on its
 * server (its tokens: a server-token for this server, or a portal token of its organization, as every server route).
 */
export const adminServiceOperation: FamilyOperation = {
  op: {
    name: "Service Definition",
    postOnly: true,
    defaultFormat: "json",
    at: addressedServer,
    html: serviceDefinitionPage,
  },
  compute: async (req) => (await import("#shared/hosted/define.ts")).adminOperation(req),
};

/** The editing module, loaded by the first edit (uploads and publishing never pay for it). */
const editing = () => import("#shared/hosted/edit-hosted.ts");

/**
 * POST /<server>/rest/services/<folder>/<name>/FeatureServer/<id>/<operation>: a hosted layer's edits
 * (shared/hosted/edit.ts), on its server (its tokens, as append's).
 */
const layerEdit = (operation: "applyEdits" | "addFeatures" | "updateFeatures" | "deleteFeatures"): FamilyOperation => ({
  op: {
    name: operation === "applyEdits" ? "Apply Edits" : operation,
    postOnly: true,
    defaultFormat: "json",
    at: addressedServer,
  },
  compute: async (req) => (await editing()).editLayer(req, operation),
});
export const applyEditsOperation = layerEdit("applyEdits");
export const addFeaturesOperation = layerEdit("addFeatures");
export const updateFeaturesOperation = layerEdit("updateFeatures");
export const deleteFeaturesOperation = layerEdit("deleteFeatures");

/** POST /<server>/rest/services/<folder>/<name>/FeatureServer/applyEdits: edits of several layers in one transaction. */
export const serviceApplyEditsOperation: FamilyOperation = {
  op: { name: "Apply Edits", postOnly: true, defaultFormat: "json", at: addressedServer },
  compute: async (req) => (await editing()).editService(req),
};

/** The attachments module, loaded by the first change of an attachment. */
const attachments = () => import("#shared/hosted/attachments.ts");

/**
 * POST /<server>/rest/services/Hosted/<name>/FeatureServer/<id>/<object id>/{addAttachment,updateAttachment,
 * deleteAttachments}: a hosted feature's attachments (shared/hosted/attachments.ts), the file as `attachment`.
 */
export const addAttachmentOperation: FamilyOperation = {
  op: { name: "Add Attachment", postOnly: true, defaultFormat: "json", at: addressedServer, files: ["attachment"] },
  compute: async (req) => (await attachments()).addAttachmentOperation(req),
};
export const updateAttachmentOperation: FamilyOperation = {
  op: { name: "Update Attachment", postOnly: true, defaultFormat: "json", at: addressedServer, files: ["attachment"] },
  compute: async (req) => (await attachments()).updateAttachmentOperation(req),
};
export const deleteAttachmentsOperation: FamilyOperation = {
  op: { name: "Delete Attachments", postOnly: true, defaultFormat: "json", at: addressedServer },
  compute: async (req) => (await attachments()).deleteAttachmentsOperation(req),
};
