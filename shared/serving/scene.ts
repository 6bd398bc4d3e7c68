// SceneServer over an extracted scene layer package (I3S): the service JSON and layer document from what
// publishing read, and every I3S resource under layers/0 read from its file, gzip passed through.
import type { CacheInfo } from "#shared/caches/probe.ts";
import { sceneResourceFiles, textureTypeOf } from "#shared/caches/scene.ts";
import type { Content } from "#shared/http/render.ts";
import { MAX_CONTENT_BYTES } from "#shared/http/render.ts";
import { asContent, guarded, missing, storageOf } from "#shared/serving/read.ts";
import { joinPath } from "#shared/storage/storage.ts";
import type { Service } from "#shared/stores/services.ts";
import { SERVER_REST_VERSION } from "#shared/urls.ts";

type Scene = Extract<CacheInfo, { kind: "scene" }>;

/** The layer document as served at layers/0: its own href points back at it, as I3S readers expect. */
export function sceneLayerJson(info: Scene): Record<string, unknown> {
  return { ...info.layer, id: 0, href: "./layers/0" };
}

export function sceneServiceJson(service: Service, info: Scene): Record<string, unknown> {
  const layer = sceneLayerJson(info);
  return {
    serviceName: service.name,
    name: service.name,
    currentVersion: SERVER_REST_VERSION,
    serviceVersion: typeof info.layer.version === "string" ? info.layer.version : "1.7",
    supportedBindings: ["REST"],
    layers: [layer],
    serviceItemId: service.itemId,
  };
}

/** One I3S resource below layers/0 (node pages, nodes, geometries, textures, attributes, statistics…). */
export async function sceneResource(
  service: Service,
  info: Scene,
  segments: readonly string[],
  gzipOk: boolean,
): Promise<Content> {
  const target = sceneResourceFiles(segments);
  if (!target) return missing();
  const storage = await storageOf(service);
  return guarded(service, async () => {
    for (const file of target.files) {
      const bytes = await storage.read(joinPath(info.path, file), MAX_CONTENT_BYTES);
      if (!bytes) continue;
      // Textures come in several formats: the file found says which.
      const type = segments[2] === "textures" ? textureTypeOf(file) : target.contentType;
      return asContent(bytes, type, { gzipOk, shared: service.access === "public", what: file });
    }
    return missing();
  });
}
