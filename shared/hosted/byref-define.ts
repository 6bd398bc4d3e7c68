// A layer published by reference from a registered PostgreSQL database, changed on the admin wire: its service-level
// updateDefinition of `capabilities` (its owner or an administrator turning editing on or off), of its table's
// editor-tracking columns (`editFieldsInfo`) and of who may reach which features (`editorTrackingInfo`), the changes of
// such a service taken (its fields and layers are its table's). Served by the service function, at
// `/<server>/rest/admin/services/[<folder>/]<name>/FeatureServer/updateDefinition` outside the Hosted folder
// (shared/system.ts BYREF_ADMIN): turning editing on asks the database whether the registered login may write the
// table (shared/features/byref-enable.ts), which only a function holding the data stores' passwords, in their
// network, can ask.
import { capabilitiesSetting } from "#shared/features/capabilities.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { badRequest } from "#shared/errors.ts";
import {
  addressedService,
  type Defined,
  definitionOf,
  editingFormDefinition,
  onlyKeys,
  serviceNotFound,
  settingsNotKept,
} from "#shared/hosted/admin-service.ts";
import { EDITING_FORM, EDITING_SETTINGS_OFFERED } from "#shared/item-pages.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { readEditorTracking } from "#shared/features/ownership.ts";
import {
  getService,
  type ServiceEditing,
  setByReferenceEditing,
  TRACKING_FIELDS,
  type TrackingFields,
} from "#shared/stores/services.ts";

const WHAT = "Unable to update feature service definition.";

/** POST …/admin/services/[<folder>/]<name>/FeatureServer/updateDefinition of a service not in the Hosted folder. */
export async function byReferenceAdmin(req: RestRequest): Promise<object> {
  const defined = await addressedService(req);
  if (defined.service.view || defined.service.source?.datastoreId === HOSTED_STORE_ID)
    // Reached only through a folder's name in another case than the service's own (the gateway's paths are
    // case-sensitive, folders here are not): the hosted services' definitions are changed by the uploads function.
    throw badRequest(WHAT, [
      `A hosted service's definition changes at …/admin/services/${defined.service.folder}/${defined.service.name}/FeatureServer/updateDefinition (its folder named as it is).`,
    ]);
  const form = req.params.get(EDITING_FORM);
  if (form === undefined) return byReferenceDefinition(req, defined);
  // The item page's editing form: its capabilities, and who may reach which features once the creator column is named.
  const source = defined.service.source;
  if (
    defined.resource.join("/") !== "updateDefinition" ||
    form !== "true" ||
    req.params.get("updateDefinition") !== undefined ||
    !source ||
    !("connection" in source)
  )
    throw badRequest(WHAT, [
      `'${EDITING_FORM}' is the service page's editing form, sent to the service's updateDefinition alone (with no 'updateDefinition').`,
    ]);
  // The settings boxes only when the page showed them (a page made before the creator column was named has none:
  // its post must not turn ownership rules off); shown, they need the creator column now.
  const settings = req.params.get(EDITING_SETTINGS_OFFERED) === "true";
  if (settings && source.trackingFields?.creatorField === undefined)
    throw badRequest(WHAT, [
      "The page offered who may reach which features, but the layer's creator column is no longer named: reload the page.",
    ]);
  const offered = { settings, publicDataCollection: false };
  await changeByReference(defined, editingFormDefinition(req, WHAT, offered));
  return { success: true, serviceItemId: defined.service.itemId };
}

/** The keys of a by-reference service's own definition that mapgate keeps. */
const KEYS = ["capabilities", "editorTrackingInfo", "editFieldsInfo"] as const;

/**
 * A definition's `editFieldsInfo`: the tracking columns it names (each a column's name, or null/absent for a role left
 * unfilled), null to name none any more; undefined when the definition does not say.
 */
function editFieldsOf(value: unknown, problems: string[]): TrackingFields | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) {
    problems.push(
      "'editFieldsInfo' must be an object naming the table's columns: creatorField, creationDateField, editorField, editDateField.",
    );
    return undefined;
  }
  const named: Record<string, string> = {};
  const entries = Object.entries(value);
  // Each unknown key would be a problem of its own: a definition of thousands is answered with one.
  if (entries.length > 8) {
    problems.push(`'editFieldsInfo' has ${entries.length} keys: it names at most the 4 tracking fields.`);
    return undefined;
  }
  for (const [key, v] of entries) {
    if (!(TRACKING_FIELDS as readonly string[]).includes(key))
      problems.push(`'editFieldsInfo.${key.slice(0, 40)}' is not a tracking field (${TRACKING_FIELDS.join(", ")}).`);
    else if (v === null || v === "") continue;
    else if (typeof v !== "string" || v.length > 63)
      problems.push(`'editFieldsInfo.${key}' must be a column's name (at most 63 characters) or null.`);
    else named[key] = v;
  }
  return Object.keys(named).length > 0 ? named : null;
}

/**
 * The change of a by-reference service found on the admin wire: its capabilities (editing on or off), its table's
 * tracking columns (`editFieldsInfo`: mapgate never adds columns to a database it does not own, so they are the
 * table's own, named by its publisher) and who may reach which features (`editorTrackingInfo`, as a hosted service
 * takes it). Ownership-based access control needs the creator's column, named first. Anything else is refused.
 */
export async function byReferenceDefinition(req: RestRequest, defined: Omit<Defined, "item">): Promise<object> {
  const source = defined.service.source;
  if (!source || !("connection" in source))
    throw badRequest("Unable to complete operation.", [
      "Only hosted feature services (made by publishing a file or by createService) are changed here.",
    ]);
  const keys = [...KEYS].map((k) => `'${k}'`).join(", ");
  if (defined.resource.length !== 1 || defined.resource[0] !== "updateDefinition")
    throw badRequest(WHAT, [
      `A layer published by reference from a database changes only its service's ${keys} here (…/FeatureServer/updateDefinition): its fields and layers are its table's.`,
    ]);
  return changeByReference(defined, definitionOf(req.params.get("updateDefinition"), "updateDefinition", WHAT));
}

/** A by-reference service's definition changed: what it names checked, then kept (see byReferenceDefinition). */
async function changeByReference(
  defined: Omit<Defined, "item">,
  definition: Record<string, unknown>,
): Promise<{ success: true }> {
  onlyKeys(definition, KEYS, WHAT, "A layer published by reference");
  const problems: string[] = [];
  let capabilities: string | undefined;
  if (definition.capabilities !== undefined) {
    const named = capabilitiesSetting(definition.capabilities);
    if ("problem" in named) problems.push(named.problem);
    else capabilities = named.capabilities;
  }
  const tracking =
    definition.editorTrackingInfo !== undefined
      ? readEditorTracking(definition.editorTrackingInfo, problems)
      : undefined;
  const fields = editFieldsOf(definition.editFieldsInfo, problems);
  if (problems.length > 0) throw badRequest(WHAT, problems);
  // Read again: a change made meanwhile keeps what this one does not name.
  const current = await getService(defined.service.serverId, defined.service.folder, defined.service.name);
  if (!current || current.itemId !== defined.service.itemId || !current.source || !("connection" in current.source))
    throw serviceNotFound();
  let named = fields === undefined ? current.source.trackingFields : (fields ?? undefined);
  if (tracking?.enableEditorTracking === false) {
    if (fields)
      problems.push("'editorTrackingInfo.enableEditorTracking' is false while 'editFieldsInfo' names columns.");
    named = undefined;
  }
  if (tracking?.enableEditorTracking === true && !named)
    problems.push(
      `Editor tracking of a layer published by reference records its edits in its table's own columns: name them in 'editFieldsInfo' (${TRACKING_FIELDS.join(", ")}).`,
    );
  const editing: ServiceEditing = { ...current.editing, ...tracking?.editing };
  if (!named?.creatorField) {
    // Ownership rules without a creator would restrict nothing: refused rather than kept and silently not applied.
    const restricting = Object.entries(tracking?.editing ?? {}).filter(([k, v]) =>
      k === "ownershipAccessControl" ? v : !v,
    );
    if (restricting.length > 0)
      problems.push(
        `Ownership-based access control needs the layer's creator: name the table's creator column first ('editFieldsInfo': {"creatorField": <column>}) before setting ${restricting
          .map(([k]) => `'${k === "ownershipAccessControl" ? "enableOwnershipAccessControl" : k}'`)
          .join(", ")}.`,
      );
    else if (editing.ownershipAccessControl)
      problems.push(
        "Ownership-based access control is on and needs the layer's creator column: turn it off ('editorTrackingInfo': {\"enableOwnershipAccessControl\": false}) to name no creator column.",
      );
  }
  if (problems.length > 0) throw badRequest(WHAT, problems);
  const next = capabilities ?? current.capabilities;
  const { enableByReference } = await import("#shared/features/byref-enable.ts");
  const columns = await enableByReference(current, next, WHAT, named);
  if (!(await setByReferenceEditing(current, next, editing, columns))) throw await settingsNotKept(current, WHAT);
  logger.info("by-reference service editing changed", {
    itemId: current.itemId,
    capabilities: next,
    editing,
    trackingFields: columns ?? null,
  });
  return { success: true };
}
