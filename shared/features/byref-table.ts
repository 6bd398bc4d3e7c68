// What a table of a registered PostgreSQL database allows an edit through its registered login, read from the
// database's catalog when editing is turned on and again by every edit (a privilege may be revoked in between): the
// login's INSERT, UPDATE and DELETE privileges on it, its columns that the database fills (a default, an identity, a
// generated column) and its geometry column's declared type. Only a plain table with a single-column integer primary
// key is edited: its key numbers a new row (its default or identity), and is the object id.
import type { EditCapability } from "#shared/features/capabilities.ts";
import type { PostGisDatabase } from "#shared/features/postgis.ts";
import type { LayerSchema } from "#shared/features/schema.ts";

export interface TableFacts {
  /** `r` a table, `p` a partitioned table, `v` a view, `m` a materialized view, `f` a foreign table. */
  readonly kind: string;
  readonly privileges: Readonly<Record<"INSERT" | "UPDATE" | "DELETE", boolean>>;
  /** Columns the database fills when a row leaves them out (a default or an identity). */
  readonly defaulted: ReadonlySet<string>;
  /** Generated columns: never written. */
  readonly generated: ReadonlySet<string>;
  /** The geometry column's declared type (`POINT`, `MULTIPOLYGON`, …), as geometry_columns gives it. */
  readonly geometryType?: string;
}

const FACTS = `SELECT c.relkind::text,
  has_table_privilege(current_user, c.oid, 'INSERT'), has_table_privilege(current_user, c.oid, 'UPDATE'),
  has_table_privilege(current_user, c.oid, 'DELETE'),
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
    AND NOT a.attisdropped AND (a.atthasdef OR a.attidentity <> '') AND a.attgenerated = ''),
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
    AND NOT a.attisdropped AND a.attgenerated <> ''),
  (SELECT g.type::text FROM geometry_columns g WHERE g.f_table_schema = n.nspname AND g.f_table_name = c.relname
    AND g.f_geometry_column = $3 LIMIT 1)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`;

/** The facts of a layer's table; undefined when it is no longer there. */
export async function tableFacts(db: PostGisDatabase, schema: LayerSchema): Promise<TableFacts | undefined> {
  const [nsp = "", rel = ""] = schema.table;
  const rows = await db.all(FACTS, [nsp, rel, schema.geometry?.column ?? ""]);
  const row = rows[0];
  if (!row) return undefined;
  const [kind, insert, update, del, defaulted, generated, geometryType] = row as [
    string,
    boolean,
    boolean,
    boolean,
    string[] | null,
    string[] | null,
    string | null,
  ];
  return {
    kind,
    privileges: { INSERT: insert, UPDATE: update, DELETE: del },
    defaulted: new Set(defaulted ?? []),
    generated: new Set(generated ?? []),
    ...(geometryType ? { geometryType: geometryType.toUpperCase() } : {}),
  };
}

/** The privilege each edit capability needs of the registered login. */
export const PRIVILEGE_OF: Readonly<Record<EditCapability, "INSERT" | "UPDATE" | "DELETE">> = {
  Create: "INSERT",
  Update: "UPDATE",
  Delete: "DELETE",
};

/**
 * Why the registered login cannot make edits of `needs` on the layer's table, each problem said plainly (naming the
 * login, the table and the privilege it lacks); none when it can.
 */
export function editProblems(
  schema: LayerSchema,
  facts: TableFacts | undefined,
  needs: Iterable<EditCapability>,
  login: string,
): string[] {
  const table = schema.table.join(".");
  if (!facts) return [`The layer's table ${table} is no longer in its database.`];
  if (facts.kind !== "r" && facts.kind !== "p")
    return [
      `${table} is a ${facts.kind === "v" ? "view" : facts.kind === "m" ? "materialized view" : "foreign table"}: only tables are edited here (publish the table itself to edit it).`,
    ];
  const problems: string[] = [];
  for (const need of needs) {
    const privilege = PRIVILEGE_OF[need];
    if (!facts.privileges[privilege])
      problems.push(
        `The data store's login '${login}' lacks the ${privilege} privilege on ${table} (${need}): GRANT ${privilege} ON ${table} TO ${login}, or leave ${need} off.`,
      );
    if (need === "Create" && !facts.defaulted.has(schema.objectIdField))
      problems.push(
        `${table}'s key ${schema.objectIdField} has no default (a sequence or an identity) to number a new row: features cannot be added.`,
      );
  }
  return problems;
}
