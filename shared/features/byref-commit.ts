// Whether a by-reference layer's edit committed, as its database tells: the edit's event waits in the outbox with the
// edit's transaction id (txid_current(), read inside the edit), and events-redeliver asks txid_status of it after a
// crash between the commit and the bus — mapgate keeps no table of its own in a database it does not own. Kept apart
// from the edit code so the redeliverer loads only this and the reader.
import type { PostgresConnection } from "#shared/stores/datastores.ts";

/**
 * The status of transaction `xid` in a registered database: `committed`, `aborted`, `in progress`, or null when the
 * database no longer knows it (older than its commit log keeps). Throws when the database cannot be asked now.
 */
export async function transactionStatus(
  datastoreId: string,
  connection: PostgresConnection,
  xid: string,
): Promise<string | null> {
  if (!/^\d{1,20}$/.test(xid)) return null;
  const { postGisAt } = await import("#shared/features/postgis.ts");
  const db = await postGisAt(datastoreId, connection);
  const rows = await db.all("SELECT txid_status(CAST($1 AS bigint))", [xid]);
  const status = rows[0]?.[0];
  return typeof status === "string" ? status : null;
}
