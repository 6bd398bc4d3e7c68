// Reading a published service's content from its data store: one place that opens the storage, bounds every
// read and passes gzip through to clients that take it. A broken cache (truncated bundle, corrupt file, a
// symlink out of the store) answers like a missing tile, and is logged for the operator: a map shows a gap,
// never an error page, and nothing outside the store is read.
import { Content, MAX_CONTENT_BYTES } from "#shared/http/render.ts";
import { logger } from "#shared/log.ts";
import { storageAt } from "#shared/storage/open.ts";
import { gunzipBounded, type Storage, StorageError } from "#shared/storage/storage.ts";
import type { Service } from "#shared/stores/services.ts";

/** Content of published caches changes only when someone re-caches in place: an hour is a fair default. */
export const CONTENT_MAX_AGE = 3600;

export async function storageOf(service: Service): Promise<Storage> {
  if (!service.source || !("location" in service.source)) throw new Error("a service without storage");
  return storageAt(service.source.location);
}

/** A fault of the cache found while serving it: logged, and answered as a missing resource. */
export function cacheFault(service: Service, fault: string): Content {
  logger.warn("cache fault", { service: `${service.folder}/${service.name}/${service.type}`, fault });
  return missing();
}

/** Runs a read of the cache; a StorageError (bad path, corrupt or oversized file) is a cache fault. */
export async function guarded(service: Service, read: () => Promise<Content>): Promise<Content> {
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof StorageError)) throw err;
    return cacheFault(service, err.message);
  }
}

const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

export function acceptsGzip(headers: Record<string, string | undefined> | undefined): boolean {
  return /\bgzip\b/i.test(headers?.["accept-encoding"] ?? "");
}

/**
 * Bytes as a Content answer: gzip passed through (Content-Encoding) when the client accepts it, inflated
 * (bounded) otherwise; plain bytes as they are.
 */
export function asContent(
  bytes: Buffer,
  contentType: string,
  options: { gzipOk: boolean; shared: boolean; what: string },
): Content {
  let body = bytes;
  let encoding: string | undefined;
  if (isGzip(bytes)) {
    if (options.gzipOk) encoding = "gzip";
    else body = gunzipBounded(bytes, MAX_CONTENT_BYTES, options.what);
  }
  if (body.length > MAX_CONTENT_BYTES) throw new StorageError(`${options.what} is larger than a response may be.`);
  return new Content(body, contentType, {
    ...(encoding ? { encoding } : {}),
    shared: options.shared,
    maxAge: CONTENT_MAX_AGE,
  });
}

/** The answer for a tile or resource the cache does not hold: an empty 404, which maps treat as "no tile". */
export const missing = () => new Content(Buffer.alloc(0), "text/plain", { status: 404 });
