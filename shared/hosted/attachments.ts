// A hosted layer's attachments, changed as ArcGIS clients change them: `…/<layer>/<object id>/addAttachment` (a
// multipart `attachment` file, optional `keywords`), `updateAttachment` (`attachmentId`, a new file) and
// `deleteAttachments` (`attachmentIds`). Who may: the editing rule (shared/hosted/edit.ts editableService): an
// attachment is added with Create or Update, changed with Update, deleted with Update or Delete. Each change is all or
// nothing across the bytes and the row: new bytes are kept first under a fresh key, then the row is written in one
// transaction of the hosted store (a GeoPackage under the service's lock), and the bytes a change let go of are
// removed only after it committed; a failed change removes the bytes it kept. A crash between the two leaves bytes no
// row names, never a row naming missing bytes. The layer's last edit moves with each change.
import { ApiError, badRequest, operationNotSupported } from "#shared/errors.ts";
import type { EditCapability } from "#shared/features/capabilities.ts";
import { openDataset, servesLayer } from "#shared/features/sources.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import {
  attachmentOf,
  deleteAttachments,
  findAttachment,
  insertAttachment,
  updateAttachment,
} from "#shared/features/sql/attachments.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { underServiceLock } from "#shared/hosted/define.ts";
import { editableService } from "#shared/hosted/edit.ts";
import { attachmentAccess, deniedByOwnership, logEditId, recordEdits } from "#shared/hosted/edit-apply.ts";
import { hostedEditStart } from "#shared/hosted/edit-hosted.ts";
import { ownershipFor } from "#shared/features/ownership.ts";
import { attachmentName, attachmentType, MAX_ATTACHMENT_BYTES } from "#shared/hosted/attachment-files.ts";
import { keepAttachmentBytes, removeAttachmentBytes } from "#shared/hosted/attachment-charges.ts";
import type { EditOutcome, EditResult, LayerEdit, LayerEditResults, Transaction } from "#shared/hosted/store.ts";
import { logger } from "#shared/log.ts";
import { HOSTED_FOLDER } from "#shared/publishing.ts";
import type { Service } from "#shared/stores/services.ts";

const WHAT = "Unable to complete operation.";
/** The longest keywords text an attachment keeps. */
const MAX_KEYWORDS = 1024;
/** The most attachments one deleteAttachments names. */
const MAX_IDS = 1000;
const ID = /^(0|[1-9]\d{0,14})$/;

/** ArcGIS's answer for a change of an attachment the feature does not hold. */
const missing = (verb: "Update" | "Delete"): EditResult["error"] => ({
  code: 1019,
  description: `${verb} for the object was not attempted. Object may not exist.`,
});

const featureNotFound = (id: number) =>
  new ApiError(404, "Feature not found.", [`The layer has no feature with object id ${id}.`]);

/** The layer id and object id the path names. */
function pathIds(req: RestRequest): { layerId: number; objectId: number } {
  const layer = req.pathParameters.layer ?? "";
  const oid = req.pathParameters.oid ?? "";
  if (!ID.test(layer) || Number(layer) > 999_999_999)
    throw new ApiError(404, "Not Found", [`'${layer.slice(0, 32)}' is no layer id.`]);
  if (!ID.test(oid) || !Number.isSafeInteger(Number(oid)))
    throw badRequest(WHAT, [`'${oid.slice(0, 32)}' is no object id.`]);
  return { layerId: Number(layer), objectId: Number(oid) };
}

/** The keywords sent (absent: none; kept as text of at most MAX_KEYWORDS characters). */
function keywordsOf(req: RestRequest): string | null {
  const raw = req.params.caseless("keywords");
  if (raw === undefined) return null;
  // eslint-disable-next-line no-control-regex -- control characters are never kept in keywords
  if (raw.length > MAX_KEYWORDS || /[\u0000-\u001f\u007f]/.test(raw))
    throw badRequest(WHAT, [
      `'keywords' must be text of at most ${MAX_KEYWORDS} characters, without control characters.`,
    ]);
  return raw;
}

/** The file sent as `attachment`: within the size limit, of a kind attachments take, its name and type as kept. */
function fileOf(req: RestRequest) {
  const file = req.params.file("attachment");
  if (!file) throw badRequest(WHAT, ["'attachment' must be a file sent as multipart/form-data."]);
  if (file.bytes.length > MAX_ATTACHMENT_BYTES)
    throw badRequest(WHAT, [
      `The attachment is ${file.bytes.length} bytes: an attachment is at most ${MAX_ATTACHMENT_BYTES} bytes.`,
    ]);
  const name = attachmentName(file.filename) || "attachment";
  const kind = attachmentType(file.bytes, name);
  if ("refused" in kind) throw badRequest(WHAT, [kind.refused]);
  return { bytes: file.bytes, name, contentType: kind.type };
}

/** A layer's table and columns as a change of its attachments needs them. */
interface AttachedLayer {
  readonly schema: LayerSchema;
  readonly idColumn: string;
  readonly globalIdColumn?: string;
  /**
   * Whether the caller's ownership rules let them change feature `objectId`'s attachments (an update of the feature, as
   * ArcGIS counts it): asked inside the change's transaction.
   */
  readonly access: (tx: Transaction, objectId: number) => Promise<"ok" | "denied" | "missing">;
}

/** What a change's work answers: its value, and the attachments it changed (absent: none, so no event). */
interface Changed<T> {
  readonly value: T;
  readonly changed?: Partial<NonNullable<LayerEditResults["attachments"]>>;
}

/**
 * Runs a change of layer `layerId`'s attachments: the service found and the caller checked, the layer opened (it
 * must keep attachments), `work` run in one transaction of the store (a GeoPackage under the service's lock) with the
 * layer's last edit moved. `work` answers its result; nothing it throws is an ApiError (the database's transaction
 * maps what it throws).
 */
async function changeAttachments<T>(
  req: RestRequest,
  layerId: number,
  needs: readonly EditCapability[],
  operation: string,
  work: (tx: Transaction, layer: AttachedLayer, serviceItemId: string) => Promise<Changed<T>>,
): Promise<T> {
  const found = await editableService(
    req,
    HOSTED_FOLDER,
    req.pathParameters.name ?? "",
    new Set(needs),
    operation,
    true,
  );
  const moment = Date.now();
  const { store, event } = await hostedEditStart(req, found.service, moment);
  let outcome: EditOutcome | undefined;
  const run = async (service: Service, layers: readonly (string | null)[]) => {
    const source = service.source;
    if (!source) throw new Error("a hosted service without a source");
    const at = { ...source, layers: [...layers] };
    if (!servesLayer(at, layerId)) throw badRequest(WHAT, [`The service has no layer or table with id ${layerId}.`]);
    const schema = (await openDataset(at, layerId, { extent: false })).schema;
    if (!schema.attachments)
      throw operationNotSupported(
        "The layer keeps no attachments (hasAttachments: false): its owner turns them on with updateDefinition.",
      );
    const column = (name: string | undefined) =>
      name === undefined ? undefined : schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase())?.column;
    // The service as read under its lock (a GeoPackage's): its ownership settings as they are now.
    const rules = ownershipFor(req.identity, service, schema);
    const ownership: LayerEdit["ownership"] = rules
      ? { column: rules.field.column, query: rules.query, update: rules.update, delete: rules.delete }
      : undefined;
    const layer: AttachedLayer = {
      schema,
      idColumn: column(schema.objectIdField) ?? schema.objectIdField,
      ...(column(schema.editing?.globalIdField) ? { globalIdColumn: column(schema.editing?.globalIdField) } : {}),
      access: (tx, objectId) => attachmentAccess((q) => tx.run(q), tx.emitter, schema, ownership, { objectId }),
    };
    return store.transact(service.itemId, async (tx) => {
      const { value, changed } = await work(tx, layer, service.itemId);
      // Nothing changed (an attachment not there, a refusal): the layer's last edit stays, and no event is raised.
      if (changed) {
        const run = (q: EmittedQuery) => tx.run(q);
        await recordEdits(run, tx.emitter, tx.container, [schema.table.at(-1) ?? ""], moment);
        const attachments = { addResults: [], updateResults: [], deleteResults: [], ...changed };
        const layerResults = { layerId, addResults: [], updateResults: [], deleteResults: [], attachments };
        outcome = { committed: true, changed: true, layers: [layerResults] };
        await logEditId(run, tx.emitter, tx.container, event.editId, moment);
        await event.beforeCommit(outcome);
      }
      return value;
    });
  };
  const source = found.service.source;
  if (!source) throw new Error("a hosted service without a source");
  const value = await (store.kind === "geopackage"
    ? underServiceLock(found, WHAT, (locked) => run(locked.service, locked.layers))
    : run(found.service, source.layers ?? [source.path.split("/").at(-1) ?? ""]));
  // Committed (and, for a GeoPackage, its lock let go): the event is sent.
  if (outcome) await event.afterCommit(outcome);
  return value;
}

/** A store's failure: the caller hears it plainly, the operator reads why in the log. */
function notKept(err: unknown): never {
  if (err instanceof ApiError) throw err;
  logger.error("hosted attachment change not kept", { error: err instanceof Error ? err.message : String(err) });
  throw new ApiError(500, WHAT, ["The attachment could not be stored: nothing was changed. Try again later."]);
}

/** POST …/<layer>/<object id>/addAttachment. */
export async function addAttachmentOperation(req: RestRequest): Promise<object> {
  const { layerId, objectId } = pathIds(req);
  const file = fileOf(req);
  const keywords = keywordsOf(req);
  const globalId = `{${crypto.randomUUID().toUpperCase()}}`;
  let key: string | undefined;
  let serviceItemId = "";
  try {
    const id = await changeAttachments<number | "denied" | "missing" | undefined>(
      req,
      layerId,
      ["Create", "Update"],
      "addAttachment",
      async (tx, layer, svc) => {
        serviceItemId = svc;
        const reach = await layer.access(tx, objectId);
        if (reach !== "ok") return { value: reach };
        // The bytes first, whole under a fresh key: the row that names them is written after.
        key = await keepAttachmentBytes(svc, file.bytes);
        const [row] = await tx.run(
          insertAttachment(
            tx.emitter,
            {
              table: layer.schema.table,
              idColumn: layer.idColumn,
              ...(layer.globalIdColumn ? { globalIdColumn: layer.globalIdColumn } : {}),
            },
            { objectId },
            { globalId, name: file.name, contentType: file.contentType, size: file.bytes.length, keywords, key },
          ),
        );
        if (!row) return { value: undefined };
        const id = Number(row[0]);
        return { value: id, changed: { addResults: [{ objectId: id, globalId, success: true }] } };
      },
    );
    if (id === undefined || id === "missing") throw featureNotFound(objectId);
    if (id === "denied")
      return { addAttachmentResult: { objectId: -1, globalId: null, success: false, error: deniedByOwnership() } };
    logger.info("attachment added", { itemId: serviceItemId, layer: layerId, objectId, attachmentId: id });
    return { addAttachmentResult: { objectId: id, globalId, success: true } };
  } catch (err) {
    if (key !== undefined) await removeAttachmentBytes(serviceItemId, [key]);
    return notKept(err);
  }
}

/** POST …/<layer>/<object id>/updateAttachment: the attachment's file (and keywords, when sent) replaced. */
export async function updateAttachmentOperation(req: RestRequest): Promise<object> {
  const { layerId, objectId } = pathIds(req);
  const raw = req.params.caseless("attachmentId")?.trim() ?? "";
  if (!ID.test(raw)) throw badRequest(WHAT, ["'attachmentId' must be an attachment's id (a whole number)."]);
  const attachmentId = Number(raw);
  const file = fileOf(req);
  const keywords = keywordsOf(req);
  let key: string | undefined;
  let serviceItemId = "";
  try {
    const outcome = await changeAttachments<ReturnType<typeof attachmentOf> | "denied" | undefined>(
      req,
      layerId,
      ["Update"],
      "updateAttachment",
      async (tx, layer, svc) => {
        serviceItemId = svc;
        const reach = await layer.access(tx, objectId);
        if (reach === "denied") return { value: reach };
        const [found] =
          reach === "ok"
            ? await tx.run(
                findAttachment(tx.emitter, layer.schema.table, { id: attachmentId, parentId: objectId }, true),
              )
            : [];
        if (!found) return { value: undefined };
        const before = attachmentOf(found);
        key = await keepAttachmentBytes(svc, file.bytes);
        await tx.run(
          updateAttachment(tx.emitter, layer.schema.table, attachmentId, {
            name: file.name,
            contentType: file.contentType,
            size: file.bytes.length,
            keywords,
            key,
          }),
        );
        return {
          value: before,
          changed: { updateResults: [{ objectId: attachmentId, globalId: before.globalId, success: true }] },
        };
      },
    );
    if (!outcome || outcome === "denied") {
      const error = outcome === "denied" ? deniedByOwnership() : missing("Update");
      return { updateAttachmentResult: { objectId: attachmentId, globalId: null, success: false, error } };
    }
    // Committed: the old bytes are no row's any more.
    await removeAttachmentBytes(serviceItemId, [outcome.key]);
    return { updateAttachmentResult: { objectId: attachmentId, globalId: outcome.globalId, success: true } };
  } catch (err) {
    if (key !== undefined) await removeAttachmentBytes(serviceItemId, [key]);
    return notKept(err);
  }
}

/** POST …/<layer>/<object id>/deleteAttachments: `attachmentIds` (`1,2` or `[1,2]`), each its own result. */
export async function deleteAttachmentsOperation(req: RestRequest): Promise<object> {
  const { layerId, objectId } = pathIds(req);
  const raw = (req.params.caseless("attachmentIds") ?? "").trim().replace(/^\[(.*)\]$/s, "$1");
  const parts = raw === "" ? [] : raw.split(",").map((s) => s.trim());
  if (parts.length === 0) throw badRequest(WHAT, ["'attachmentIds' must name at least one attachment id."]);
  if (parts.length > MAX_IDS) throw badRequest(WHAT, [`'attachmentIds' names at most ${MAX_IDS} attachments.`]);
  const bad = parts.filter((p) => !ID.test(p));
  if (bad.length > 0)
    throw badRequest(WHAT, [
      `'attachmentIds' must be attachment ids (whole numbers), not ${JSON.stringify(bad[0]?.slice(0, 32))}.`,
    ]);
  const ids = [...new Set(parts.map(Number))];
  let serviceItemId = "";
  const { results, keys } = await changeAttachments(
    req,
    layerId,
    ["Update", "Delete"],
    "deleteAttachments",
    async (tx, layer, svc) => {
      serviceItemId = svc;
      const reach = await layer.access(tx, objectId);
      if (reach !== "ok") {
        const error = reach === "denied" ? deniedByOwnership() : missing("Delete");
        return {
          value: {
            keys: [],
            results: ids.map((id): EditResult => ({ objectId: id, globalId: null, success: false, error })),
          },
        };
      }
      const found = new Map<number, ReturnType<typeof attachmentOf>>();
      for (const id of ids) {
        const [row] = await tx.run(findAttachment(tx.emitter, layer.schema.table, { id, parentId: objectId }, true));
        if (row) found.set(id, attachmentOf(row));
      }
      const removed =
        found.size > 0 ? await tx.run(deleteAttachments(tx.emitter, layer.schema.table, [...found.keys()])) : [];
      const results = ids.map((id): EditResult => {
        const a = found.get(id);
        return a
          ? { objectId: id, globalId: a.globalId, success: true }
          : { objectId: id, globalId: null, success: false, error: missing("Delete") };
      });
      return {
        value: { keys: removed.map((r) => String(r[1])), results },
        ...(found.size > 0 ? { changed: { deleteResults: results } } : {}),
      };
    },
  ).catch((err: unknown) => notKept(err));
  await removeAttachmentBytes(serviceItemId, keys);
  return { deleteAttachmentResults: results };
}
