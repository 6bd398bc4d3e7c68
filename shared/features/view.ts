// A hosted view's layer as it is read: the rows of its source layer, where they lie (never copied), seen through
// the view's definition query and only its visible fields. Both go through the typed plan, never through text: the
// definition query is parsed into a where tree against the source layer (so it may name a field the view hides) and
// ANDed into every plan a query of the view makes (features, counts, ids, extents, statistics alike), so the emitters
// bind its values as they bind the caller's; the hidden fields are absent from the schema the caller's query is
// planned against, so naming one (outFields, where, statistics, order, group) is the 400 of an unknown field, and
// `*` and the layer's JSON never list one.
import type { OpenDataset } from "#shared/features/dataset.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import type { QueryPlan } from "#shared/features/plan.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { parseWhere } from "#shared/features/where.ts";
import type { Expr } from "#shared/features/where-tree.ts";
import type { ServiceSource, ServiceView, ViewLayer } from "#shared/stores/services.ts";

/** The parameter a view's definition query is named by in refusals, as ArcGIS's layer JSON names it. */
export const DEFINITION_QUERY = "viewDefinitionQuery";

/**
 * The source layer's schema as the view shows it: only its visible fields (the object id always), named as the view
 * names the layer; its display field the first visible string field when the source's is hidden.
 */
export function viewSchema(schema: LayerSchema, layer: ViewLayer): LayerSchema {
  const shown = layer.fields ? new Set(layer.fields.map((f) => f.toLowerCase())) : undefined;
  const oid = schema.objectIdField.toLowerCase();
  const fields = shown
    ? schema.fields.filter((f) => f.name.toLowerCase() === oid || shown.has(f.name.toLowerCase()))
    : schema.fields;
  const display = fields.some((f) => f.name === schema.displayField)
    ? schema.displayField
    : (fields.find((f) => f.type === "esriFieldTypeString")?.name ?? schema.objectIdField);
  return { ...schema, name: layer.name, fields, displayField: display };
}

/**
 * The view's definition query as a where tree over the source layer (all its fields), or undefined when it has none.
 * One that no longer parses (the source lost a field it names) fails the read closed: a view never answers rows its
 * definition query would not.
 */
export function viewRestriction(schema: LayerSchema, layer: ViewLayer): Expr | undefined {
  const text = layer.definitionQuery;
  if (text === undefined || text.trim() === "") return undefined;
  try {
    return parseWhere(text, schema, { parameter: "where" });
  } catch {
    throw new DatasetError(`The view's definition query cannot be read against its source layer (${schema.name}).`);
  }
}

/** A plan with a dataset's restriction ANDed into its where (as a tree: no where of the caller's can undo it). */
export function restrictPlan(plan: QueryPlan, restriction: Expr | undefined): QueryPlan {
  if (restriction === undefined) return plan;
  const where: Expr = plan.where ? { kind: "and", type: "boolean", parts: [plan.where, restriction] } : restriction;
  return { ...plan, where };
}

/** The source layer's dataset as the view reads it: its schema narrowed, its rows restricted. */
export function viewDataset(dataset: OpenDataset, layer: ViewLayer): OpenDataset {
  const restriction = viewRestriction(dataset.schema, layer);
  return {
    ...dataset,
    schema: viewSchema(dataset.schema, layer),
    ...(restriction ? { restriction } : {}),
  };
}

/** What a view with no layers yet reads: nothing (its `layers` is empty, so no path of it is ever opened). */
const NO_LAYERS: ServiceSource = { datastoreId: HOSTED_STORE_ID, location: { folder: "" }, path: "", layers: [] };

/**
 * The source a view reads, by the view's layer ids: its source service's container (file or schema, at its current
 * revision) with each view layer's source table at the view layer's id (null where the view deleted a layer or the
 * source deleted the one it showed). Undefined when the view names a source that is gone.
 */
export function viewSource(view: ServiceView, source: ServiceSource | undefined): ServiceSource | undefined {
  if (view.sourceItemId === undefined) return NO_LAYERS;
  if (!source) return undefined;
  const tables = source.layers ?? [source.path.split("/").at(-1) ?? ""];
  return { ...source, layers: view.layers.map((l) => (l ? (tables[l.sourceLayerId] ?? null) : null)) };
}
