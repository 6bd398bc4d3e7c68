// Who may see and change which features of a hosted feature service: ownership-based access control, as ArcGIS
// keeps it (its owner sets `editorTrackingInfo` on the service's definition; its layers advertise
// `ownershipBasedAccessControlForFeatures`), and editing by anonymous callers ("public data collection"), which its
// owner turns on for a service shared with everyone. A feature's owner is its creator, as the layer's editor
// tracking recorded it; a feature made by an anonymous caller has an empty creator, and anyone who may edit the
// layer may then reach it (as ArcGIS treats such features). The service's owner and its organization's
// administrators are never restricted. Queries are restricted in their plan (a condition joined to their `where`
// tree, so paging, counts, extents and statistics agree), edits in the statement that writes (shared/features/sql/
// write.ts), never by filtering answers afterwards.
import type { Identity } from "#shared/auth/identity.ts";
import type { Field, LayerSchema } from "#shared/features/schema.ts";
import type { Expr } from "#shared/features/where-tree.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import type { Service, ServiceEditing } from "#shared/stores/services.ts";

/** A service's settings with their defaults (ArcGIS's: no ownership rules, others allowed everything). */
export function editingSettings(service: { readonly editing?: ServiceEditing }): Required<ServiceEditing> {
  const e = service.editing ?? {};
  return {
    ownershipAccessControl: e.ownershipAccessControl ?? false,
    allowOthersToQuery: e.allowOthersToQuery ?? true,
    allowOthersToUpdate: e.allowOthersToUpdate ?? true,
    allowOthersToDelete: e.allowOthersToDelete ?? true,
    allowAnonymousToQuery: e.allowAnonymousToQuery ?? true,
    allowAnonymousToUpdate: e.allowAnonymousToUpdate ?? true,
    allowAnonymousToDelete: e.allowAnonymousToDelete ?? true,
    publicDataCollection: e.publicDataCollection ?? false,
  };
}

/** Whether the caller manages the service: its owner, or an administrator of its organization. */
export function managesService(identity: Identity, service: Service): boolean {
  return (
    identity.kind === "user" &&
    identity.user.portalId === service.portalId &&
    (identity.user.username === service.owner || identity.user.role === "org_admin")
  );
}

/** Whether anonymous callers may edit the service at all: its owner turned it on, and it is shared with everyone. */
export const anonymousEditing = (service: Service): boolean =>
  service.access === "public" && editingSettings(service).publicDataCollection;

/**
 * Which features a rule reaches: every one, or those made by `username` (when named) and those made anonymously
 * (when `anonymous`); neither named: none.
 */
export type Scope =
  { readonly all: true } | { readonly all: false; readonly username?: string; readonly anonymous: boolean };

const ALL: Scope = { all: true };

/** The rules of one caller on one layer: the creator's column and what each operation reaches. */
export interface Ownership {
  readonly field: Field;
  readonly query: Scope;
  readonly update: Scope;
  readonly delete: Scope;
}

/**
 * The caller's rules on a layer, or undefined when none apply: ownership-based access control off, the caller
 * managing the service, or a layer that records no creator (ArcGIS applies the service's rules alone to such a one).
 */
export function ownershipFor(identity: Identity, service: Service, schema: LayerSchema): Ownership | undefined {
  const settings = editingSettings(service);
  if (!settings.ownershipAccessControl || managesService(identity, service)) return undefined;
  const creator = schema.editing?.creatorField?.toLowerCase();
  const field = creator ? schema.fields.find((f) => f.name.toLowerCase() === creator) : undefined;
  if (!field) return undefined;
  // A feature hidden from the caller is not theirs to change either (as ArcGIS has it: when others may not query,
  // only a feature's creator sees and edits it): an update or delete scope is never wider than the query scope.
  const within = (scope: Scope, query: Scope): Scope => (scope.all ? query : scope);
  if (identity.kind === "user") {
    const own: Scope = { all: false, username: identity.user.username, anonymous: true };
    const query = settings.allowOthersToQuery ? ALL : own;
    return {
      field,
      query,
      update: within(settings.allowOthersToUpdate ? ALL : own, query),
      delete: within(settings.allowOthersToDelete ? ALL : own, query),
    };
  }
  // Anonymous callers (and applications acting for themselves) own nothing: what anonymous callers made is theirs
  // to reach only when the service allows anonymous updates or deletes, the rest only when others may be reached too.
  const anonymous = (allowed: boolean, others: boolean): Scope =>
    !allowed ? { all: false, anonymous: false } : others ? ALL : { all: false, anonymous: true };
  const query: Scope =
    settings.allowAnonymousToQuery && settings.allowOthersToQuery ? ALL : { all: false, anonymous: true };
  return {
    field,
    query,
    update: within(anonymous(settings.allowAnonymousToUpdate, settings.allowOthersToUpdate), query),
    delete: within(anonymous(settings.allowAnonymousToDelete, settings.allowOthersToDelete), query),
  };
}

/** The condition a scope sets on the creator's field, as a `where` tree (undefined: every feature). */
export function scopeCondition(field: Field, scope: Scope): Expr | undefined {
  if (scope.all) return undefined;
  const column: Expr = { kind: "field", type: "string", field };
  const equals = (value: string): Expr => ({
    kind: "compare",
    type: "boolean",
    op: "=",
    left: column,
    right: { kind: "string", type: "string", value },
  });
  const parts: Expr[] = [];
  if (scope.username !== undefined) parts.push(equals(scope.username));
  if (scope.anonymous) parts.push({ kind: "isNull", type: "boolean", operand: column, negated: false }, equals(""));
  // No feature: a condition no row meets (1 = 0), still a tree the emitters bind.
  if (parts.length === 0)
    return {
      kind: "compare",
      type: "boolean",
      op: "=",
      left: { kind: "number", type: "number", value: 1 },
      right: { kind: "number", type: "number", value: 0 },
    };
  return parts.length === 1 ? parts[0] : { kind: "or", type: "boolean", parts };
}

/** The condition a caller's queries of a layer carry (undefined: none). */
export function queryRestriction(identity: Identity, service: Service, schema: LayerSchema): Expr | undefined {
  const rules = ownershipFor(identity, service, schema);
  return rules ? scopeCondition(rules.field, rules.query) : undefined;
}

/** `editorTrackingInfo`'s settings, each named as ArcGIS names it, and the record's name for it. */
const TRACKING_SETTINGS: Readonly<Record<string, keyof ServiceEditing>> = {
  enableOwnershipAccessControl: "ownershipAccessControl",
  allowOthersToQuery: "allowOthersToQuery",
  allowOthersToUpdate: "allowOthersToUpdate",
  allowOthersToDelete: "allowOthersToDelete",
  allowAnonymousToQuery: "allowAnonymousToQuery",
  allowAnonymousToUpdate: "allowAnonymousToUpdate",
  allowAnonymousToDelete: "allowAnonymousToDelete",
};

/**
 * A definition's `editorTrackingInfo` as ArcGIS clients send it (updateDefinition, addToDefinition): whether editor
 * tracking is asked on or off (absent: not said), and the ownership settings it names, each problem pushed to
 * `problems` (a hosted and a by-reference service read it alike, then each says what it allows).
 */
export function readEditorTracking(
  value: unknown,
  problems: string[],
): { readonly enableEditorTracking?: boolean; readonly editing: Partial<Record<keyof ServiceEditing, boolean>> } {
  const editing: Partial<Record<keyof ServiceEditing, boolean>> = {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.push("'editorTrackingInfo' must be an object of true/false settings.");
    return { editing };
  }
  const entries = Object.entries(value);
  // Each unknown key would be a problem of its own: a definition of thousands is answered with one.
  if (entries.length > 16) {
    problems.push(`'editorTrackingInfo' has ${entries.length} keys: it takes at most 8 settings.`);
    return { editing };
  }
  let enableEditorTracking: boolean | undefined;
  for (const [key, v] of entries) {
    const setting = key === "enableEditorTracking" ? key : TRACKING_SETTINGS[key];
    if (setting === undefined)
      problems.push(
        `'editorTrackingInfo.${key.slice(0, 40)}' is not a setting here (${["enableEditorTracking", ...Object.keys(TRACKING_SETTINGS)].join(", ")}).`,
      );
    else if (typeof v !== "boolean") problems.push(`'editorTrackingInfo.${key}' must be true or false.`);
    else if (setting === "enableEditorTracking") enableEditorTracking = v;
    else editing[setting] = v;
  }
  return { ...(enableEditorTracking !== undefined ? { enableEditorTracking } : {}), editing };
}

/**
 * Whether a service's layers record their creators and editors: a hosted service's always; one published by
 * reference from a database only once its publisher named its table's tracking columns (its creator's among them for
 * ownership-based access control).
 */
export function tracksEditors(service: Service): { readonly editors: boolean; readonly creator: boolean } {
  if (service.source?.datastoreId === HOSTED_STORE_ID) return { editors: true, creator: true };
  const named = service.source && "connection" in service.source ? service.source.trackingFields : undefined;
  return { editors: named !== undefined && Object.keys(named).length > 0, creator: named?.creatorField !== undefined };
}

/**
 * The service's `editorTrackingInfo`, as ArcGIS's service JSON says it: a hosted service's layers always track
 * editors; a by-reference one's when its tracking columns are named, and ownership-based access control is on only
 * where a creator is recorded (else it says so: off).
 */
export function editorTrackingInfo(service: Service) {
  const s = editingSettings(service);
  const tracks = tracksEditors(service);
  return {
    enableEditorTracking: tracks.editors,
    enableOwnershipAccessControl: s.ownershipAccessControl && tracks.creator,
    allowOthersToUpdate: s.allowOthersToUpdate,
    allowOthersToDelete: s.allowOthersToDelete,
    allowOthersToQuery: s.allowOthersToQuery,
    allowAnonymousToUpdate: s.allowAnonymousToUpdate,
    allowAnonymousToDelete: s.allowAnonymousToDelete,
  };
}

/**
 * A layer's `ownershipBasedAccessControlForFeatures`, as ArcGIS's layer JSON says it: only while the control is on
 * and the layer records a creator (clients take its absence as no control).
 */
export function layerOwnershipJson(service: Service, schema: LayerSchema) {
  const s = editingSettings(service);
  if (!s.ownershipAccessControl || !schema.editing?.creatorField) return {};
  return {
    ownershipBasedAccessControlForFeatures: {
      allowOthersToQuery: s.allowOthersToQuery,
      allowOthersToUpdate: s.allowOthersToUpdate,
      allowOthersToDelete: s.allowOthersToDelete,
      allowAnonymousToQuery: s.allowAnonymousToQuery,
      allowAnonymousToUpdate: s.allowAnonymousToUpdate,
      allowAnonymousToDelete: s.allowAnonymousToDelete,
    },
  };
}
