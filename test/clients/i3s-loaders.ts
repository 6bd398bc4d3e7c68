// An independent I3S reader (loaders.gl) loading a SceneServer layer from its URL: the layer document, its
// node pages, then the root's first child's geometry and attributes, asked for the way loaders.gl's own
// tileset (Tile3D) asks for them.
import { load } from "@loaders.gl/core";
import type { I3STileContent, I3STileHeader, I3STilesetHeader } from "@loaders.gl/i3s";
import { I3SLoader, loadFeatureAttributes } from "@loaders.gl/i3s";

export interface LoadedSceneLayer {
  readonly layerType: string;
  /** Nodes of the first node page, the root included. */
  readonly nodeCount: number;
  readonly firstNodeVertexCount: number;
  /** The mesh attributes loaders.gl made of the first node's geometry (positions, normals, colors…). */
  readonly attributeNames: string[];
  /** The first node's feature ids, each once, as its geometry's feature ranges give them. */
  readonly featureIds: number[];
  /** The first feature's attributes, read from the node's attribute buffers. */
  readonly firstFeature: Record<string, unknown> | null;
  /** Every URL loaders.gl fetched, in order (what the server must answer). */
  readonly requested: string[];
}

/**
 * `layerUrl` is `…/SceneServer/layers/0`. loaders.gl appends `?token=` to the URLs it builds itself (node
 * pages, attributes) when given one; the layer's and the geometry's URLs come from here and carry it too.
 */
export async function loadSceneLayer(layerUrl: string, token?: string): Promise<LoadedSceneLayer> {
  const requested: string[] = [];
  const fetchLogged = (input: string | URL | Request, init?: RequestInit) => {
    requested.push(input instanceof Request ? input.url : String(input));
    return fetch(input, init);
  };
  const withToken = (url: string) => (token ? `${url}?token=${encodeURIComponent(token)}` : url);
  // No workers: loaders.gl would fetch its worker scripts from a CDN.
  const core = { fetch: fetchLogged, worker: false };
  const i3s = token ? { token } : {};

  const tileset = (await load(withToken(layerUrl), I3SLoader, { core, i3s })) as unknown as I3STilesetHeader;
  const pages = tileset.nodePagesTile;
  if (!pages) throw new Error("The layer has no node pages.");
  const childId = tileset.root.children[0]?.id;
  if (childId === undefined) throw new Error("The root node has no children.");
  const node: I3STileHeader = await pages.formTileFromNodePages(Number(childId));
  if (!node.contentUrl) throw new Error(`Node ${childId} has no geometry.`);

  const content = (await load(withToken(node.contentUrl), I3SLoader, {
    core,
    i3s: {
      ...i3s,
      isTileset: false,
      isTileHeader: false,
      _tileOptions: {
        attributeUrls: node.attributeUrls,
        textureUrl: node.textureUrl,
        textureFormat: node.textureFormat,
        textureLoaderOptions: node.textureLoaderOptions,
        materialDefinition: node.materialDefinition,
        isDracoGeometry: node.isDracoGeometry,
        mbs: node.mbs,
      },
      _tilesetOptions: {
        store: tileset.store,
        attributeStorageInfo: tileset.attributeStorageInfo,
        fields: tileset.fields,
      },
    },
  })) as unknown as I3STileContent | null;
  if (!content) throw new Error(`loaders.gl parsed no content for node ${childId}.`);

  const featureIds = [...new Set(Array.from(content.featureIds, Number))];
  const first = featureIds[0];
  const firstFeature =
    first === undefined
      ? null
      : ((await loadFeatureAttributes({ tileset: { tileset }, header: node }, first, { core, i3s })) as Record<
          string,
          unknown
        > | null);
  return {
    layerType: String(tileset.layerType),
    nodeCount: pages.nodePages[0]?.nodes.length ?? 0,
    firstNodeVertexCount: (content.attributes.positions?.value.length ?? 0) / 3,
    attributeNames: Object.keys(content.attributes),
    featureIds,
    firstFeature,
    requested,
  };
}
