// An independent I3S reader (loaders.gl) loading a SceneServer layer from its URL: the layer document, its
// node pages, and one node's geometry and attributes, the way loaders.gl's own tile loader asks for them.
import { load } from "@loaders.gl/core";
import { I3SLoader, loadFeatureAttributes } from "@loaders.gl/i3s";

export interface LoadedSceneLayer {
  readonly layerType: string;
  /** Nodes of the first node page, the root included. */
  readonly nodeCount: number;
  readonly firstNodeVertexCount: number;
  readonly featureIds: number[];
  readonly attributeNames: string[];
  /** The first feature's attributes, read from the node's attribute buffers. */
  readonly firstFeature: Record<string, unknown> | null;
  /** Every URL loaders.gl fetched, in order (what the server must answer). */
  readonly requested: string[];
}

/** `layerUrl` is `…/SceneServer/layers/0`; a token goes in `token` (loaders.gl adds it to every URL it builds). */
export async function loadSceneLayer(layerUrl: string, token?: string): Promise<LoadedSceneLayer> {
  const requested: string[] = [];
  const fetchLogged = (input: string | URL | Request, init?: RequestInit) => {
    requested.push(String(input instanceof Request ? input.url : input));
    return fetch(input, init);
  };
  const i3s = token ? { token } : {};
  const url = token ? `${layerUrl}?token=${encodeURIComponent(token)}` : layerUrl;
  const tileset = (await load(url, I3SLoader, { fetch: fetchLogged, i3s })) as unknown as {
    layerType: string;
    root: { children?: unknown[] };
    nodePagesTile: {
      nodePages: { nodes: unknown[] }[];
      formTileFromNodePages(id: number): Promise<Record<string, unknown>>;
    };
  };
  const firstChild = await tileset.nodePagesTile.formTileFromNodePages(1);
  const contentUrl = token
    ? `${String(firstChild.contentUrl)}?token=${encodeURIComponent(token)}`
    : String(firstChild.contentUrl);
  const content = (await load(contentUrl, I3SLoader, {
    fetch: fetchLogged,
    i3s: { ...i3s, isTileset: false, isTileHeader: false, _tileOptions: firstChild, _tilesetOptions: tileset },
  })) as unknown as {
    attributes?: { positions?: { value: ArrayLike<number> }; id?: { value: ArrayLike<number> } };
    vertexCount?: number;
    featureIds?: ArrayLike<number>;
  } | null;
  if (!content) throw new Error("loaders.gl parsed no content for node 1");
  const positions = content.attributes?.positions?.value;
  const featureIds = [...new Set(Array.from(content.featureIds ?? content.attributes?.id?.value ?? []))];
  const firstFeature = (await loadFeatureAttributes({ tileset: { tileset }, header: firstChild }, featureIds[0], {
    fetch: fetchLogged,
    i3s: i3s,
  })) as Record<string, unknown> | null;
  return {
    layerType: tileset.layerType,
    nodeCount: tileset.nodePagesTile.nodePages[0]?.nodes.length ?? 0,
    firstNodeVertexCount: positions ? positions.length / 3 : 0,
    featureIds,
    attributeNames: Object.keys(content.attributes ?? {}),
    firstFeature,
    requested,
  };
}
