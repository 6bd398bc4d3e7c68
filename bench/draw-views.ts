// The views the draw-path figures replay (bench/draw.ts), as bench/draw-record.ts draws them in the ArcGIS Maps SDK
// and the fixture it writes keeps them: two demo layers, each at a world view and at a city view.

/** The recorded queries, relative to the project's root. */
export const DRAW_FIXTURE = "bench/draw-queries.json";

/** A laptop's map: the SDK asks for the tiles this much of the screen shows. */
export const DRAW_VIEWPORT = { width: 1280, height: 800 } as const;

export interface DrawView {
  readonly layer: "countries" | "places";
  readonly view: "world" | "city";
  /**
   * How the SDK fetches: "tile", one query per 512-pixel tile of the view (`resultType=tile`, quantized); or
   * "snapshot", the whole layer in pages, which the SDK chooses by itself for a layer it finds small enough (points:
   * up to 400,000 when the layer's extent covers a tenth of the view; polygons by their vertex count), never for
   * an editable one. "tile" views are recorded with the snapshot turned off (the SDK's flag
   * `featurelayer-snapshot-enabled`), as the SDK draws a larger layer or an editable one.
   */
  readonly mode: "tile" | "snapshot";
  /** Longitude, latitude. */
  readonly center: readonly [number, number];
  readonly zoom: number;
  /** The layer's renderer as the SDK takes it (JSON): what it names is what the SDK asks for in `outFields`. */
  readonly renderer: object;
}

const fill = (color: number[]) => ({ type: "simple-fill", color, outline: { color: [80, 80, 80], width: 0.5 } });

/** Countries coloured by name (the SDK asks for `name` beside the object id); places, one symbol each. */
const COUNTRIES = {
  type: "unique-value",
  field: "name",
  defaultSymbol: fill([200, 200, 200]),
  uniqueValueInfos: [
    { value: "France", symbol: fill([0, 85, 164]) },
    { value: "Germany", symbol: fill([255, 206, 0]) },
    { value: "Spain", symbol: fill([198, 11, 30]) },
  ],
};
const PLACES = { type: "simple", symbol: { type: "simple-marker", size: 4, color: [226, 119, 40] } };

/** Paris, where the places layer is densest in Western Europe. */
const PARIS = [2.3522, 48.8566] as const;

export const DRAW_VIEWS: readonly DrawView[] = [
  { layer: "countries", view: "world", mode: "tile", center: [0, 20], zoom: 2, renderer: COUNTRIES },
  { layer: "countries", view: "city", mode: "tile", center: PARIS, zoom: 12, renderer: COUNTRIES },
  { layer: "places", view: "world", mode: "tile", center: [0, 20], zoom: 2, renderer: PLACES },
  { layer: "places", view: "city", mode: "tile", center: PARIS, zoom: 12, renderer: PLACES },
  // What the SDK does with the demo's 171,075 places left to itself: the whole layer, 8,000 points a page.
  { layer: "places", view: "city", mode: "snapshot", center: PARIS, zoom: 12, renderer: PLACES },
];

/** A view's name in the fixture and on the command line: `places-city-tile`. */
export const viewName = (v: Pick<DrawView, "layer" | "view" | "mode">) => `${v.layer}-${v.view}-${v.mode}`;

export interface DrawFixture {
  /** The @arcgis/core version that made the requests. */
  readonly sdk: string;
  readonly viewport: { readonly width: number; readonly height: number };
  readonly views: {
    readonly layer: DrawView["layer"];
    readonly view: DrawView["view"];
    readonly mode: DrawView["mode"];
    readonly center: readonly [number, number];
    readonly zoom: number;
    /** Whether the SDK had finished drawing when the record was taken (else: the queries sent until then). */
    readonly idle: boolean;
    /** Each query's `?…` part, in the order the SDK sent them. */
    readonly queries: string[];
  }[];
}
