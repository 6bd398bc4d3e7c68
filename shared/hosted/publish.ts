// Hosted feature layers from uploaded files, on the sharing wire ArcGIS clients call: `content/features/analyze`
// (what a file holds, as publishParameters) and `content/users/<u>/publish` (a feature service in the hosting
// server's Hosted folder, whose data mapgate writes from the file's rows into its hosted store (shared/hosted/store.ts:
// a GeoPackage per service, or a schema per service in PostgreSQL): never the upload itself).
// A CSV or GeoJSON file makes one layer; a zipped shapefile one layer per shapefile, a GeoPackage one per table
// (ids 0…n-1, named from their sources), all in the service's one GeoPackage or schema.
// A publish is done within its request: the data is written and kept first, then the service and its item are made
// in one transaction; a refused transaction drops the data again, and a crash in between leaves only data no service
// names (never a service without its data).
import { TRACKING, trackedRows, trackingColumns } from "#shared/hosted/tracking.ts";
import { EDITABLE_CAPABILITIES } from "#shared/features/capabilities.ts";
import {
  csvTable,
  DELIMITERS,
  type FieldKind,
  geoJsonTable,
  type NamedTable,
  RESERVED_TABLE,
  type Table,
} from "#shared/hosted/tables.ts";
import { type KeptService } from "#shared/hosted/store.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import { emit } from "#shared/stores/events.ts";
import { logger } from "#shared/log.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import type { Params } from "#shared/http/params.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import { serviceItem } from "#shared/items.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { HOSTED_FOLDER, restServiceUrl } from "#shared/publishing.ts";
import { type FileSource, itemFileSource } from "#shared/hosted/file-source.ts";
import type { GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import { retryingConflicts } from "#shared/stores/dynamo.ts";
import { type Item, quotaFailure, StorageQuotaError, usageCharge } from "#shared/stores/items.ts";
import { quotaExceeded } from "#shared/uploads.ts";
import { config } from "#shared/config.ts";
import { listPortalServers, type Server, serverUrl } from "#shared/stores/servers.ts";
import {
  createReservedService,
  createService,
  getService,
  type Service,
  ServiceExistsError,
  serviceNameTaken,
} from "#shared/stores/services.ts";

/** The file types publishing takes, by `filetype`, with the item type each must be. */
export const PUBLISHABLE: Readonly<Record<string, string>> = {
  csv: "CSV",
  geojson: "GeoJson",
  shapefile: "Shapefile",
  geopackage: "GeoPackage",
};
/** The file types ArcGIS publishes that mapgate does not yet: said so, rather than "invalid". */
const NOT_YET = new Set(["excel", "filegeodatabase", "featurecollection"]);

/** As every service name (shared/publishing.ts NAME); clients name services from titles, digits first included. */
export const SERVICE_NAME = /^[A-Za-z0-9_]{1,120}$/;

const ESRI_TYPES: Readonly<Record<FieldKind, string>> = {
  integer: "esriFieldTypeInteger",
  double: "esriFieldTypeDouble",
  date: "esriFieldTypeDate",
  string: "esriFieldTypeString",
};

const ESRI_GEOMETRY: Readonly<Record<string, string>> = {
  POINT: "esriGeometryPoint",
  MULTIPOINT: "esriGeometryMultipoint",
  LINESTRING: "esriGeometryPolyline",
  MULTILINESTRING: "esriGeometryPolyline",
  POLYGON: "esriGeometryPolygon",
  MULTIPOLYGON: "esriGeometryPolygon",
};

/** A text field's declared length: room for what the file holds and for edits (ArcGIS declares 256 at least). */
export const textLength = (longest: number) => Math.max(256, longest);

/** `publishParameters` / `analyzeParameters`: a JSON object of bounded size and depth (absent: {}). */
export function parametersOf(raw: string | undefined, name: string, what: string): Record<string, unknown> {
  if (raw === undefined || raw.trim() === "") return {};
  if (raw.length > 64 * 1024) throw badRequest(what, [`'${name}' is longer than 64 KB.`]);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest(what, [`'${name}' must be JSON.`]);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || nestedDeeperThan(value, 16))
    throw badRequest(what, [`'${name}' must be a JSON object.`]);
  return value as Record<string, unknown>;
}

const optionalText = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);

/** `filetype` checked against what publishing takes (and the item's type, when there is an item). */
export function fileTypeOf(raw: string | undefined, what: string, item?: Item): string {
  const filetype = (raw ?? "").trim().toLowerCase();
  if (NOT_YET.has(filetype))
    throw badRequest(what, [
      `Publishing a ${raw} is not available yet: mapgate publishes csv, geojson, shapefile and geoPackage files.`,
    ]);
  const type = PUBLISHABLE[filetype];
  if (!type) throw badRequest(what, [`'filetype' must be one of ${Object.keys(PUBLISHABLE).join(", ")}.`]);
  if (item && item.type !== type)
    throw badRequest(what, [`The item is of type '${item.type}', not ${type}: 'filetype' must match it.`]);
  return filetype;
}

/**
 * The file's tables, one per layer, read as `parameters` say (a CSV's coordinate columns, or `locationType: none`):
 * a CSV or GeoJSON file has one (its name given when published), a zipped shapefile or a GeoPackage one per layer.
 * The tables' rows are read again from the file while `use` runs (a GeoPackage or a zip from a private temporary
 * copy, removed after it); the file is never held whole.
 */
export async function readTables<T>(
  source: FileSource,
  filetype: string,
  parameters: Record<string, unknown>,
  what: string,
  use: (tables: NamedTable[]) => Promise<T>,
): Promise<T> {
  if (filetype === "shapefile") {
    const { shapefileTables } = await import("#shared/hosted/shapefile.ts");
    return shapefileTables(source, what, use);
  }
  if (filetype === "geopackage") {
    const { geoPackageTables } = await import("#shared/hosted/geopackage-upload.ts");
    return geoPackageTables(source, what, use);
  }
  return use([{ name: "", table: await readTable(source, filetype, parameters, what) }]);
}

/** A CSV or GeoJSON file's table. */
async function readTable(
  source: FileSource,
  filetype: string,
  parameters: Record<string, unknown>,
  what: string,
): Promise<Table> {
  if (filetype === "geojson") return geoJsonTable(source, what);
  const none = parameters.locationType === "none";
  const delimiter = optionalText(parameters.columnDelimiter);
  if (delimiter !== undefined && !(DELIMITERS as readonly string[]).includes(delimiter))
    throw badRequest(what, ["'columnDelimiter' must be a comma, a semicolon, a tab or a vertical bar."]);
  const table = await csvTable(source, what, {
    latitude: optionalText(parameters.latitudeFieldName),
    longitude: optionalText(parameters.longitudeFieldName),
    delimiter,
  });
  if (!none) return table;
  const { geometryType: _g, location: _l, ...attributes } = table;
  return {
    ...attributes,
    async *rows() {
      for await (const r of table.rows()) yield { values: r.values ?? {} };
    },
  };
}

/** The first rows of a table (analyze's records), its reading stopped after them. */
async function firstRows(table: Table, n: number): Promise<GeoPackageRow[]> {
  const out: GeoPackageRow[] = [];
  if (n <= 0) return out;
  for await (const row of table.rows()) {
    out.push(row);
    if (out.length >= n) break;
  }
  return out;
}

/** A service name from a title, as ArcGIS suggests one: letters, digits and `_`, starting with a letter. */
export function serviceNameFrom(title: string): string {
  const base = title.replace(/[^A-Za-z0-9_]/g, "_").replace(/^_+/, "");
  const name = (base || "layer").slice(0, 120);
  return RESERVED_TABLE.test(name) ? `layer_${name}`.slice(0, 120) : name;
}

/**
 * The layers' names: a single layer of a CSV or GeoJSON file takes the service's name (as ArcGIS names it);
 * layers of a shapefile zip or a GeoPackage their own, made safe as service names are and unique whatever their
 * case (`_1`, `_2`… after a repeated one).
 */
export function layerNames(tables: readonly NamedTable[], serviceName: string): string[] {
  if (tables.length === 1 && tables[0]?.name === "") return [serviceName];
  const taken = new Set<string>();
  return tables.map(({ name }) => {
    const base = serviceNameFrom(name).slice(0, 100);
    let unique = base;
    for (let n = 1; taken.has(unique.toLowerCase()); n++) unique = `${base}_${n}`;
    taken.add(unique.toLowerCase());
    return unique;
  });
}

/** The layer a table makes, as analyze shows it and publish makes it. */
export function layerInfo(name: string, table: Table, id = 0): Record<string, unknown> {
  return {
    id,
    name,
    type: table.geometryType ? "Feature Layer" : "Table",
    ...(table.geometryType ? { geometryType: ESRI_GEOMETRY[table.geometryType] } : {}),
    objectIdField: "fid",
    fields: [
      { name: "fid", type: "esriFieldTypeOID", alias: "fid", nullable: false, editable: false, domain: null },
      ...table.fields.map((f) => ({
        name: f.name,
        type: ESRI_TYPES[f.kind],
        alias: f.alias,
        ...(f.kind === "string" ? { length: textLength(f.length) } : {}),
        nullable: true,
        editable: true,
        domain: null,
        defaultValue: null,
      })),
    ],
  };
}

/**
 * What `analyze` answers: the parameters to publish the file with (a file of several layers lists each in
 * `layers`, `layerInfo` being the first), and its first layer's first records as features.
 */
export async function analysis(
  filetype: string,
  title: string,
  tables: readonly NamedTable[],
): Promise<Record<string, unknown>> {
  const name = serviceNameFrom(title);
  const names = layerNames(tables, name);
  const table = (tables[0] as NamedTable).table;
  return {
    publishParameters: {
      type: filetype,
      name,
      ...(filetype === "csv"
        ? {
            locationType: table.location ? "coordinates" : "none",
            ...(table.location
              ? { latitudeFieldName: table.location.latitude, longitudeFieldName: table.location.longitude }
              : {}),
            columnDelimiter: table.delimiter ?? ",",
            qualifier: '"',
          }
        : {}),
      sourceSR: { wkid: 4326, latestWkid: 4326 },
      targetSR: { wkid: 4326, latestWkid: 4326 },
      maxRecordCount: 2000,
      layerInfo: layerInfo(names[0] as string, table),
      ...(filetype === "shapefile" || filetype === "geopackage"
        ? { layers: tables.map((t, id) => layerInfo(names[id] as string, t.table, id)) }
        : {}),
    },
    records: (await firstRows(table, 10)).map((r) => ({ attributes: r.values ?? {}, geometry: r.geometry ?? null })),
    notes: tables.flatMap((t) => t.table.notes),
  };
}

/** The organization's hosting server, where hosted services live. */
export async function hostingServer(portalId: string, what: string): Promise<Server> {
  const server = (await listPortalServers(portalId)).find((s) => s.hosted && s.serverRole === "HOSTING_SERVER");
  if (!server) throw badRequest(what, ["The organization has no hosting server to publish hosted layers on."]);
  return server;
}

/** A file item and how to publish it: what publishing asks and what keeping its data needs alike. */
interface FromFile {
  readonly source: Item & { readonly file: NonNullable<Item["file"]> };
  readonly filetype: string;
  readonly parameters: Record<string, unknown>;
}

export interface PublishRequest extends FromFile {
  readonly owner: string;
  readonly origin: string;
}

/**
 * Keeps a service's data. A store that cannot take it (its database down, refusing, out of space) has kept nothing
 * (shared/hosted/store.ts): the caller hears that plainly, the operator reads why in the log.
 */
async function keeping<T>(make: () => Promise<T>, what: string): Promise<T> {
  try {
    return await make();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    logger.error("hosted data not kept", { error: err instanceof Error ? err.message : String(err) });
    throw new ApiError(500, what, ["The layer's data could not be stored: nothing was published. Try again later."]);
  }
}

/** What publishing keeps from a file item: its data, as a service item's (publishHosted, or a job's task). */
export interface KeepRequest extends FromFile {
  /** The service item the data belongs to (what names it in the hosted store). */
  readonly serviceItemId: string;
  /** The service's name, which a CSV's or GeoJSON's one layer takes (other layers are named from their sources). */
  readonly serviceName: string;
  /** Who the rows were made by (the service's owner): each row's Creator and Editor. */
  readonly publisher: string;
}

export interface PublishedData {
  readonly kept: KeptService;
  /** The layers' names, in the order of `kept.layers`. */
  readonly layers: readonly string[];
  /** What was read but not kept, in words. */
  readonly notes: readonly string[];
  /** The source file's size in bytes. */
  readonly size: number;
}

/**
 * Reads a file item and keeps its data in the hosted store under `serviceItemId`: the file is read twice as a
 * stream (its fields, then its rows written in batches), never whole, so a function's memory bounds no file. All of
 * the data is kept or (throwing) none; the service and item that name it are the caller's to make.
 */
export async function keepPublishedData(k: KeepRequest, what: string): Promise<PublishedData> {
  const source = await itemFileSource(k.source.itemId);
  const store = await hostedStore();
  return readTables(source, k.filetype, k.parameters, what, async (tables) => {
    const names = layerNames(tables, k.serviceName);
    const notes = tables.flatMap((t) => t.table.notes);
    // Each layer gets a global id and editor tracking, filled for its rows with the publisher and this moment.
    const made = Date.now();
    const kept = await keeping(
      () =>
        store.create(
          k.serviceItemId,
          tables.map(({ table }, i) => ({
            name: names[i] as string,
            title: tables.length === 1 ? k.source.title : (names[i] as string),
            ...(table.geometryType ? { geometryType: table.geometryType } : {}),
            columns: table.fields
              .map((f) => ({
                name: f.name,
                kind: f.kind,
                ...(f.kind === "string" ? { length: textLength(f.length) } : {}),
                // The alias analyze showed, kept with the data (a renamed column keeps its own name there).
                ...(f.alias !== "" && f.alias !== f.name ? { title: f.alias } : {}),
              }))
              .concat(trackingColumns()),
            rows: trackedRows(table.rows(), k.publisher, made),
            editing: TRACKING,
          })),
        ),
      what,
    );
    return { kept, layers: names, notes, size: source.size };
  });
}

/** The service a publish makes: its checked name, on the organization's hosting server. */
export async function publishTarget(p: PublishRequest, what: string): Promise<{ name: string; server: Server }> {
  const name = optionalText(p.parameters.name) ?? serviceNameFrom(p.source.title);
  if (!SERVICE_NAME.test(name) || RESERVED_TABLE.test(name))
    throw badRequest(what, [
      `'${name.slice(0, 64)}' cannot name a service: 1–120 letters (A–Z), digits and underscores, not beginning with gpkg_, rtree_ or sqlite_.`,
    ]);
  return { name, server: await hostingServer(p.source.portalId, what) };
}

/** Where a publish puts its service, and (a publish job) the job whose reservation holds the name. */
export interface HostedTarget {
  readonly name: string;
  readonly server: Server;
  readonly serviceItemId: string;
  readonly reservedBy?: string;
}

/** What a publish made: the service's path (on any origin), the file's size, what the file's reading noted. */
export interface MadeService {
  readonly serviceItemId: string;
  readonly size: number;
  readonly notes: readonly string[];
}

/**
 * Reads the file, keeps its data and makes the service and its item (in one transaction with its owner's quota
 * charge; a publish job's also consumes its name's reservation). A refused transaction drops the data again.
 */
export async function makeHostedService(p: PublishRequest, target: HostedTarget, what: string): Promise<MadeService> {
  const { name, server, serviceItemId } = target;
  const store = await hostedStore();
  const {
    kept,
    layers: names,
    notes,
    size,
  } = await keepPublishedData(
    {
      source: p.source,
      filetype: p.filetype,
      parameters: p.parameters,
      serviceItemId,
      serviceName: name,
      publisher: p.owner,
    },
    what,
  );
  const [first] = kept.layers;
  if (!first || kept.layers.length !== names.length) throw new Error("the hosted store kept other layers");
  let extent: [number, number, number, number] | undefined;
  for (const { extent: e } of kept.layers) {
    if (!e) continue;
    extent = extent
      ? [Math.min(extent[0], e[0]), Math.min(extent[1], e[1]), Math.max(extent[2], e[2]), Math.max(extent[3], e[3])]
      : [e[0], e[1], e[2], e[3]];
  }
  const dataBytes = kept.bytes;
  const now = Date.now();
  const service: Service = {
    serverId: server.serverId,
    portalId: p.source.portalId,
    folder: HOSTED_FOLDER,
    name,
    type: "FeatureServer",
    capabilities: EDITABLE_CAPABILITIES,
    description: p.source.description,
    tags: p.source.tags,
    itemId: serviceItemId,
    owner: p.owner,
    // Private until its owner shares it, as ArcGIS makes new items.
    access: "private",
    extensions: [],
    // Several layers: the first one's source names the container (file or schema), `layers` each layer in it.
    source: names.length > 1 ? { ...first.source, layers: names } : first.source,
    created: now,
  };
  const path = restServiceUrl(serverUrl(server, ""), HOSTED_FOLDER, name, "FeatureServer");
  const base = serviceItem(service, path, { title: p.source.title, snippet: p.source.snippet });
  const item: Item = {
    ...base,
    typeKeywords: [...base.typeKeywords, "Hosted Service"],
    ...(extent
      ? {
          extent: [
            [extent[0], extent[1]],
            [extent[2], extent[3]],
          ],
        }
      : {}),
    hostedData: dataBytes,
    sourceItemId: p.source.itemId,
  };
  const quota = config().storageQuota;
  try {
    // The data counts against its owner's quota as an uploaded file does, in the transaction that makes the service
    // (its writes follow the service's and the item's, and a job's reservation's: CHARGE_AT).
    const charge = usageCharge(service.portalId, p.owner, dataBytes, quota);
    // Concurrent publishes and uploads of one organization meet on its usage counter: tried again on conflict.
    await retryingConflicts(() =>
      target.reservedBy
        ? createReservedService(service, item, target.reservedBy, undefined, charge)
        : createService(service, item, undefined, charge),
    );
  } catch (err) {
    // A write whose answer was lost may have been made: the service that names the data keeps it.
    const made = await getService(server.serverId, HOSTED_FOLDER, name).catch(() => undefined);
    if (made?.itemId === serviceItemId) return { serviceItemId, size, notes };
    // The refusal is what the caller hears; data left by a failed removal is only an orphan (logged).
    await store
      .drop(serviceItemId)
      .catch((e: unknown) => logger.warn("hosted data not removed", { itemId: serviceItemId, error: String(e) }));
    if (err instanceof ServiceExistsError) throw badRequest(what, [`Service name '${name}' already exists.`]);
    const refused = err instanceof StorageQuotaError ? err : quotaFailure(err, target.reservedBy ? 3 : 2);
    if (refused) throw quotaExceeded(refused.whose, quota);
    throw err;
  }
  return { serviceItemId, size, notes };
}

/** The answer to a publish, as ArcGIS gives it (its job done, or running: clients poll the item's status). */
export function publishAnswer(
  server: Server,
  origin: string,
  name: string,
  made: { readonly serviceItemId: string; readonly size: number; readonly notes?: readonly string[] },
  jobId: string,
): Record<string, unknown> {
  const serviceurl = restServiceUrl(serverUrl(server, origin), HOSTED_FOLDER, name, "FeatureServer");
  return {
    services: [
      {
        type: "Feature Service",
        serviceurl,
        encodedServiceURL: serviceurl,
        size: made.size,
        jobId,
        serviceItemId: made.serviceItemId,
        ...(made.notes && made.notes.length > 0 ? { notes: made.notes } : {}),
      },
    ],
  };
}

/** Publishes a file item as a hosted feature service within the request; answers as ArcGIS's publish does. */
export async function publishHosted(p: PublishRequest, what: string): Promise<Record<string, unknown>> {
  const { name, server } = await publishTarget(p, what);
  if (await serviceNameTaken(server.serverId, HOSTED_FOLDER, name))
    throw badRequest(what, [`Service name '${name}' already exists.`]);
  const made = await makeHostedService(p, { name, server, serviceItemId: newItemId() }, what);
  const jobId = newItemId();
  // As a publishing job's completion raises it: integrations learn of hosted services as of any other.
  await emit("servicePublished", {
    portalId: p.source.portalId,
    owner: p.owner,
    jobId,
    itemId: made.serviceItemId,
    type: "Feature Service",
    url: restServiceUrl(serverUrl(server, p.origin), HOSTED_FOLDER, name, "FeatureServer"),
  });
  // Done within this request: the status this job id is asked with answers "completed".
  return publishAnswer(server, p.origin, name, made, jobId);
}

/** What a publish request names: the file item, and how to read it. */
export function publishInput(params: Params, what: string) {
  // Clients spell these as they like (the ArcGIS Python API sends itemid and fileType); ArcGIS ignores the case.
  const itemId = params.caseless("itemId");
  if (itemId === undefined || itemId.trim() === "") throw badRequest(what, ["'itemId' must be specified."]);
  return {
    itemId,
    filetype: params.caseless("filetype"),
    parameters: parametersOf(params.caseless("publishParameters"), "publishParameters", what),
    overwrite: params.caseless("overwrite")?.toLowerCase() === "true",
  };
}
