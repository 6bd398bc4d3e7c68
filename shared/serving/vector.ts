// VectorTileServer over an extracted vector tile package: the service JSON from its p12/root.json, tiles from
// its bundles (gzip-compressed protobufs, passed through), and its style rewritten to point at this service.
import { readBundleTile, validTileAddress } from "#shared/caches/bundle.ts";
import { MAX_DOCUMENT_DEPTH } from "#shared/caches/probe.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { rewriteStyle, vectorResourceFile, vectorServiceJson } from "#shared/caches/vector.ts";
import { badRequest } from "#shared/errors.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { Content, MAX_CONTENT_BYTES } from "#shared/http/render.ts";
import { asContent, CONTENT_MAX_AGE, cacheFault, guarded, missing, storageOf } from "#shared/serving/read.ts";
import { joinPath } from "#shared/storage/storage.ts";
import type { Service } from "#shared/stores/services.ts";

type Vector = Extract<CacheInfo, { kind: "vector" }>;

export const vectorJson = (service: Service, info: Vector) =>
  vectorServiceJson(info.root, { name: service.name, serviceItemId: service.itemId });

const INT = /^\d{1,15}$/;

/** `tile/<z>/<y>/<x>.pbf`. */
export async function vectorTile(service: Service, info: Vector, address: readonly string[], gzipOk: boolean) {
  const [z, y, xFile] = address;
  const x = xFile?.replace(/\.pbf$/, "");
  if (address.length !== 3 || !INT.test(z ?? "") || !INT.test(y ?? "") || !INT.test(x ?? "")) {
    throw badRequest("Invalid tile address.", ["A vector tile is addressed as tile/<z>/<y>/<x>.pbf (whole numbers)."]);
  }
  const level = Number(z);
  const row = Number(y);
  const col = Number(x);
  const lods = (info.root.tileInfo as { lods?: { level?: unknown }[] } | undefined)?.lods ?? [];
  if (!validTileAddress(level, row, col) || !lods.some((l) => l.level === level)) return missing();
  const storage = await storageOf(service);
  return guarded(service, async () => {
    const read = await readBundleTile(storage, joinPath(info.path, "p12/tile"), level, row, col);
    if (!read.found) return read.corrupt ? cacheFault(service, read.corrupt) : missing();
    return asContent(read.bytes, "application/x-protobuf", {
      gzipOk,
      shared: service.access === "public",
      what: "tile",
    });
  });
}

/**
 * `resources/…`: styles (the root style rewritten so its sources, sprite and glyphs point at this service,
 * carrying the caller's token when it came in the query), sprites and fonts as stored.
 */
export async function vectorResource(
  service: Service,
  info: Vector,
  segments: readonly string[],
  serviceUrl: string,
  token: string | undefined,
  gzipOk: boolean,
): Promise<Content | object> {
  const target = vectorResourceFile(segments);
  if (!target) return missing();
  const storage = await storageOf(service);
  return guarded(service, async () => {
    const bytes = await storage.read(joinPath(info.path, "p12/resources", target.file), MAX_CONTENT_BYTES);
    if (!bytes) return missing();
    if (target.file !== "styles/root.json") {
      return asContent(bytes, target.contentType, { gzipOk, shared: service.access === "public", what: target.file });
    }
    let style: unknown;
    try {
      style = JSON.parse(bytes.toString("utf8"));
    } catch {
      return cacheFault(service, "resources/styles/root.json is not valid JSON");
    }
    if (nestedDeeperThan(style, MAX_DOCUMENT_DEPTH)) {
      return cacheFault(service, `resources/styles/root.json nests more than ${MAX_DOCUMENT_DEPTH} levels deep`);
    }
    const query = token ? `?token=${encodeURIComponent(token)}` : "";
    const rewritten = rewriteStyle(style, serviceUrl, query, info.root);
    if (rewritten === undefined) return cacheFault(service, "resources/styles/root.json is not a style");
    // Carries the token when one was given: only the caller's own browser may keep it.
    return new Content(Buffer.from(JSON.stringify(rewritten)), "application/json; charset=utf-8", {
      shared: service.access === "public" && !token,
      maxAge: token ? 0 : CONTENT_MAX_AGE,
    });
  });
}
