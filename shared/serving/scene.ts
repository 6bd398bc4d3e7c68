// SceneServer over an extracted scene layer package (I3S): the service JSON and layer document from what
// publishing read, and every I3S resource under layers/0 read from its file, gzip passed through.
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { sceneLayerJson, sceneResourceFiles, sceneServiceJson, textureTypeOf } from "#shared/caches/scene.ts";
import type { Content } from "#shared/http/render.ts";
import { MAX_CONTENT_BYTES } from "#shared/http/render.ts";
import { asContent, guarded, missing, storageOf } from "#shared/serving/read.ts";
import { joinPath } from "#shared/storage/storage.ts";
import type { Service } from "#shared/stores/services.ts";

type Scene = Extract<CacheInfo, { kind: "scene" }>;

export const sceneLayer = (info: Scene) => sceneLayerJson(info.layer);

export const sceneService = (service: Service, info: Scene) =>
  sceneServiceJson(info.layer, { name: service.name, serviceItemId: service.itemId });

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
