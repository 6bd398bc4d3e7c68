// A hosted layer's attachments, read as ArcGIS clients read them, by the read-only service function (the caller's
// access to the service was checked before, as for a query): a feature's `…/<layer>/<object id>/attachments`
// (attachmentInfos), one attachment's bytes at `…/attachments/<id>`, and the layer's `queryAttachments` (by
// objectIds, globalIds or a definitionExpression, then attachmentTypes, size, keywords; attachmentGroups). The bytes
// are served as data, never as active content of mapgate's origin: an attachment (Content-Disposition) in a sandbox,
// never sniffed, with the type their own bytes gave when they were added.
import { queryRestriction } from "#shared/features/ownership.ts";
import type { Expr } from "#shared/features/where-tree.ts";
import { ApiError, badRequest, operationNotSupported } from "#shared/errors.ts";
import type { OpenDataset } from "#shared/features/dataset.ts";
import {
  type AttachmentFilter,
  type AttachmentRow,
  attachmentOf,
  findAttachment,
  selectAttachments,
} from "#shared/features/sql/attachments.ts";
import { boolParam } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { Content } from "#shared/http/render.ts";
import { readAttachmentBytes } from "#shared/hosted/attachment-files.ts";
import type { Service } from "#shared/stores/services.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { unavailable } from "#shared/features/serve.ts";
import { openDataset, servesLayer } from "#shared/features/sources.ts";
import { logger } from "#shared/log.ts";
import { StorageError } from "#shared/storage/storage.ts";

const WHAT = "Unable to complete operation.";
/** The most attachments one answer lists, and the most features a queryAttachments reads them of. */
const MAX_ATTACHMENTS = 2000;
const MAX_FEATURES = 2000;
/** How long one read of attachment rows may take. */
const READ_MS = 10_000;
const ID = /^(0|[1-9]\d{0,14})$/;
const GUID = /^\{?([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\}?$/;

const featureNotFound = (id: number) =>
  new ApiError(404, "Feature not found.", [`The layer has no feature with object id ${id}.`]);
const attachmentNotFound = (id: number) =>
  new ApiError(404, "Attachment not found.", [`The feature has no attachment with id ${id}.`]);

/** An attachment's info as ArcGIS lists it. */
function info(a: AttachmentRow, url?: string) {
  return {
    id: a.id,
    globalId: a.globalId,
    ...(a.parentGlobalId !== null ? { parentGlobalId: a.parentGlobalId } : {}),
    name: a.name,
    contentType: a.contentType,
    size: a.size,
    keywords: a.keywords,
    ...(url !== undefined ? { url } : {}),
  };
}

async function rows(dataset: OpenDataset, filter: AttachmentFilter): Promise<AttachmentRow[]> {
  const q = selectAttachments(dataset.emitter, dataset.schema.table, filter);
  return (await dataset.run(q, undefined, Date.now() + READ_MS)).map(attachmentOf);
}

/**
 * The object ids of the features a query names (its grammar and plan: bound values, checked fields), among those the
 * caller may query (`restrict`: their ownership rules, as every query of the layer takes them).
 */
async function idsOf(dataset: OpenDataset, params: Map<string, string>, restrict: Expr | undefined): Promise<number[]> {
  const { runQuery } = await import("#shared/features/query.ts");
  params.set("returnIdsOnly", "true");
  const answer = (await runQuery({ params }, dataset, restrict)) as { objectIds?: number[] | null };
  return answer.objectIds ?? [];
}

/** GET …/<layer>/<object id>/attachments[/<id>] and …/<layer>/queryAttachments of a service at `serviceUrl`. */
export async function serveAttachments(
  req: RestRequest,
  service: Service,
  serviceUrl: string,
  resource: readonly (string | undefined)[],
): Promise<object> {
  const [layer, first, , attachment] = resource;
  const source = service.source;
  if (!source) throw new Error("a feature service without a source");
  if (req.contentFormat) throw badRequest("Invalid format.", [`'f' ${req.contentFormat} is answered by 'query' only.`]);
  const layerId = Number(layer);
  if (!servesLayer(source, layerId)) throw new ApiError(400, "Invalid URL", ["Invalid URL"]);
  let dataset: OpenDataset;
  try {
    dataset = await openDataset(source, layerId, { extent: false });
  } catch (err) {
    if (err instanceof DatasetError || err instanceof StorageError) {
      logger.warn("feature layer unavailable", { itemId: service.itemId, reason: err.message });
      throw unavailable();
    }
    throw err;
  }
  if (!dataset.schema.attachments)
    throw operationNotSupported("The layer keeps no attachments (hasAttachments: false).");
  const layerUrl = `${serviceUrl}/${layerId}`;
  // A feature the caller may not query is not there for its attachments either.
  const restrict = queryRestriction(req.identity, service, dataset.schema);
  if (first === "queryAttachments") return queryAttachments(req, dataset, layerUrl, restrict);
  const objectId = Number(first);
  if ((await idsOf(dataset, new Map([["objectIds", String(objectId)]]), restrict)).length === 0)
    throw featureNotFound(objectId);
  if (attachment === undefined) {
    const found = await rows(dataset, { parentIds: [objectId], limit: MAX_ATTACHMENTS });
    return { attachmentInfos: found.map((a) => info(a)) };
  }
  const id = Number(attachment);
  const [row] = await dataset.run(
    findAttachment(dataset.emitter, dataset.schema.table, { id, parentId: objectId }),
    undefined,
    Date.now() + READ_MS,
  );
  if (!row) throw attachmentNotFound(id);
  const a = attachmentOf(row);
  const bytes = await readAttachmentBytes(service.itemId, a.key);
  // A row names its bytes only once they are kept: missing ones are a fault of the storage (a 500, logged).
  if (!bytes) throw new Error(`the bytes of attachment ${id} of item ${service.itemId} are missing`);
  return new Content(bytes, a.contentType, { attachment: a.name });
}

/** A comma-separated list parameter (absent or blank: undefined), at most `max` entries. */
function list(req: RestRequest, name: string, max: number, problems: string[]): string[] | undefined {
  const raw = req.params.caseless(name)?.trim();
  if (raw === undefined || raw === "") return undefined;
  const items = raw
    .replace(/^\[(.*)\]$/s, "$1")
    .split(",")
    .map((s) => s.trim().replace(/^"(.*)"$/, "$1"))
    .filter((s) => s !== "");
  if (items.length > max) problems.push(`'${name}' lists at most ${max} entries.`);
  return items;
}

async function queryAttachments(
  req: RestRequest,
  dataset: OpenDataset,
  layerUrl: string,
  restrict: Expr | undefined,
): Promise<object> {
  const problems: string[] = [];
  const objectIds = list(req, "objectIds", MAX_FEATURES, problems);
  const globalIds = list(req, "globalIds", MAX_FEATURES, problems);
  const definition = req.params.caseless("definitionExpression")?.trim() || undefined;
  if (!objectIds && !globalIds && !definition)
    problems.push("queryAttachments needs 'objectIds', 'globalIds' or 'definitionExpression' to name the features.");
  for (const id of objectIds ?? [])
    if (!ID.test(id)) problems.push(`'objectIds': ${JSON.stringify(id.slice(0, 32))} is no object id.`);
  const guids = (globalIds ?? []).map((g) => GUID.exec(g)?.[1]);
  if (guids.some((g) => g === undefined)) problems.push("'globalIds' must be global ids ({XXXXXXXX-XXXX-…}).");
  const gidField = dataset.schema.editing?.globalIdField;
  if (globalIds && !gidField) problems.push("The layer has no global ids: name its features by 'objectIds'.");
  const types = list(req, "attachmentTypes", 50, problems);
  for (const t of types ?? [])
    if (!/^[a-z]+(\/[a-z0-9.+-]+)?$/i.test(t))
      problems.push(`'attachmentTypes': ${JSON.stringify(t.slice(0, 32))} is no content type.`);
  const sizes = list(req, "size", 2, problems);
  let size: [number, number] | undefined;
  if (sizes) {
    const [lo, hi] = sizes.map(Number);
    if (
      sizes.length !== 2 ||
      !Number.isSafeInteger(lo) ||
      !Number.isSafeInteger(hi) ||
      (lo as number) < 0 ||
      (hi as number) < (lo as number)
    )
      problems.push("'size' must be a range of bytes: <smallest>,<largest>.");
    else size = [lo as number, hi as number];
  }
  const keywords = list(req, "keywords", 50, problems);
  for (const k of keywords ?? []) if (k.length > 128) problems.push("'keywords': a keyword is at most 128 characters.");
  const returnUrl = boolParam(req.params.caseless("returnUrl"), "returnUrl", problems) ?? false;
  if (problems.length > 0) throw badRequest(WHAT, problems);
  // The features, by the layer's own query (its where grammar binds every value; ids it does not hold drop out).
  const params = new Map<string, string>();
  const wheres: string[] = [];
  if (definition) wheres.push(`(${definition})`);
  if (globalIds && gidField)
    wheres.push(`${gidField} IN (${guids.map((g) => `'{${String(g).toUpperCase()}}'`).join(",")})`);
  params.set("where", wheres.length > 0 ? wheres.join(" AND ") : "1=1");
  if (objectIds && !globalIds) params.set("objectIds", objectIds.join(","));
  const ids = await idsOf(dataset, params, restrict);
  if (ids.length > MAX_FEATURES)
    throw badRequest(WHAT, [
      `The query names ${ids.length} features: queryAttachments reads at most ${MAX_FEATURES} at once.`,
    ]);
  const found =
    ids.length === 0
      ? []
      : await rows(dataset, {
          parentIds: ids,
          ...(types ? { types } : {}),
          ...(size ? { size } : {}),
          ...(keywords ? { keywords } : {}),
          limit: MAX_ATTACHMENTS,
        });
  const groups = new Map<number, { parentObjectId: number; parentGlobalId?: string; attachmentInfos: object[] }>();
  for (const a of found) {
    let group = groups.get(a.parentId);
    if (!group) {
      group = {
        parentObjectId: a.parentId,
        ...(a.parentGlobalId !== null ? { parentGlobalId: a.parentGlobalId } : {}),
        attachmentInfos: [],
      };
      groups.set(a.parentId, group);
    }
    group.attachmentInfos.push(info(a, returnUrl ? `${layerUrl}/${a.parentId}/attachments/${a.id}` : undefined));
  }
  return { attachmentGroups: [...groups.values()] };
}
