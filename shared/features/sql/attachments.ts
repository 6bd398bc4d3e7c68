// The statements of a layer's attachment table, as ArcGIS keeps attachments beside a layer: `<table>__ATTACH`, one row
// per attachment with its id (numbered by the database, never given again), its feature's object id and global id,
// its name, content type, size, keywords and global id, and where its bytes are kept (DATA_KEY: a key in object
// storage, where ArcGIS keeps a DATA blob), for either dialect from its emitter. Every value is bound; identifiers
// are quoted. The hosted stores run them in their transactions (shared/hosted/attachments.ts).
import { createHash } from "node:crypto";
import type { EmittedQuery } from "#shared/features/sql.ts";
import { quoteIdentifier, type SqlEmitter } from "#shared/features/sql/emitter.ts";
import { Binder } from "#shared/features/sql/write.ts";

/** The suffix of a layer's attachment table, as ArcGIS names it. */
export const ATTACH_SUFFIX = "__ATTACH";
/** PostgreSQL's longest identifier, in bytes. */
const MAX_IDENTIFIER = 63;

/**
 * A layer's attachment table's name beside its table: `<table>__ATTACH`, shortened in PostgreSQL past its 63 bytes
 * (the start kept, then a digest of the whole name, so two long names never meet).
 */
export function attachTableName(table: string, emitter: SqlEmitter): string {
  const name = `${table}${ATTACH_SUFFIX}`;
  if (emitter.dialect === "sqlite" || Buffer.byteLength(name) <= MAX_IDENTIFIER) return name;
  const digest = createHash("sha256").update(name).digest("hex").slice(0, 8);
  let start = "";
  let bytes = 0;
  for (const ch of table) {
    bytes += Buffer.byteLength(ch);
    if (bytes > MAX_IDENTIFIER - ATTACH_SUFFIX.length - 9) break;
    start += ch;
  }
  return `${start}_${digest}${ATTACH_SUFFIX}`;
}

/** The attachment table of a layer whose table is `table` (a schema's table in PostgreSQL: the same schema). */
export const attachTableOf = (table: readonly string[], emitter: SqlEmitter): readonly string[] => [
  ...table.slice(0, -1),
  attachTableName(table.at(-1) ?? "", emitter),
];

const qualifiedName = (table: readonly string[]) => table.map(quoteIdentifier).join(".");
// Rows are read by position (ATTACHMENT_COLUMNS' order): no column is described for an answer.
const emitted = (sql: string, b: Binder): EmittedQuery => ({ sql, params: b.params, columns: [] });

/** The columns an attachment's row is read with, in order (what attachmentInfos and the bytes need). */
export const ATTACHMENT_COLUMNS = [
  "ATTACHMENTID",
  "REL_OBJECTID",
  "REL_GLOBALID",
  "GLOBALID",
  "ATT_NAME",
  "CONTENT_TYPE",
  "DATA_SIZE",
  "KEYWORDS",
  "DATA_KEY",
] as const;

/** An attachment's row as read. */
export interface AttachmentRow {
  readonly id: number;
  readonly parentId: number;
  readonly parentGlobalId: string | null;
  readonly globalId: string;
  readonly name: string;
  readonly contentType: string;
  readonly size: number;
  readonly keywords: string;
  readonly key: string;
}

/** A row read with ATTACHMENT_COLUMNS, as an AttachmentRow. */
export function attachmentOf(r: readonly unknown[]): AttachmentRow {
  return {
    id: Number(r[0]),
    parentId: Number(r[1]),
    parentGlobalId: typeof r[2] === "string" ? r[2] : null,
    globalId: String(r[3] ?? ""),
    name: String(r[4] ?? ""),
    contentType: String(r[5] ?? ""),
    size: Number(r[6] ?? 0),
    keywords: typeof r[7] === "string" ? r[7] : "",
    key: String(r[8] ?? ""),
  };
}

/** The attachment table and its index on the feature's object id (what every read and cascade looks rows up by). */
export function attachTableDdl(emitter: SqlEmitter, table: readonly string[]): string[] {
  const attach = attachTableOf(table, emitter);
  const index = quoteIdentifier(`${attach.at(-1) ?? ""}_rel`.slice(0, MAX_IDENTIFIER));
  return [
    `CREATE TABLE ${qualifiedName(attach)} (${emitter.identityKey("ATTACHMENTID")}, "REL_OBJECTID" BIGINT NOT NULL, "REL_GLOBALID" TEXT, "GLOBALID" TEXT NOT NULL UNIQUE, "ATT_NAME" TEXT NOT NULL, "CONTENT_TYPE" TEXT NOT NULL, "DATA_SIZE" BIGINT NOT NULL, "KEYWORDS" TEXT, "DATA_KEY" TEXT NOT NULL)`,
    `CREATE INDEX ${index} ON ${qualifiedName(attach)} ("REL_OBJECTID")`,
  ];
}

/** What a new attachment's row holds (its bytes already kept under `key`). */
export interface NewAttachment {
  readonly globalId: string;
  readonly name: string;
  readonly contentType: string;
  readonly size: number;
  readonly keywords: string | null;
  readonly key: string;
}

/**
 * INSERT of an attachment of the feature whose object id (or, with `byGlobalId`, global id) is given, taken from the
 * layer's row in the same statement: no row answered means there is no such feature. Answers the attachment's id and
 * its feature's object id. `globalIdColumn` is the layer's global id column (absent: the layer has none).
 */
export function insertAttachment(
  emitter: SqlEmitter,
  layer: { readonly table: readonly string[]; readonly idColumn: string; readonly globalIdColumn?: string },
  parent: { readonly objectId: number } | { readonly globalId: string },
  a: NewAttachment,
): EmittedQuery {
  const b = new Binder(emitter);
  const attach = qualifiedName(attachTableOf(layer.table, emitter));
  const id = quoteIdentifier(layer.idColumn);
  const gid = layer.globalIdColumn ? quoteIdentifier(layer.globalIdColumn) : "NULL";
  const values = [
    b.bind(a.globalId, "text"),
    b.bind(a.name, "text"),
    b.bind(a.contentType, "text"),
    b.bind(a.size, "bigint"),
    a.keywords === null ? "NULL" : b.bind(a.keywords, "text"),
    b.bind(a.key, "text"),
  ];
  const where =
    "objectId" in parent
      ? `${id} = ${b.bind(parent.objectId, "bigint")}`
      : `${gid} = ${b.bind(parent.globalId, "text")}`;
  return emitted(
    `INSERT INTO ${attach} ("REL_OBJECTID", "REL_GLOBALID", "GLOBALID", "ATT_NAME", "CONTENT_TYPE", "DATA_SIZE", "KEYWORDS", "DATA_KEY") SELECT ${id}, ${gid}, ${values.join(", ")} FROM ${qualifiedName(layer.table)} WHERE ${where} RETURNING "ATTACHMENTID", "REL_OBJECTID"`,
    b,
  );
}

/** Which attachment an update or delete names: its id of a feature (by object id), or its global id. */
export type AttachmentKey = { readonly id: number; readonly parentId: number } | { readonly globalId: string };

const keyCondition = (b: Binder, key: AttachmentKey) =>
  "globalId" in key
    ? `"GLOBALID" = ${b.bind(key.globalId, "text")}`
    : `"ATTACHMENTID" = ${b.bind(key.id, "bigint")} AND "REL_OBJECTID" = ${b.bind(key.parentId, "bigint")}`;

/**
 * The row of one attachment; with `forChange`, as it is before a change (its bytes' key is what the change removes
 * after it commits), locked for it where the dialect locks rows (a GeoPackage's transaction holds the whole file).
 */
export function findAttachment(
  emitter: SqlEmitter,
  table: readonly string[],
  key: AttachmentKey,
  forChange = false,
): EmittedQuery {
  const b = new Binder(emitter);
  const lock = forChange && emitter.dialect === "postgres" ? " FOR UPDATE" : "";
  return emitted(
    `SELECT ${ATTACHMENT_COLUMNS.map(quoteIdentifier).join(", ")} FROM ${qualifiedName(attachTableOf(table, emitter))} WHERE ${keyCondition(b, key)}${lock}`,
    b,
  );
}

/** UPDATE of an attachment's file (its name, type, size, keywords and the key of its new bytes) by its id. */
export function updateAttachment(
  emitter: SqlEmitter,
  table: readonly string[],
  id: number,
  a: Omit<NewAttachment, "globalId">,
): EmittedQuery {
  const b = new Binder(emitter);
  const keywords = a.keywords === null ? quoteIdentifier("KEYWORDS") : b.bind(a.keywords, "text");
  return emitted(
    `UPDATE ${qualifiedName(attachTableOf(table, emitter))} SET "ATT_NAME" = ${b.bind(a.name, "text")}, "CONTENT_TYPE" = ${b.bind(a.contentType, "text")}, "DATA_SIZE" = ${b.bind(a.size, "bigint")}, "KEYWORDS" = ${keywords}, "DATA_KEY" = ${b.bind(a.key, "text")} WHERE "ATTACHMENTID" = ${b.bind(id, "bigint")} RETURNING "ATTACHMENTID"`,
    b,
  );
}

/** DELETE of attachments by id, answering each removed one's id and its bytes' key. */
export function deleteAttachments(emitter: SqlEmitter, table: readonly string[], ids: readonly number[]): EmittedQuery {
  const b = new Binder(emitter);
  return emitted(
    `DELETE FROM ${qualifiedName(attachTableOf(table, emitter))} WHERE ${emitter.idsIn(b, quoteIdentifier("ATTACHMENTID"), ids)} RETURNING "ATTACHMENTID", "DATA_KEY"`,
    b,
  );
}

/** DELETE of every attachment of features (deleted with them), answering the removed bytes' keys. */
export function deleteAttachmentsOf(
  emitter: SqlEmitter,
  table: readonly string[],
  parentIds: readonly number[],
): EmittedQuery {
  const b = new Binder(emitter);
  return emitted(
    `DELETE FROM ${qualifiedName(attachTableOf(table, emitter))} WHERE ${emitter.idsIn(b, quoteIdentifier("REL_OBJECTID"), parentIds)} RETURNING "DATA_KEY"`,
    b,
  );
}

/** DELETE of every attachment of a layer (a truncate of its attachments only), answering the bytes' keys. */
export function deleteAllAttachments(emitter: SqlEmitter, table: readonly string[]): EmittedQuery {
  return {
    sql: `DELETE FROM ${qualifiedName(attachTableOf(table, emitter))} RETURNING "DATA_KEY"`,
    params: [],
    columns: [],
  };
}

/** Every attachment's bytes' key of a layer (a truncate or a layer's deletion removes them all). */
export function allAttachmentKeys(emitter: SqlEmitter, table: readonly string[]): string {
  return `SELECT "DATA_KEY" FROM ${qualifiedName(attachTableOf(table, emitter))}`;
}

/** What a query of attachments filters by (queryAttachments, a feature's attachmentInfos). */
export interface AttachmentFilter {
  /** The features' object ids (already narrowed by a definition expression, when one was given). */
  readonly parentIds: readonly number[];
  /** Content types: an exact type, or a whole family (`image`: every image/… type). */
  readonly types?: readonly string[];
  /** Size in bytes, inclusive. */
  readonly size?: readonly [number, number];
  /** Any of these keywords among the attachment's comma-separated keywords (compared whole, case-insensitively). */
  readonly keywords?: readonly string[];
  /** The most rows answered. */
  readonly limit: number;
}

/** The attachments of features, filtered, in (feature, attachment id) order. */
export function selectAttachments(emitter: SqlEmitter, table: readonly string[], f: AttachmentFilter): EmittedQuery {
  const b = new Binder(emitter);
  const conditions = [emitter.idsIn(b, quoteIdentifier("REL_OBJECTID"), f.parentIds)];
  if (f.types && f.types.length > 0)
    conditions.push(
      `(${f.types
        .map((t) =>
          t.includes("/")
            ? // A type as kept may carry parameters (text/plain; charset=utf-8).
              `(lower("CONTENT_TYPE") = ${b.bind(t.toLowerCase(), "text")} OR lower("CONTENT_TYPE") LIKE ${b.bind(`${t.toLowerCase()};%`, "text")})`
            : `lower("CONTENT_TYPE") LIKE ${b.bind(`${t.toLowerCase()}/%`, "text")}`,
        )
        .join(" OR ")})`,
    );
  if (f.size) conditions.push(`"DATA_SIZE" BETWEEN ${b.bind(f.size[0], "bigint")} AND ${b.bind(f.size[1], "bigint")}`);
  if (f.keywords && f.keywords.length > 0)
    // Each keyword among the list, as the list is kept (`a,b,c`): the list fenced with commas, spaces dropped.
    conditions.push(
      `(${f.keywords
        .map(
          (k) =>
            `(',' || replace(lower(COALESCE("KEYWORDS", '')), ' ', '') || ',') LIKE ${b.bind(`%,${k.toLowerCase().replace(/[ %_]/g, "")},%`, "text")}`,
        )
        .join(" OR ")})`,
    );
  return emitted(
    `SELECT ${ATTACHMENT_COLUMNS.map(quoteIdentifier).join(", ")} FROM ${qualifiedName(attachTableOf(table, emitter))} WHERE ${conditions.join(" AND ")} ORDER BY "REL_OBJECTID", "ATTACHMENTID" LIMIT ${b.bind(f.limit, "bigint")}`,
    b,
  );
}
