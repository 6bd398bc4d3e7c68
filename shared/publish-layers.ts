// Bulk publishing (one turn of the publishLayers loop, run by its workflow task): a feature layer, and its
// layer–dataset pair, for each dataset of one page of a data store's datasets that has none yet. The workflow carries only a cursor (the
// last dataset path done) and running counts between pages, so its state does not grow with the data store,
// and each page reads only its own datasets and their pairs, so a whole run reads each dataset once.
//
// Numbers for 1,000,000 datasets (PAGE 1,000): 1,000 pages, each 2 states (this Task, the Choice): about 7
// history events a page on AWS (TaskStateEntered, LambdaFunctionScheduled/Started/Succeeded, TaskStateExited,
// ChoiceStateEntered/Exited), so ~7,000 of a Standard execution's 25,000, leaving room for ~6,000 retried
// invocations (3 events each). The execution's hour (TimeoutSeconds) is the tighter limit: ≥ 278 layers/s,
// 3.6 s a page. A page is ~4 reads and 31 transactions of 33 layers, 4 in flight (estimated ~1 s on
// DynamoDB), but the services of one server share one partition key, whose 1,000 WCU/s (2 per transactional
// write) caps a run near 500 layers/s: 1,000,000 layers take at least ~35 minutes. A job that runs out of
// time is failed; publishLayers again goes on with the datasets still without a layer. Each invocation
// stays far within the task function's 5-minute timeout (TIME_BUDGET_MS ends a slow page early).
//
// Idempotent: a layer's ids derive from the data store and dataset path, and each pair records the job that
// made it, so a retried page, or the whole job run again after a crash, finds its own work, neither making
// it twice nor counting it as published before the job.
import { TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { JobInput } from "#shared/jobs.ts";
import { serviceItem } from "#shared/items.ts";
import { restServiceUrl, stableItemId } from "#shared/publishing.ts";
import { DatasetError, QueryTimeoutError } from "#shared/features/errors.ts";
import { databaseDatasetPage, type SourceDataset, storageDatasetPage } from "#shared/features/sources.ts";
import {
  type DataStore,
  type Dataset,
  datasetPage,
  getDataStore,
  type PostgresConnection,
} from "#shared/stores/datastores.ts";
import type { StoreLocation } from "#shared/storage/storage.ts";
import { ddb, failedConditions } from "#shared/stores/dynamo.ts";
import { itemPut, type Item } from "#shared/stores/items.ts";
import { type LayerPair, type PairAccess, pairMaker, pairMakers, pairPut, recordPair } from "#shared/stores/layers.ts";
import { getServer, type Server, serverUrl } from "#shared/stores/servers.ts";
import { catalogBump } from "#shared/stores/service-keys.ts";
import {
  createService,
  ensureFolder,
  getService,
  newServicePut,
  type Service,
  ServiceExistsError,
} from "#shared/stores/services.ts";
import { JobError } from "#shared/tasks.ts";

/** Datasets per task invocation: large enough that 1,000,000 datasets stay far below 25,000 history events. */
export const PAGE = 1_000;
/** Three writes a layer (service, item, pair): 33 layers fill 99 of a transaction's 100 items. */
export const LAYERS_PER_TRANSACTION = 33;
/** No write in these transactions touches a shared item (the catalog version is bumped once a wave of them). */
const TRANSACTIONS_IN_FLIGHT = 4;
/** A page that takes longer (DynamoDB throttling) stops after its current transactions, far from the timeout. */
const TIME_BUDGET_MS = 120_000;

/**
 * The skipped datasets a job names in its messages (with why), in path order, while they fit in 100 and 16,384
 * characters; past these it counts them. The workflow's state (256 KiB a step) and the job's record (400 KB) stay
 * small.
 */
export const MAX_NAMED_SKIPS = 100;
const MAX_SKIP_TEXT = 16 * 1024;
const MAX_REASON = 300;

/** A dataset a job did not publish, and why. */
export interface Skip {
  readonly path: string;
  readonly reason: string;
}

/** What the workflow carries from page to page (at `$.page`): a path, small counts and at most 16 Ki characters of skips. */
export interface LayerPage {
  /** The last dataset path done ("" before the first page). */
  readonly cursor: string;
  readonly done: boolean;
  /** Datasets whose layer this job made (in this run or in an earlier run of the same job). */
  readonly published: number;
  /** Datasets whose layer existed before this job. */
  readonly alreadyPublished: number;
  /**
   * Datasets that cannot be published (a table without a key the layer could use, a geometry type it cannot serve),
   * and the first of them with why (MAX_NAMED_SKIPS). Absent from a page written before they were carried.
   */
  readonly skipped?: number;
  readonly skips?: readonly Skip[];
}

export interface PageInput extends JobInput {
  readonly page?: LayerPage;
}

const FIRST: LayerPage = { cursor: "", done: false, published: 0, alreadyPublished: 0, skipped: 0, skips: [] };

interface Context {
  readonly jobId: string;
  readonly portalId: string;
  readonly owner: string;
  readonly origin: string;
  readonly datastoreId: string;
  /** The store's storage or database, where each layer reads its dataset (a store of registered datasets has none). */
  readonly location?: StoreLocation;
  readonly connection?: PostgresConnection;
  readonly folder: string;
  readonly server: Server;
}

/** One page of a publishLayers job: the task's work, and the demo's (`publishAllLayers`). */
export async function publishLayersPage(input: PageInput): Promise<LayerPage> {
  const started = Date.now();
  const previous = input.page ?? FIRST;
  const datastoreId = input.params.datastoreId ?? "";
  const serverId = input.params.serverId ?? "";
  const [store, server] = await Promise.all([getDataStore(datastoreId), getServer(serverId)]);
  if (!store || store.portalId !== input.portalId) throw new JobError(`Data store '${datastoreId}' no longer exists.`);
  if (!server || server.portalId !== input.portalId) throw new JobError(`Server '${serverId}' no longer exists.`);
  // A store with storage publishes what its GeoPackages hold, a database store its tables; one with neither
  // lists registered datasets.
  const { datasets, more } = await datasetsOf(store, previous.cursor);
  const last = datasets.at(-1);
  if (!last) return { ...previous, done: true };
  const ctx: Context = {
    jobId: input.jobId,
    portalId: input.portalId,
    owner: input.owner,
    origin: input.origin,
    datastoreId,
    ...(store.location ? { location: store.location } : {}),
    ...(store.connection ? { connection: store.connection } : {}),
    folder: input.params.serverFolder ?? "",
    server,
  };
  const makers = await pairMakers(datastoreId, datasets[0]?.path ?? "", last.path);
  // Positions, not path comparisons: JavaScript orders strings by UTF-16 units, DynamoDB by UTF-8 bytes.
  const todo = datasets.flatMap((dataset, index) =>
    makers.has(dataset.path) || dataset.unpublishable ? [] : [{ dataset, index }],
  );
  const chunks: { readonly first: number; readonly datasets: Dataset[] }[] = [];
  for (let i = 0; i < todo.length; i += LAYERS_PER_TRANSACTION) {
    const part = todo.slice(i, i + LAYERS_PER_TRANSACTION);
    chunks.push({ first: part[0]?.index ?? 0, datasets: part.map((t) => t.dataset) });
  }
  if (chunks.length > 0) await ensureFolder(server.serverId, ctx.folder);

  let reached = datasets.length - 1;
  let made = 0;
  for (let wave = 0; wave < chunks.length; wave += TRANSACTIONS_IN_FLIGHT) {
    const running = chunks.slice(wave, wave + TRANSACTIONS_IN_FLIGHT);
    // Settled, not raced: no transaction is left running when the task fails.
    const results = await Promise.allSettled(running.map((c) => publishChunk(ctx, c.datasets)));
    const wrote = results.reduce((n, r) => n + (r.status === "fulfilled" ? r.value : 0), 0);
    // Once a wave, after its layers exist, instead of in each transaction: the catalog version is one item
    // that every change of the server's catalog writes, and concurrent transactions on it conflict. A warm
    // function may serve the catalog without this wave's layers until then (a fraction of a second).
    if (wrote > 0) await bumpCatalog(server);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    made += wrote;
    const next = chunks[wave + TRANSACTIONS_IN_FLIGHT];
    if (next && Date.now() - started > TIME_BUDGET_MS) {
      // The next page starts after the last dataset this one finished.
      reached = next.first - 1;
      break;
    }
  }
  const finished = datasets.slice(0, reached + 1);
  let before = 0;
  let others = 0;
  let skipped = previous.skipped ?? 0;
  const skips = [...(previous.skips ?? [])];
  let skipText = skips.reduce((n, s) => n + s.path.length + s.reason.length, 0);
  for (const dataset of finished) {
    // Said in the job's messages: a dataset left out silently reads as published to whoever counts the layers.
    if (dataset.unpublishable) {
      const skip = { path: dataset.path, reason: dataset.unpublishable.slice(0, MAX_REASON) };
      // Named while every earlier one was: the job's messages name the first ones, then count the rest.
      const fits = skipText + skip.path.length + skip.reason.length <= MAX_SKIP_TEXT;
      if (skips.length === skipped && skips.length < MAX_NAMED_SKIPS && fits) {
        skips.push(skip);
        skipText += skip.path.length + skip.reason.length;
      }
      skipped++;
      continue;
    }
    const maker = makers.get(dataset.path);
    if (maker === undefined) continue;
    if (maker === ctx.jobId) before++;
    else others++;
  }
  // Layers this job made in an attempt that ended before its bump (a retried page, a job run again).
  if (before > 0) await bumpCatalog(server);
  return {
    cursor: finished.at(-1)?.path ?? previous.cursor,
    done: reached === datasets.length - 1 && !more,
    published: previous.published + made + before,
    alreadyPublished: previous.alreadyPublished + others,
    skipped,
    skips,
  };
}

/** A page of the store's datasets after `cursor`, those that cannot be published among them with why. */
async function datasetsOf(store: DataStore, cursor: string): Promise<{ datasets: SourceDataset[]; more: boolean }> {
  try {
    if (store.connection) return await databaseDatasetPage(store.datastoreId, store.connection, cursor, PAGE);
    if (store.location) return await storageDatasetPage(store.location, cursor, PAGE);
  } catch (err) {
    if (err instanceof DatasetError) throw new JobError(`The data store cannot be read: ${err.message}`);
    if (err instanceof QueryTimeoutError)
      throw new JobError("The data store cannot be read: the database took too long to answer.");
    throw err;
  }
  return datasetPage(store.datastoreId, cursor, PAGE);
}

const bumpCatalog = (server: Server) => ddb.send(new UpdateCommand(catalogBump(server.serverId).Update));

/** A service name from a dataset name (`demo.Parcels` → `demo_Parcels_…`), unique per dataset path. */
const serviceName = (datastoreId: string, dataset: Dataset) =>
  `${dataset.name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 100)}_${stableItemId(datastoreId, dataset.path).slice(0, 6)}`;

/** Who may see a layer, copied onto its pair from its service (and item). */
const pairAccess = (s: Service): PairAccess => ({ access: s.access, owner: s.owner, portalId: s.portalId });

interface Layer {
  readonly dataset: Dataset;
  readonly service: Service;
  readonly item: Item;
  readonly pair: (created: number) => LayerPair;
}

function layerOf(ctx: Context, dataset: Dataset, now: number): Layer {
  const name = serviceName(ctx.datastoreId, dataset);
  const service: Service = {
    serverId: ctx.server.serverId,
    portalId: ctx.portalId,
    folder: ctx.folder,
    name,
    type: "FeatureServer",
    capabilities: "Query",
    description: `Layer of ${dataset.displayName}`,
    tags: [],
    itemId: stableItemId("layer", ctx.datastoreId, dataset.path),
    owner: ctx.owner,
    access: "private",
    extensions: [],
    ...(ctx.location ? { source: { datastoreId: ctx.datastoreId, location: ctx.location, path: dataset.path } } : {}),
    ...(ctx.connection
      ? { source: { datastoreId: ctx.datastoreId, connection: ctx.connection, path: dataset.path } }
      : {}),
    created: now,
  };
  const url = restServiceUrl(serverUrl(ctx.server, ""), ctx.folder, name, "FeatureServer");
  return {
    dataset,
    service,
    item: serviceItem(service, url, {
      title: dataset.displayName,
      pair: { datastoreId: ctx.datastoreId, path: dataset.path },
    }),
    pair: (created) => ({
      layer: {
        id: service.itemId,
        title: dataset.displayName,
        created,
        modified: now,
        // Kept as a path, as the item's URL is: whoever lists it gets it on the origin they called (an origin the
        // deployment gains later, or the engine's new port, never leaves stale addresses in stored pairs).
        url,
        type: "Feature Service",
      },
      dataset: { ...dataset, datastoreId: ctx.datastoreId },
    }),
  };
}

/**
 * A new layer's three writes, each only if absent: its service (stored as createService stores one; a layer
 * has no cache, info or extensions), its item and its pair. The service and item are never without each other.
 */
const layerWrites = (ctx: Context, layer: Layer) => [
  newServicePut(layer.service),
  itemPut(layer.item),
  { Put: pairPut(ctx.datastoreId, layer.pair(layer.service.created), pairAccess(layer.service), ctx.jobId) },
];

/** Publishes up to 33 datasets in one transaction; answers how many layers this job made. */
async function publishChunk(ctx: Context, datasets: readonly Dataset[]): Promise<number> {
  const now = Date.now();
  const layers = datasets.map((d) => layerOf(ctx, d, now));
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: layers.flatMap((l) => layerWrites(ctx, l)) }));
    return layers.length;
  } catch (err) {
    // Only a failed condition (a layer made meanwhile, or a name taken) is worth going layer by layer; a
    // throttled or conflicting transaction is retried whole by the workflow's throttling retry instead of being
    // turned into 33 more writes on the same hot keys.
    if (!failedConditions(err)?.length) throw err;
  }
  // Some layer's service exists already (made meanwhile by another run, or a service of that name): each layer
  // on its own, as a single layer is published.
  let made = 0;
  for (const layer of layers) if (await publishOne(ctx, layer)) made++;
  return made;
}

/** Publishes one layer unless it exists; answers whether this job made its pair. */
async function publishOne(ctx: Context, layer: Layer): Promise<boolean> {
  const { service } = layer;
  try {
    await createService(service, layer.item, undefined, [
      { Put: pairPut(ctx.datastoreId, layer.pair(service.created), pairAccess(service), ctx.jobId) },
    ]);
    return true;
  } catch (err) {
    if (!(err instanceof ServiceExistsError)) throw err;
  }
  // An earlier attempt (or a concurrent run) made the service: its pair is recorded unless it is already.
  const made = await getService(service.serverId, service.folder, service.name);
  if (!made || made.itemId !== service.itemId)
    throw new JobError(`A service named '${service.name}' exists already and is not this dataset's layer.`);
  if (await recordPair(ctx.datastoreId, layer.pair(made.created), pairAccess(made), ctx.jobId)) return true;
  return (await pairMaker(ctx.datastoreId, layer.dataset.path)) === ctx.jobId;
}

/**
 * A whole publishLayers job run page after page in this process, as the workflow runs it: how the demo publishes
 * its layers at a first start, with no workflow in between.
 */
export async function publishAllLayers(input: JobInput): Promise<LayerPage> {
  let page: LayerPage | undefined;
  do page = await publishLayersPage({ ...input, ...(page ? { page } : {}) });
  while (!page.done);
  return page;
}
