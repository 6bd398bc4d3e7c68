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
  /**
   * Every column's type name (pg_type's `typname`: `text`, `varchar`, `timestamptz`, …) and declared length (a
   * varchar's), by column, as the catalog says now (a layer's schema may be a minute old).
   */
  readonly types: ReadonlyMap<string, { readonly type: string; readonly length?: number }>;
  /** Columns the login may not INSERT into, and may not UPDATE (column privileges, the table's included). */
  readonly noInsert: ReadonlySet<string>;
  readonly noUpdate: ReadonlySet<string>;
}

const FACTS = `SELECT c.relkind::text,
  has_table_privilege(current_user, c.oid, 'INSERT'), has_table_privilege(current_user, c.oid, 'UPDATE'),
  has_table_privilege(current_user, c.oid, 'DELETE'),
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
    AND NOT a.attisdropped AND (a.atthasdef OR a.attidentity <> '') AND a.attgenerated = ''),
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
    AND NOT a.attisdropped AND a.attgenerated <> ''),
  (SELECT g.type::text FROM geometry_columns g WHERE g.f_table_schema = n.nspname AND g.f_table_name = c.relname
    AND g.f_geometry_column = $3 LIMIT 1),
  (SELECT json_object_agg(a.attname::text, json_build_array(t.typname::text, a.atttypmod))
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
    AND NOT a.attisdropped AND NOT has_column_privilege(current_user, c.oid, a.attnum, 'INSERT')),
  (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
    AND NOT a.attisdropped AND NOT has_column_privilege(current_user, c.oid, a.attnum, 'UPDATE'))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`;

/** The facts of a layer's table; undefined when it is no longer there. */
export async function tableFacts(db: PostGisDatabase, schema: LayerSchema): Promise<TableFacts | undefined> {
  const [nsp = "", rel = ""] = schema.table;
  const rows = await db.all(FACTS, [nsp, rel, schema.geometry?.column ?? ""]);
  const row = rows[0];
  if (!row) return undefined;
  const [kind, insert, update, del, defaulted, generated, geometryType, types, noInsert, noUpdate] = row as [
    string,
    boolean,
    boolean,
    boolean,
    string[] | null,
    string[] | null,
    string | null,
    Record<string, [string, number]> | null,
    string[] | null,
    string[] | null,
  ];
  return {
    kind,
    privileges: { INSERT: insert, UPDATE: update, DELETE: del },
    defaulted: new Set(defaulted ?? []),
    generated: new Set(generated ?? []),
    ...(geometryType ? { geometryType: geometryType.toUpperCase() } : {}),
    types: new Map(
      Object.entries(types ?? {}).map(([column, [type, typmod]]) => [
        column,
        { type, ...(type === "varchar" && typmod > 4 ? { length: typmod - 4 } : {}) },
      ]),
    ),
    noInsert: new Set(noInsert ?? []),
    noUpdate: new Set(noUpdate ?? []),
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
    // The tracking columns the server fills: all four on an add, the editor's two on an update.
    const e = schema.editing;
    const filled =
      need === "Create"
        ? [e?.creatorField, e?.creationDateField, e?.editorField, e?.editDateField]
        : need === "Update"
          ? [e?.editorField, e?.editDateField]
          : [];
    const denied = privilege === "INSERT" ? facts.noInsert : facts.noUpdate;
    for (const column of filled)
      if (column !== undefined && denied.has(column))
        problems.push(
          `The data store's login '${login}' lacks the ${privilege} privilege on ${table}'s tracking column ${column} (${need} fills it): GRANT ${privilege} (${column}) ON ${table} TO ${login}.`,
        );
  }
  return problems;
}

/**
 * The table's column a definition names: the one of that name, else the only one of that name in another case
 * (clients name fields case-insensitively); the name as given when there is none, for the problem to say so.
 */
export function columnNamed(facts: TableFacts, name: string): string {
  if (facts.types.has(name)) return name;
  const lower = name.toLowerCase();
  const found = [...facts.types.keys()].filter((c) => c.toLowerCase() === lower);
  return found.length === 1 && found[0] !== undefined ? found[0] : name;
}

/** The column types each tracking field takes (pg_type names), and what a problem calls them. */
const TRACKING_TYPES = {
  creatorField: { types: ["text", "varchar"], say: "text or varchar" },
  editorField: { types: ["text", "varchar"], say: "text or varchar" },
  creationDateField: { types: ["timestamp", "timestamptz", "date"], say: "timestamp, timestamptz or date" },
  editDateField: { types: ["timestamp", "timestamptz", "date"], say: "timestamp, timestamptz or date" },
} as const;

/** The longest username (shared/user-admin.ts): a creator or editor column must hold any. */
export const USERNAME_LENGTH = 128;

/**
 * Why the columns named as a by-reference table's tracking fields cannot be (each named by its role): a column the
 * table has not, its key, one the database generates, one of a type that cannot hold what is filled in (a username of
 * up to USERNAME_LENGTH characters, or a moment), one named for two roles. None when all can.
 */
export function trackingProblems(
  schema: LayerSchema,
  facts: TableFacts,
  named: Readonly<Partial<Record<keyof typeof TRACKING_TYPES, string>>>,
): string[] {
  const table = schema.table.join(".");
  const problems: string[] = [];
  const roles = new Map<string, string>();
  for (const [role, column] of Object.entries(named) as [keyof typeof TRACKING_TYPES, string | undefined][]) {
    if (column === undefined) continue;
    const what = `editFieldsInfo.${role} '${column.slice(0, 63)}'`;
    const declared = facts.types.get(column);
    const type = declared?.type;
    const other = roles.get(column);
    if (other !== undefined) {
      problems.push(`${what} is named as ${other} too: each tracking field is a column of its own.`);
      continue;
    }
    roles.set(column, role);
    if (type === undefined) {
      problems.push(`${what} is no column of ${table}.`);
      continue;
    }
    // Fields are found by name in any case (as ArcGIS clients name them): a column whose name another shares in
    // another case could be filled as one and checked by ownership rules as the other.
    const lower = column.toLowerCase();
    const alike = [...facts.types.keys()].filter((c) => c !== column && c.toLowerCase() === lower);
    if (alike.length > 0) {
      problems.push(
        `${what} shares its name with ${alike.map((c) => `'${c.slice(0, 63)}'`).join(", ")} but for case: name a column no other column's name matches in any case.`,
      );
      continue;
    }
    if (column === schema.objectIdField) {
      problems.push(`${what} is the table's key: the key numbers its rows and tracks no edit.`);
      continue;
    }
    if (facts.generated.has(column)) {
      problems.push(`${what} is a generated column: the database computes it, so it cannot be filled.`);
      continue;
    }
    const fits = TRACKING_TYPES[role];
    if (!(fits.types as readonly string[]).includes(type)) {
      problems.push(`${what} is of type ${type.slice(0, 63)}: it must be ${fits.say}.`);
      continue;
    }
    const length = declared?.length;
    if (length !== undefined && length < USERNAME_LENGTH)
      problems.push(
        `${what} is varchar(${length}): it must hold any username (up to ${USERNAME_LENGTH} characters): varchar(${USERNAME_LENGTH}) or longer, or text.`,
      );
  }
  return problems;
}
