// A web map as OpenLayers' own "ArcGIS REST Feature Service" example writes one: a vector source reading Esri
// JSON from a layer's `query` for the extent it needs (here the bbox loading strategy), in the map's Web Mercator. Bundled for the browser by test/helpers/feature-map.ts; the page calls `drawFeatureLayer`.
import Map from "ol/Map.js";
import View from "ol/View.js";
import EsriJSON from "ol/format/EsriJSON.js";
import VectorLayer from "ol/layer/Vector.js";
import { bbox } from "ol/loadingstrategy.js";
import { fromLonLat } from "ol/proj.js";
import VectorSource from "ol/source/Vector.js";
import { Circle, Fill, Stroke, Style } from "ol/style.js";

export interface FeatureMapOptions {
  /** The layer's URL (`…/FeatureServer/0`). */
  readonly layerUrl: string;
  readonly center: readonly [number, number];
  readonly zoom: number;
  /** The code the map sends as inSR/outSR: 3857 as OpenLayers names Web Mercator, or Esri's 102100. */
  readonly wkid: 3857 | 102100;
  readonly timeoutMs: number;
}

export interface FeatureMapOutcome {
  /** Whether the map finished loading and drawing (`rendercomplete` with nothing left loading). */
  readonly complete: boolean;
  /** The object ids of the features the source holds (OpenLayers keys features by the answer's objectIdFieldName). */
  readonly ids: number[];
  /** Each extent the bbox strategy asked for, in the map's coordinates. */
  readonly extents: [number, number, number, number][];
  readonly loadErrors: number;
}

function drawFeatureLayer(options: FeatureMapOptions): Promise<FeatureMapOutcome> {
  const extents: FeatureMapOutcome["extents"] = [];
  let loadErrors = 0;
  let loadsEnded = 0;
  const source = new VectorSource({
    format: new EsriJSON(),
    strategy: bbox,
    url: (extent) => {
      const [xmin, ymin, xmax, ymax] = extent as [number, number, number, number];
      extents.push([xmin, ymin, xmax, ymax]);
      const geometry = { xmin, ymin, xmax, ymax, spatialReference: { wkid: options.wkid } };
      const params = new URLSearchParams({
        f: "json",
        returnGeometry: "true",
        spatialRel: "esriSpatialRelIntersects",
        geometry: JSON.stringify(geometry),
        geometryType: "esriGeometryEnvelope",
        inSR: String(options.wkid),
        outFields: "*",
        outSR: String(options.wkid),
      });
      return `${options.layerUrl}/query/?${params}`;
    },
  });
  source.on("featuresloadend", () => loadsEnded++);
  source.on("featuresloaderror", () => loadErrors++);
  const fill = new Fill({ color: "rgba(0, 112, 255, 0.45)" });
  const stroke = new Stroke({ color: "#333333", width: 1 });
  const style = new Style({ fill, stroke, image: new Circle({ radius: 3, fill, stroke }) });
  const map = new Map({
    target: "map",
    controls: [],
    interactions: [],
    layers: [new VectorLayer({ source, style })],
    view: new View({ center: fromLonLat([...options.center]), zoom: options.zoom }),
  });
  const outcome = (complete: boolean): FeatureMapOutcome => ({
    complete,
    ids: source.getFeatures().map((f) => Number(f.getId())),
    extents,
    loadErrors,
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(outcome(false)), options.timeoutMs);
    // The first frames complete before any answer arrives: done means loads were asked, all ended, and drawn.
    map.on("rendercomplete", () => {
      if (extents.length === 0 || loadsEnded + loadErrors < extents.length) return;
      clearTimeout(timer);
      resolve(outcome(true));
    });
  });
}

(globalThis as { drawFeatureLayer?: typeof drawFeatureLayer }).drawFeatureLayer = drawFeatureLayer;
