// Turning editing on for a layer published by reference from a registered PostgreSQL database (its owner or an
// administrator, on the admin wire's service-level updateDefinition of capabilities, as a hosted service's): before the
// capabilities are kept, the table is read from the database as the registered login sees it, and each edit asked for
// is refused, with why, unless the login holds its privilege (INSERT for Create, UPDATE for Update, DELETE for Delete)
// and the table can take it (a plain table with a single-column integer key, which numbers new rows for Create). The
// table's tracking columns, when its publisher names them, are checked the same way: each a column of the table of a
// type that holds what the server fills in, not its key, and writable by the login for the edits turned on. Turning
// editing off with no tracking columns named asks the database nothing.
import { EDIT_CAPABILITIES, type EditCapability, capabilitiesOf } from "#shared/features/capabilities.ts";
import { columnNamed, editProblems, tableFacts, trackingProblems } from "#shared/features/byref-table.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { withEditing } from "#shared/features/schema.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { logger } from "#shared/log.ts";
import { type Service, TRACKING_FIELDS, type TrackingFields } from "#shared/stores/services.ts";

/**
 * Throws a 400 naming every reason the service's layer cannot take the edits `capabilities` turn on with the tracking
 * columns `named` (undefined: none); answers those columns as the table names them.
 */
export async function enableByReference(
  service: Service,
  capabilities: string,
  what: string,
  named?: TrackingFields,
): Promise<TrackingFields | undefined> {
  const caps = capabilitiesOf({ capabilities });
  const needs: EditCapability[] = EDIT_CAPABILITIES.filter((c) => caps.has(c.toLowerCase()));
  if (needs.length === 0 && !named) return undefined;
  const source = service.source;
  if (!source || !("connection" in source)) throw new Error("a by-reference service without a database");
  const { openDataset } = await import("#shared/features/sources.ts");
  const { postGisAt } = await import("#shared/features/postgis.ts");
  try {
    const db = await postGisAt(source.datastoreId, source.connection);
    // The table as it is, whatever columns were named before (one since dropped is named again here).
    const { trackingFields: _before, ...bare } = source;
    const dataset = await openDataset(bare, 0);
    const facts = await tableFacts(db, dataset.schema);
    let columns: TrackingFields | undefined;
    if (named && facts) {
      const resolved: Record<string, string> = {};
      for (const role of TRACKING_FIELDS) {
        const name = named[role];
        if (name !== undefined) resolved[role] = columnNamed(facts, name);
      }
      columns = resolved;
      const problems = trackingProblems(dataset.schema, facts, columns);
      if (problems.length > 0) throw badRequest(what, problems);
    }
    const problems = editProblems(
      withEditing(dataset.schema, columns ? { ...dataset.schema.editing, ...columns } : undefined),
      facts,
      needs,
      source.connection.user,
    );
    if (problems.length > 0) throw badRequest(what, problems);
    return columns;
  } catch (err) {
    // The table as the reader cannot serve it (no single-column integer key, gone) or a database that cannot be
    // reached now: said as the reader says it, and editing stays as it was.
    if (err instanceof DatasetError)
      throw badRequest(what, [`The layer's table cannot be edited: ${err.message} Editing stays as it was.`]);
    if (err instanceof ApiError) throw err;
    // The store's secret could not be read (a function without the data stores' grant): said plainly, logged.
    logger.warn("by-reference editing not checked", { itemId: service.itemId, reason: String(err).slice(0, 200) });
    throw badRequest(what, [
      "The layer's database could not be asked whether the data store's login may write the table: editing stays as it was.",
    ]);
  }
}
