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
  countOf,
  type Editor,
  editableService,
  editLayerWith,
  editServiceWith,
  type EditRunner,
  type LayerOperation,
  MAX_EDITS,
  needsOf,
  notKept,
  WHAT,
} from "#shared/hosted/edit.ts";
import { editEvent } from "#shared/hosted/edit-events.ts";
import type { EditRequest, LayerEdit } from "#shared/hosted/store.ts";
import { HOSTED_FOLDER, restServiceUrl } from "#shared/publishing.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import type { Service } from "#shared/stores/services.ts";

/** Checks and makes a request's edits of one hosted service's layers, in one transaction. */
const runEdits: EditRunner = async (req, edits, options, operation) => {
  // Every hosted service is in the Hosted folder: the routes name it (by-reference layers elsewhere are read-only).
  const found = await editableService(req, HOSTED_FOLDER, req.pathParameters.name ?? "", needsOf(edits), operation);
  if (countOf(edits) > MAX_EDITS)
    throw badRequest(WHAT, [
      `A request makes at most ${MAX_EDITS} edits (adds, updates and deletes together); this one has ${countOf(edits)}.`,
    ]);
  const seen = new Set<number>();
  for (const e of edits) {
    if (seen.has(e.layerId)) throw badRequest(WHAT, [`Layer ${e.layerId} is named twice in 'edits'.`]);
    seen.add(e.layerId);
  }
  const store = await hostedStore();
  const hostedData = config().hostedData;
  if (store.kind === "geopackage" && hostedData && "bucket" in hostedData)
    throw operationNotSupported(
      "Editing hosted layers needs the hosting database on AWS (HOSTED_DATABASE): their GeoPackages in the bucket are not edited in place.",
    );
  const identity = req.identity;
  const editor: Editor = { username: identity.kind === "user" ? identity.user.username : "", moment: Date.now() };
  const server = req.server;
  if (!server) throw new Error("server route without a server");
  // Its event, put in the outbox inside the edit's transaction and sent once the edit committed.
  const event = editEvent(
    {
      portalId: found.service.portalId,
      itemId: found.service.itemId,
      url: restServiceUrl(serverUrl(server, req.httpsOrigin), HOSTED_FOLDER, found.service.name, "FeatureServer"),
      editor: editor.username,
      store: store.kind,
    },
    editor.moment,
  );
  const make = async (
    layers: readonly (string | null)[],
    serviceItemId: string,
    source: NonNullable<Service["source"]>,
  ) => {
    const checkedLayers: LayerEdit[] = [];
    for (const e of edits) {
      if (!servesLayer({ ...source, layers: [...layers] }, e.layerId))
        throw badRequest(WHAT, [`The service has no layer or table with id ${e.layerId}.`]);
      const dataset = await openDataset({ ...source, layers: [...layers] }, e.layerId);
      checkedLayers.push(await checkLayer(dataset, e, options, editor));
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
  ).catch((err: unknown) => notKept(err));
  // After the lock is let go: the next edit of a GeoPackage does not wait on the bus.
  await event.afterCommit(outcome);
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
