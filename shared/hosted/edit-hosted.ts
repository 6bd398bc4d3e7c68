// The hosted stores' side of editing (shared/hosted/edit.ts reads and checks the request, and answers it): the hosted
// service the caller may edit, its layers checked against their data, and the edits written by the deployment's hosted
// store in one transaction (a GeoPackage under the service's lock), with the edit's event through the outbox. Apart
// from the request's code so the service function, which edits layers read by reference from a database
// (shared/hosted/byref-edit.ts) with the same checks, carries none of the hosted stores.
import { config } from "#shared/config.ts";
import { badRequest, operationNotSupported } from "#shared/errors.ts";
import { openDataset, servesLayer } from "#shared/features/sources.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { underServiceLock } from "#shared/hosted/define.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import {
  checkLayer,
  checkEditBounds,
  type Editor,
  editableService,
  editLayerWith,
  editServiceWith,
  type EditRunner,
  type LayerOperation,
  needsOf,
  notKept,
  type RawAttachments,
  type RawFile,
  type RawLayerEdits,
  WHAT,
} from "#shared/hosted/edit.ts";
import { ownershipFor } from "#shared/features/ownership.ts";
import { editEvent } from "#shared/hosted/edit-events.ts";
import type { EditOutcome, EditRequest, LayerEdit } from "#shared/hosted/store.ts";
import { HOSTED_FOLDER, restServiceUrl } from "#shared/publishing.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import { type Item, noteHostedDataSize, storageUsed } from "#shared/stores/items.ts";
import type { Service } from "#shared/stores/services.ts";
import { serviceQuotaExceeded } from "#shared/uploads.ts";

/** Bytes kept for an attachment of a request: its key, and where its result is (its layer, list and place). */
interface KeptFile {
  readonly key: string;
  readonly layerId: number;
  readonly list: "addResults" | "updateResults";
  readonly index: number;
}

/**
 * Keeps a layer's applyEdits attachment files' bytes, each under a fresh key (before the edit's transaction writes
 * the rows naming them), noting each key and where its result will be.
 */
async function keepFiles(layerId: number, serviceItemId: string, raw: RawAttachments, kept: KeptFile[]) {
  const { keepAttachmentBytes } = await import("#shared/hosted/attachment-charges.ts");
  const keep = async (f: RawFile, list: KeptFile["list"], index: number) => {
    const key = await keepAttachmentBytes(serviceItemId, f.bytes);
    kept.push({ key, layerId, list, index });
    return { name: f.name, contentType: f.contentType, size: f.bytes.length, key };
  };
  const adds = [];
  for (const [i, a] of raw.adds.entries())
    adds.push({ ...(await keep(a, "addResults", i)), globalId: a.globalId, parentGlobalId: a.parentGlobalId });
  const updates = [];
  for (const [i, u] of raw.updates.entries())
    updates.push({ ...(await keep(u, "updateResults", i)), globalId: u.globalId });
  return { adds, updates, deletes: raw.deletes };
}

/** Whether the row naming a kept file was committed. */
const keptBy = (outcome: EditOutcome, k: KeptFile) =>
  outcome.committed &&
  outcome.layers.find((l) => l.layerId === k.layerId)?.attachments?.[k.list][k.index]?.success === true;

async function removeKept(serviceItemId: string, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await (await import("#shared/hosted/attachment-charges.ts")).removeAttachmentBytes(serviceItemId, keys);
}

/**
 * What every change of a hosted service's rows starts from (its features' edits, its attachments'): the deployment's
 * hosted store, refused where its data is not edited in place, and the change's "Features Edited" event, put in the
 * outbox inside the change's transaction and sent once it committed.
 */
export async function hostedEditStart(req: RestRequest, service: Service, moment: number) {
  const store = await hostedStore();
  const hostedData = config().hostedData;
  if (store.kind === "geopackage" && hostedData && "bucket" in hostedData)
    throw operationNotSupported(
      "Editing hosted layers needs the hosting database on AWS (HOSTED_DATABASE): their GeoPackages in the bucket are not edited in place.",
    );
  const server = req.server;
  if (!server) throw new Error("server route without a server");
  const identity = req.identity;
  const event = editEvent(
    {
      portalId: service.portalId,
      itemId: service.itemId,
      url: restServiceUrl(serverUrl(server, req.httpsOrigin), HOSTED_FOLDER, service.name, "FeatureServer"),
      editor: identity.kind === "user" ? identity.user.username : "",
      store: store.kind,
    },
    moment,
  );
  return { store, event };
}

/**
 * An edit that may grow a service's data (adds, updates, attachments added) is refused while its owner, or their
 * organization, is at or past a storage quota: what an edit writes is counted once it committed (the data's size,
 * noteHostedDataSize), so a quota is passed only by the edits under way when it was reached. Deletes are always taken (they make room).
 */
async function checkRoom(item: Item, edits: readonly RawLayerEdits[]): Promise<void> {
  if (!edits.some((e) => e.adds.length > 0 || e.updates.length > 0 || (e.attachments?.adds.length ?? 0) > 0)) return;
  const quota = config().storageQuota;
  const [user, organization] = await Promise.all([storageUsed(item.portalId, item.owner), storageUsed(item.portalId)]);
  if (user >= quota.userBytes) throw serviceQuotaExceeded("user", quota);
  if (organization >= quota.organizationBytes) throw serviceQuotaExceeded("organization", quota);
}

/** Records the data's size an edit left in its item (and its owner's usage); a failure is logged, the edit kept. */
async function noteSize(item: Item, outcome: EditOutcome): Promise<void> {
  if (!outcome.committed || outcome.bytes === undefined) return;
  try {
    await noteHostedDataSize(item, outcome.bytes);
  } catch (err) {
    logger.warn("hosted data size not recorded", { itemId: item.itemId, error: String(err) });
  }
}

/** Checks and makes a request's edits of one hosted service's layers, in one transaction. */
const runEdits: EditRunner = async (req, edits, options, operation) => {
  // Every hosted service is in the Hosted folder: the routes name it (by-reference layers elsewhere are read-only).
  const found = await editableService(req, HOSTED_FOLDER, req.pathParameters.name ?? "", needsOf(edits), operation);
  checkEditBounds(edits);
  await checkRoom(found.item, edits);
  const identity = req.identity;
  const editor: Editor = { username: identity.kind === "user" ? identity.user.username : "", moment: Date.now() };
  const { store, event } = await hostedEditStart(req, found.service, editor.moment);
  // Attachments' bytes kept for this request: those no committed row names are removed after it.
  const kept: KeptFile[] = [];
  const make = async (
    layers: readonly (string | null)[],
    serviceItemId: string,
    source: NonNullable<Service["source"]>,
  ) => {
    const checkedLayers: LayerEdit[] = [];
    for (const e of edits) {
      if (!servesLayer({ ...source, layers: [...layers] }, e.layerId))
        throw badRequest(WHAT, [`The service has no layer or table with id ${e.layerId}.`]);
      const dataset = await openDataset({ ...source, layers: [...layers] }, e.layerId, { extent: false });
      const rules = ownershipFor(identity, found.service, dataset.schema);
      const layer = await checkLayer(dataset, e, options, editor, rules);
      if (e.attachments && !dataset.schema.attachments)
        throw badRequest(WHAT, [
          `Layer ${e.layerId} keeps no attachments (hasAttachments: false): send no 'attachments'.`,
        ]);
      checkedLayers.push(
        e.attachments
          ? { ...layer, attachments: await keepFiles(e.layerId, serviceItemId, e.attachments, kept) }
          : layer,
      );
    }
    const request: EditRequest = {
      layers: checkedLayers,
      rollbackOnFailure: options.rollbackOnFailure,
      moment: editor.moment,
      editId: event.editId,
    };
    return store.edit(serviceItemId, request, event.beforeCommit);
  };
  const source = found.service.source;
  if (!source) throw new Error("a hosted service without a source");
  // A GeoPackage is written in place: under the service's lock, so no definition change (which copies and swaps
  // the file) overlaps it. The database orders its own transactions.
  const outcome = await (
    store.kind === "geopackage"
      ? underServiceLock(found, WHAT, (locked) => {
          const lockedSource = locked.service.source;
          if (!lockedSource) throw new Error("a hosted service without a source");
          return make(locked.layers, locked.service.itemId, lockedSource);
        })
      : make(source.layers ?? [source.path.split("/").at(-1) ?? ""], found.service.itemId, source)
  ).catch(async (err: unknown) => {
    await removeKept(
      found.service.itemId,
      kept.map((k) => k.key),
    );
    return notKept(err);
  });
  // Bytes kept for attachments the request did not keep (rolled back, or failed on their own).
  await removeKept(
    found.service.itemId,
    kept.filter((k) => !keptBy(outcome, k)).map((k) => k.key),
  );
  // After the lock is let go: the next edit of a GeoPackage does not wait on the bus.
  await event.afterCommit(outcome);
  await noteSize(found.item, outcome);
  if (outcome.committed && outcome.removedKeys)
    await (
      await import("#shared/hosted/attachment-charges.ts")
    ).removeAttachmentBytes(found.service.itemId, outcome.removedKeys);
  const counts = outcome.layers.map((l) => ({
    layer: l.layerId,
    added: l.addResults.filter((r) => r.success).length,
    updated: l.updateResults.filter((r) => r.success).length,
    deleted: l.deleteResults.filter((r) => r.success).length,
  }));
  logger.info(outcome.committed ? "hosted layer edited" : "hosted edits rolled back", {
    itemId: found.item.itemId,
    layers: counts,
  });
  return { outcome, moment: editor.moment };
};

/** POST …/FeatureServer/<id>/{applyEdits,addFeatures,updateFeatures,deleteFeatures} of a hosted layer. */
export const editLayer = (req: RestRequest, operation: LayerOperation) => editLayerWith(req, operation, runEdits);

/** POST …/FeatureServer/applyEdits of a hosted service: every layer in one transaction. */
export const editService = (req: RestRequest) => editServiceWith(req, runEdits);
