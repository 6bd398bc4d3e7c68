// The HTML pages of a feature service, as ArcGIS Server's REST directory shows them: the service, all its layers,
// one layer, and the layer's query form with the answer below it. Each page is rendered from the same JSON the
// resource answers with f=json (layer-json.ts), and a query's answer by output.ts, so the page and the JSON
// never tell two stories. Pages carry no script: the query form is a plain GET form. Loaded only for f=html (it
// brings the query plan's module along), so JSON and tiles never pay for it.
import {
  type featureServiceJson,
  type layerJson,
  type layersJson,
  SPATIAL_RELATIONSHIPS,
} from "#shared/features/layer-json.ts";
import { answerHtml, extentHtml, type QueryAnswer, spatialReferenceHtml } from "#shared/features/output.ts";
import { DISTANCE_UNITS, QUERY_GEOMETRY_TYPES } from "#shared/features/plan.ts";
import { escapeHtml, type FormField, page, renderForm } from "#shared/http/html.ts";
import type { Params } from "#shared/http/params.ts";
import { viewLink } from "#shared/viewer-links.ts";
import type { Server } from "#shared/stores/servers.ts";
import type { Service } from "#shared/stores/services.ts";
import { itemPageHref } from "#shared/urls.ts";

type ServiceJson = ReturnType<typeof featureServiceJson>;
type LayerJson = ReturnType<typeof layerJson>;
type LayersJson = ReturnType<typeof layersJson>;

/** Where the pages link: the directory, the service's folder, the service. Paths only, as the directory's links. */
interface FeatureLinks {
  readonly home: string;
  readonly folder: string | undefined;
  readonly folderName: string;
  readonly service: string;
  /** `[<folder>/]<name> (FeatureServer)`, as the directory lists it. */
  readonly serviceTitle: string;
}

function featureLinks(server: Server, service: Service): FeatureLinks {
  const home = `/${encodeURIComponent(server.name)}/rest/services`;
  const folder = service.folder ? `${home}/${encodeURIComponent(service.folder)}` : undefined;
  return {
    home,
    folder,
    folderName: service.folder,
    service: `${folder ?? home}/${encodeURIComponent(service.name)}/${service.type}`,
    serviceTitle: `${service.folder ? `${service.folder}/` : ""}${service.name} (${service.type})`,
  };
}

const layerHref = (links: FeatureLinks, id: number) => `${links.service}/${id}`;
const link = (href: string, text: string) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
const muted = (text: string) => `<span class="muted">${escapeHtml(text)}</span>`;
const text = (v: unknown) =>
  v === null || v === undefined || v === "" ? muted("(none)") : escapeHtml(typeof v === "string" ? v : String(v));
const rows = (entries: readonly (readonly [string, string])[]) =>
  entries.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${v}</td></tr>`).join("");

/** Home › folder › service [› layer] [› query], then the page's own JSON when it has one. */
function trail(
  links: FeatureLinks,
  layer: { id: number; name: string } | undefined,
  json: string | undefined,
  query = false,
) {
  const steps = [
    link(`${links.home}?f=html`, "Home"),
    ...(links.folder ? [link(`${links.folder}?f=html`, links.folderName)] : []),
    link(`${links.service}?f=html`, links.serviceTitle),
    ...(layer ? [link(`${layerHref(links, layer.id)}?f=html`, `${layer.name} (${layer.id})`)] : []),
    ...(query ? ["Query"] : []),
  ];
  const view = viewLink(layer ? layerHref(links, layer.id) : links.service);
  return `<p>${steps.join(" › ")}</p>${json ? `<p>${link(json, "JSON")} · ${view}</p>` : `<p>${view}</p>`}`;
}

function entryList(links: FeatureLinks, entries: ServiceJson["layers"]): string {
  if (entries.length === 0) return `<p>${muted("(none)")}</p>`;
  const items = entries.map((e) => `<li>${link(`${layerHref(links, e.id)}?f=html`, e.name)} (${e.id})</li>`);
  return `<ul>${items.join("")}</ul>`;
}

function servicePage(json: ServiceJson, links: FeatureLinks): string {
  const title = links.serviceTitle;
  const summary = rows([
    ["Service Description", text(json.serviceDescription)],
    ["Capabilities", text(json.capabilities)],
    ["Max Record Count", text(json.maxRecordCount)],
    ["Supported Query Formats", text(json.supportedQueryFormats)],
    ["Spatial Reference", spatialReferenceHtml(json.spatialReference)],
    ["Units", text(json.units)],
    ["Has Versioned Data", text(json.hasVersionedData)],
    ["Service Item", link(itemPageHref(json.serviceItemId), json.serviceItemId)],
  ]);
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>${trail(links, undefined, `${links.service}?f=pjson`)}` +
      `<table class="service">${summary}</table>` +
      `<h2>Layers</h2>${entryList(links, json.layers)}<h2>Tables</h2>${entryList(links, json.tables)}` +
      `<p>${link(`${links.service}/layers?f=html`, "All Layers and Tables")}</p>` +
      `<h2>Initial Extent</h2>${extentHtml(json.initialExtent)}<h2>Full Extent</h2>${extentHtml(json.fullExtent)}`,
  );
}

/** What a layer is (its properties, extent and fields) and what it answers: shared by its page and `layers`. */
function layerSection(json: LayerJson, links: FeatureLinks, heading: "h2" | "h3"): string {
  const properties = rows([
    ["Name", text(json.name)],
    ["Type", text(json.type)],
    ...(json.geometryType ? [["Geometry Type", text(json.geometryType)] as const] : []),
    ["Description", text(json.description)],
    ["Copyright Text", text(json.copyrightText)],
    ["Display Field", text(json.displayField)],
    ["Object ID Field", text(json.objectIdField)],
    ["Unique ID Field", text(json.uniqueIdField.name)],
    ["Has Z", text(json.hasZ)],
    ["Has M", text(json.hasM)],
    ["Has Attachments", text(json.hasAttachments)],
    ["Capabilities", text(json.capabilities)],
    ["Max Record Count", text(json.maxRecordCount)],
    ["Supported Query Formats", text(json.supportedQueryFormats)],
    ["Use Standardized Queries", text(json.useStandardizedQueries)],
    ...(json.supportedSpatialRelationships
      ? [["Supported Spatial Relationships", text(json.supportedSpatialRelationships.join(", "))] as const]
      : []),
  ]);
  const fields = json.fields
    .map(
      (f) =>
        `<tr><td>${escapeHtml(f.name)}</td><td>${escapeHtml(f.type)}</td><td>${escapeHtml(f.alias)}</td>` +
        `<td>${f.length === undefined ? "" : escapeHtml(String(f.length))}</td><td>${f.nullable}</td></tr>`,
    )
    .join("");
  const advanced = rows(Object.entries(json.advancedQueryCapabilities).map(([k, v]) => [k, text(v)] as const));
  return (
    `<table class="layer">${properties}</table>` +
    (json.extent ? `<${heading}>Extent</${heading}>${extentHtml(json.extent)}` : "") +
    `<${heading}>Fields</${heading}><table class="fields"><tr><th>Name</th><th>Type</th><th>Alias</th><th>Length</th>` +
    `<th>Nullable</th></tr>${fields}</table>` +
    `<${heading}>Advanced Query Capabilities</${heading}><table class="advanced">${advanced}</table>` +
    `<${heading}>Supported Operations</${heading}><p>${link(`${layerHref(links, json.id)}/query?f=html`, "Query")}</p>`
  );
}

const layerTitle = (json: LayerJson) => `${json.type === "Table" ? "Table" : "Layer"}: ${json.name} (ID: ${json.id})`;

function layerPage(json: LayerJson, links: FeatureLinks): string {
  const title = layerTitle(json);
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>${trail(links, json, `${layerHref(links, json.id)}?f=pjson`)}` +
      layerSection(json, links, "h2"),
  );
}

function layersPage(json: LayersJson, links: FeatureLinks): string {
  const title = `All Layers and Tables: ${links.serviceTitle}`;
  const sections = [...json.layers, ...json.tables].map(
    (l) => `<h2>${link(`${layerHref(links, l.id)}?f=html`, layerTitle(l))}</h2>${layerSection(l, links, "h3")}`,
  );
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>${trail(links, undefined, `${links.service}/layers?f=pjson`)}${sections.join("")}`,
  );
}

const BOOLEAN = ["true", "false"];

/**
 * Every parameter of `query`, as the form sends them. An empty field is read as absent by the plan (no
 * constraint, the default), so a GET form sending every field asks nothing it was not told; the defaults that
 * are not "absent" are given as values instead: returnGeometry is a true/false choice (an unchecked box would
 * send nothing, which means true), and the first option of each other choice is its default.
 */
const QUERY_FORM: readonly FormField[] = [
  { name: "where", label: "Where", type: "textarea" },
  { name: "objectIds", label: "Object IDs" },
  { name: "geometry", label: "Input Geometry", type: "textarea" },
  { name: "geometryType", label: "Geometry Type", options: QUERY_GEOMETRY_TYPES, blank: "(from the geometry)" },
  { name: "inSR", label: "Input Spatial Reference" },
  { name: "spatialRel", label: "Spatial Relationship", options: SPATIAL_RELATIONSHIPS },
  { name: "distance", label: "Distance" },
  { name: "units", label: "Units", options: Object.keys(DISTANCE_UNITS) },
  { name: "outFields", label: "Out Fields" },
  { name: "returnGeometry", label: "Return Geometry", options: BOOLEAN },
  { name: "outSR", label: "Output Spatial Reference" },
  { name: "geometryPrecision", label: "Geometry Precision" },
  { name: "maxAllowableOffset", label: "Max Allowable Offset" },
  { name: "orderByFields", label: "Order By Fields" },
  { name: "groupByFieldsForStatistics", label: "Group By Fields For Statistics" },
  { name: "outStatistics", label: "Output Statistics", type: "textarea" },
  { name: "having", label: "Having" },
  { name: "resultOffset", label: "Result Offset" },
  { name: "resultRecordCount", label: "Result Record Count" },
  { name: "returnCountOnly", label: "Return Count Only", type: "checkbox" },
  { name: "returnIdsOnly", label: "Return IDs Only", type: "checkbox" },
  { name: "returnExtentOnly", label: "Return Extent Only", type: "checkbox" },
  { name: "returnDistinctValues", label: "Return Distinct Values", type: "checkbox" },
  { name: "f", label: "Format", options: ["html", "json", "pjson", "geojson", "pbf"] },
];

const QUERY_PARAMETERS = QUERY_FORM.map((f) => f.name).filter((name) => name !== "f");

/** Whether the request asks a query (any of its parameters, even empty: a form sent as it stands), or only the form. */
function queryAsked(params: Params): boolean {
  return QUERY_PARAMETERS.some((name) => params.get(name) !== undefined);
}

/**
 * The form's values: what the request sent, with choices and booleans in the spelling the form offers (the plan
 * reads them case-insensitively), so a value sent in another case is still the one shown selected or checked.
 */
function formValues(params: Params): Map<string, string> {
  const values = new Map<string, string>([["f", "html"]]);
  for (const field of QUERY_FORM) {
    const raw = params.get(field.name);
    if (raw === undefined || field.name === "f") continue;
    const choices =
      field.type === "checkbox" ? BOOLEAN : field.options?.map((o) => (typeof o === "string" ? o : o.value));
    const wanted = raw.trim().toLowerCase();
    values.set(field.name, choices?.find((c) => c.toLowerCase() === wanted) ?? raw);
  }
  return values;
}

/** The query's URL with the request's non-empty parameters, `overrides` applied. */
function queryHref(base: string, values: ReadonlyMap<string, string>, overrides: Record<string, string>): string {
  const search = new URLSearchParams();
  for (const [name, value] of values) if (value !== "" && !(name in overrides)) search.set(name, value);
  for (const [name, value] of Object.entries(overrides)) search.set(name, value);
  return `${base}?${search}`;
}

/** The query form, filled with what was asked, and the answer below it when a query was asked. */
function queryPage(layer: LayerJson, links: FeatureLinks, params: Params, answer: QueryAnswer | undefined): string {
  const title = `Query: ${layer.name} (ID: ${layer.id})`;
  const action = `${layerHref(links, layer.id)}/query`;
  const values = formValues(params);
  const form = renderForm(QUERY_FORM, values, undefined, {
    action,
    method: "get",
    submit: "Query (GET)",
    formats: false,
  });
  let result = "";
  if (answer) {
    // The page after this one: the same query from where this one stopped (offset paging, as clients page).
    const next =
      answer.kind === "features" && answer.exceededTransferLimit
        ? `<p>${link(
            queryHref(action, values, {
              resultOffset: String(Number(values.get("resultOffset") || 0) + answer.features.length),
            }),
            "Next page",
          )}</p>`
        : "";
    result = `<h2>Result</h2>${answerHtml(answer)}${next}`;
  }
  const json = answer ? queryHref(action, values, { f: "pjson" }) : undefined;
  return page(title, `<h1>${escapeHtml(title)}</h1>${trail(links, layer, json, true)}${form}${result}`);
}

/** The pages of one service, linked from where it is published. */
export function featurePages(server: Server, service: Service) {
  const links = featureLinks(server, service);
  return {
    service: (json: ServiceJson) => servicePage(json, links),
    layers: (json: LayersJson) => layersPage(json, links),
    layer: (json: LayerJson) => layerPage(json, links),
    /** Whether the request asks a query, or only the form. */
    asked: queryAsked,
    query: (layer: LayerJson, params: Params, answer: QueryAnswer | undefined) =>
      queryPage(layer, links, params, answer),
  };
}
