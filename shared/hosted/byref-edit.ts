// Editing a layer published by reference from a registered PostgreSQL + PostGIS database, once its publisher turned
// editing on (shared/features/byref-enable.ts): the same four operations and the service's applyEdits as a hosted
// layer, POSTed to the service's own URL (the service function serves them, loading this module at the first edit).
// Each request is read and each feature checked by the hosted layers' code (shared/hosted/edit.ts), the rows written by
// it too (shared/hosted/edit-apply.ts writeEdits), in ONE read-write transaction on the data store's own login, each
// row under a savepoint so a row the database itself refuses (its constraints, triggers, types) is that feature's
// error and the others go on. mapgate makes no table there: the edit's event waits in the outbox with the
// transaction's id (txid_current()), which the redeliverer asks the database about after a crash
// (shared/features/byref-commit.ts), and the layers' last edit is kept in DynamoDB (shared/stores/last-edits.ts). The
// tracking columns its publisher named are filled and its ownership rules applied by the same code as a hosted
// layer's (the layer's schema carries them: shared/features/sources.ts withTrackingFields).
import type { Geometry } from "geojson";
import { findCredential } from "#shared/auth/identity.ts";
import { ApiError, badRequest, forbidden, tokenRequired } from "#shared/errors.ts";
import { editProblems, tableFacts, type TableFacts } from "#shared/features/byref-table.ts";
import type { OpenDataset } from "#shared/features/dataset.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { ownershipFor } from "#shared/features/ownership.ts";
import { classifyPgError, postGisAt } from "#shared/features/postgis.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { openDataset, servesLayer } from "#shared/features/sources.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import {
  checkLayer,
  checkMayEdit,
  checkEditBounds,
  type EditRunner,
  editLayerWith,
  editServiceWith,
  type LayerOperation,
  needsOf,
  notKept,
} from "#shared/hosted/edit.ts";
import { EditsRolledBack, RowRefused, writeEdits } from "#shared/hosted/edit-apply.ts";
import { editEvent } from "#shared/hosted/edit-events.ts";
import type { Checked, EditOutcome, EditRequest, LayerEdit } from "#shared/hosted/store.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { restServiceUrl } from "#shared/publishing.ts";
import { recordLastEdit } from "#shared/stores/last-edits.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import type { Service } from "#shared/stores/services.ts";

const WHAT = "Unable to complete operation.";

/** Known by name (the rollback is thrown through the transaction, and may be another chunk's class). */
const rolledBack = (err: unknown): err is EditsRolledBack => err instanceof Error && err.name === "EditsRolledBack";

/**
 * SQLSTATE classes and codes of a row the database refuses, which are that feature's error rather than the request's:
 * data exceptions (22), integrity constraints (23: not null, foreign key, unique, check, exclusion), a value of the
 * wrong type (42804), a generated column written (428C9), and an exception a trigger raised (P0001).
 */
const ROW_REFUSALS = /^(22|23)|^(42804|428C9|P0001)$/;

/** What a refused row's error says: the SQLSTATE and the constraint it broke (never the server's text: it can quote rows). */
function refusal(err: { code?: unknown; constraint?: unknown }): RowRefused {
  const code = String(err.code);
  const constraint = typeof err.constraint === "string" ? ` (constraint ${err.constraint.slice(0, 63)})` : "";
  return new RowRefused({ code: 1000, description: `The database refused the row: SQLSTATE ${code}${constraint}.` });
}

/** The layer's declared geometry, single parts where the table's column holds single parts (a one-part multi fits). */
function asColumn(geometry: Geometry, declared: string | undefined): Geometry {
  const type = declared?.replace(/[ZM]+$/, "");
  if (type === "LINESTRING" && geometry.type === "MultiLineString") {
    const [only, ...more] = geometry.coordinates;
    if (!only || more.length > 0)
      throw new RowRefused({
        code: 1015,
        description: `Geometry could not be set: the table's column holds single lines; this one has ${geometry.coordinates.length} parts.`,
      });
    return { type: "LineString", coordinates: only };
  }
  if (type === "POLYGON" && geometry.type === "MultiPolygon") {
    const [only, ...more] = geometry.coordinates;
    if (!only || more.length > 0)
      throw new RowRefused({
        code: 1015,
        description: `Geometry could not be set: the table's column holds single polygons; this one has ${geometry.coordinates.length} parts.`,
      });
    return { type: "Polygon", coordinates: only };
  }
  return geometry;
}

/**
 * The layer as its edits are checked: fields the database fills when a row leaves them out (a default, an identity)
 * need no value in an add; generated columns, and columns whose type is shown converted (boolean, uuid, JSON), are not
 * written (a value sent for them is an unknown field's error).
 */
function checkedSchema(schema: LayerSchema, facts: TableFacts): LayerSchema {
  return {
    ...schema,
    fields: schema.fields
      .filter((f) => f.convert === undefined && !facts.generated.has(f.column))
      .map((f) => (facts.defaulted.has(f.column) ? { ...f, nullable: true } : f)),
  };
}

/** A layer's checked adds and updates with their geometries as its column holds them. */
function fitted(edit: LayerEdit, declared: string | undefined): LayerEdit {
  const fit = <R extends { readonly geometry?: Geometry | null }>(
    c: Checked<R>,
    objectId: number | null,
  ): Checked<R> => {
    if (!("ok" in c) || !c.ok.geometry) return c;
    try {
      return { ok: { ...c.ok, geometry: asColumn(c.ok.geometry, declared) } };
    } catch (err) {
      if (err instanceof RowRefused) return { failed: err.error, objectId };
      throw err;
    }
  };
  return {
    ...edit,
    adds: edit.adds.map((a) => fit(a, -1)),
    updates: edit.updates.map((u) => fit(u, "ok" in u ? u.ok.id : u.objectId)),
  };
}

/** The runner of a by-reference service's edits (shared/hosted/edit.ts EditRunner). */
function byReference(service: Service): EditRunner {
  return async (req, edits, options) => {
    const identity = req.identity;
    if (identity.kind === "anonymous") throw tokenRequired();
    // The sign-in cookie changes data only from mapgate's own forms (as every state-changing operation: the pipeline
    // checks it for those it knows POST-only; this route also reads, so the check is here).
    if (!findCredential(req.event, req.params, false) && !req.csrfValid)
      throw forbidden(["The form could not be verified (CSRF check failed): reload the page and submit it again."]);
    checkMayEdit(identity, service, needsOf(edits));
    checkEditBounds(edits);
    const source = service.source;
    if (!source || !("connection" in source)) throw new Error("a by-reference edit of a service without a database");
    const server = req.server;
    if (!server) throw new Error("server route without a server");
    const editor = { username: identity.kind === "user" ? identity.user.username : "", moment: Date.now() };
    let xid = "";
    const event = editEvent(
      {
        portalId: service.portalId,
        itemId: service.itemId,
        url: restServiceUrl(serverUrl(server, req.httpsOrigin), service.folder, service.name, "FeatureServer"),
        editor: editor.username,
        store: "datastore",
        awaits: () => ({ store: "datastore", datastoreId: source.datastoreId, connection: source.connection, xid }),
      },
      editor.moment,
    );
    const outcome = await (async (): Promise<EditOutcome> => {
      const db = await postGisAt(source.datastoreId, source.connection);
      const layers: LayerEdit[] = [];
      for (const e of edits) {
        if (!servesLayer(source, e.layerId))
          throw badRequest(WHAT, [`The service has no layer or table with id ${e.layerId}.`]);
        const dataset: OpenDataset = await openDataset(source, e.layerId);
        const facts = await tableFacts(db, dataset.schema);
        // The login may have lost a privilege since editing was turned on: the request is refused whole, saying so.
        const problems = editProblems(dataset.schema, facts, needsOf([e]), source.connection.user);
        if (problems.length > 0 || !facts) throw badRequest(WHAT, problems);
        const checked = await checkLayer(
          { ...dataset, schema: checkedSchema(dataset.schema, facts) },
          e,
          options,
          editor,
          // The caller's ownership rules, as on a hosted layer: only where the publisher named the creator's column.
          ownershipFor(identity, service, dataset.schema),
        );
        layers.push({ ...fitted(checked, facts.geometryType), schema: dataset.schema });
      }
      const request: EditRequest = {
        layers,
        rollbackOnFailure: options.rollbackOnFailure,
        moment: editor.moment,
        editId: event.editId,
      };
      try {
        return await db.transaction(async (run) => {
          // Each row under a savepoint: one the database refuses is undone alone, and told as that feature's error.
          const guarded = async (q: EmittedQuery) => {
            await run("SAVEPOINT mapgate_row", []);
            try {
              const rows = await run(q.sql, q.params);
              await run("RELEASE SAVEPOINT mapgate_row", []);
              return rows;
            } catch (err) {
              await run("ROLLBACK TO SAVEPOINT mapgate_row", []);
              const code = String((err as { code?: unknown }).code ?? "");
              if (ROW_REFUSALS.test(code)) throw refusal(err as { code?: unknown });
              throw classifyPgError(err);
            }
          };
          const written = await writeEdits(guarded, postgresEmitter, request);
          if (written.failed && request.rollbackOnFailure)
            throw new EditsRolledBack({ committed: false, layers: written.layers });
          const changed = written.changedTables.length > 0;
          const kept: EditOutcome = { committed: true, layers: written.layers, changed };
          if (changed) {
            // The transaction's id, which the outbox record keeps (the database says later whether it committed).
            xid = String((await run("SELECT CAST(txid_current() AS text)", []))[0]?.[0] ?? "");
            const edited = written.layers.flatMap((l) =>
              [...l.addResults, ...l.updateResults, ...l.deleteResults].some((r) => r.success) ? [l.layerId] : [],
            );
            await recordLastEdit(service, edited, editor.moment);
          }
          await event.beforeCommit(kept);
          return kept;
        });
      } catch (err) {
        if (rolledBack(err)) return err.outcome;
        throw err;
      }
    })().catch((err: unknown) => {
      if (err instanceof DatasetError) {
        logger.warn("by-reference edit not kept", { itemId: service.itemId, reason: err.message });
        throw new ApiError(500, WHAT, ["The layer's database cannot take the edits now: nothing was written."]);
      }
      return notKept(err);
    });
    await event.afterCommit(outcome);
    logger.info(outcome.committed ? "by-reference layer edited" : "by-reference edits rolled back", {
      itemId: service.itemId,
      layers: outcome.layers.map((l) => ({
        layer: l.layerId,
        added: l.addResults.filter((r) => r.success).length,
        updated: l.updateResults.filter((r) => r.success).length,
        deleted: l.deleteResults.filter((r) => r.success).length,
      })),
    });
    return { outcome, moment: editor.moment };
  };
}

/**
 * POST …/FeatureServer/<id>/{applyEdits,addFeatures,updateFeatures,deleteFeatures} and …/FeatureServer/applyEdits of a
 * by-reference service with editing on (the caller sees it: serving checked).
 */
export function editByReference(
  req: RestRequest,
  service: Service,
  layerId: number | undefined,
  operation: LayerOperation,
): Promise<object> {
  if (layerId === undefined) return editServiceWith(req, byReference(service));
  const layerReq: RestRequest = { ...req, pathParameters: { ...req.pathParameters, layer: String(layerId) } };
  return editLayerWith(layerReq, operation, byReference(service));
}
