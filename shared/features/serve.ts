// A bulk-published FeatureServer at its URL: the service, its one layer (or table) and `query`, read from the
// dataset where it lies. The caller's access to the service was checked before (shared/catalog.ts).
import { DatasetError } from "#shared/features/geopackage.ts";
import { featureServiceJson, layerJson, layersJson } from "#shared/features/layer-json.ts";
import { openDataset } from "#shared/features/sources.ts";
import { ApiError, badRequest } from "#shared/http/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { StorageError } from "#shared/storage/storage.ts";
import type { Service } from "#shared/stores/services.ts";

/** A data source that cannot be read now: the request fails clearly, the log says why, the rest answers. */
export const unavailable = () =>
  new ApiError(500, "Error performing query operation", ["The layer's data source is unavailable."]);

const invalidUrl = () => new ApiError(400, "Invalid URL", ["Invalid URL"]);

/** A source that cannot be read (now or midway): the request fails clearly, the log says why. */
function sourceFault(service: Service, err: unknown): never {
  if (err instanceof DatasetError || err instanceof StorageError) {
    logger.warn("feature layer unavailable", {
      itemId: service.itemId,
      datastoreId: service.source?.datastoreId,
      reason: err.message,
    });
    throw unavailable();
  }
  throw err;
}

export async function featureResource(
  req: RestRequest,
  service: Service,
  resource: readonly string[],
): Promise<object> {
  const [first, second, ...rest] = resource;
  const isQuery = first === "0" && second === "query" && rest.length === 0;
  if (req.contentFormat && !isQuery) {
    throw badRequest("Invalid format.", [`'f' ${req.contentFormat} is answered by 'query' only.`]);
  }
  const source = service.source;
  if (!source) throw new Error("a feature layer without a source");
  try {
    // Loaded by the first query, before the file is opened (no await between opening and reading): tiles and
    // service JSON never pay for the query's libraries (JTS, proj4).
    const query = isQuery ? await import("#shared/features/query.ts") : undefined;
    const dataset = await openDataset(source);
    if (first === undefined) return featureServiceJson(service, dataset.schema);
    if (first === "layers" && second === undefined) return layersJson(service, dataset.schema);
    if (first !== "0") throw invalidUrl();
    if (second === undefined) return layerJson(service, dataset.schema);
    if (query) return await query.runQuery(req, dataset);
    throw invalidUrl();
  } catch (err) {
    return sourceFault(service, err);
  }
}
