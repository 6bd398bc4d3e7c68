// A small but real vector tile cache for the demo data store, laid out as an extracted vector tile package
// (VTPK): p12/root.json, gzip-compressed Mapbox Vector Tiles in Compact Cache V2 bundles under p12/tile, and
// p12/resources with the style, its sprite and the resource list. The map is central Paris, drawn by hand
// (approximate shapes), with a few motorways reaching out far enough to show on the first levels.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { Feature, FeatureCollection, Geometry } from "geojson";
import GeoJSONVT from "geojson-vt";
import { PNG } from "pngjs";
// @ts-expect-error -- vt-pbf ships no type declarations; its one function used here is typed below.
import vtpbf from "vt-pbf";
import { bundleFile, PACKET, writeBundle } from "#shared/caches/bundle.ts";

type Position = [number, number];
type Properties = Record<string, string | number>;
type LegacyTile = NonNullable<ReturnType<GeoJSONVT["getTile"]>>;

const fromGeojsonVt = (vtpbf as { fromGeojsonVt: FromGeojsonVt }).fromGeojsonVt;
type FromGeojsonVt = (layers: Record<string, LegacyTile>, options: { version: number; extent: number }) => Uint8Array;

/** The deepest level written: at 12 the whole of Paris fills a small map, and buildings are a few dozen pixels. */
const MAX_LEVEL = 12;
const EXTENT = 4096;
const HALF = 20037508.342787;
const EARTH_RADIUS = 6378137;
const WEB_MERCATOR = { wkid: 102100, latestWkid: 3857 };
/** Level 0 of the vector tiling scheme: one 512-pixel tile for the world (level 1 of the 256-pixel scheme). */
const RESOLUTION_0 = 156543.03392800014 / 2;
const SCALE_0 = 591657527.591555 / 2;

const toMercator = ([lon, lat]: Position): Position => [
  (EARTH_RADIUS * lon * Math.PI) / 180,
  EARTH_RADIUS * Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)),
];
const toLonLat = ([x, y]: Position): Position => [
  (x / EARTH_RADIUS) * (180 / Math.PI),
  (2 * Math.atan(Math.exp(y / EARTH_RADIUS)) - Math.PI / 2) * (180 / Math.PI),
];

/** An axis-aligned rectangle as a closed ring (west, south, east, north in degrees). */
const box = (w: number, s: number, e: number, n: number): Position[] => [
  [w, s],
  [e, s],
  [e, n],
  [w, n],
  [w, s],
];
const closed = (ring: Position[]): Position[] => [...ring, ring[0] as Position];

/**
 * A river as a polygon: its centre line widened by `width` metres on the ground. Offsets are taken in Web
 * Mercator metres (scaled by the projection's stretch at that latitude) along the mean normal at each vertex,
 * which is close enough for the gentle bends of a river.
 */
function riverPolygon(line: Position[], width: number): Position[] {
  const pts = line.map(toMercator);
  const left: Position[] = [];
  const right: Position[] = [];
  pts.forEach(([x, y], i) => {
    const [px, py] = pts[Math.max(0, i - 1)] as Position;
    const [nx, ny] = pts[Math.min(pts.length - 1, i + 1)] as Position;
    const dx = nx - px;
    const dy = ny - py;
    const len = Math.hypot(dx, dy) || 1;
    const half = width / 2 / Math.cos(((line[i] as Position)[1] * Math.PI) / 180);
    left.push(toLonLat([x - (dy / len) * half, y + (dx / len) * half]));
    right.push(toLonLat([x + (dy / len) * half, y - (dx / len) * half]));
  });
  return closed([...left, ...right.reverse()]);
}

const polygon = (rings: Position[][], properties: Properties): Feature => ({
  type: "Feature",
  properties,
  geometry: { type: "Polygon", coordinates: rings },
});
const line = (coordinates: Position[], properties: Properties): Feature => ({
  type: "Feature",
  properties,
  geometry: { type: "LineString", coordinates },
});
const point = (coordinates: Position, properties: Properties): Feature => ({
  type: "Feature",
  properties,
  geometry: { type: "Point", coordinates },
});

const SEINE: Position[] = [
  [2.4135, 48.819],
  [2.39, 48.828],
  [2.373, 48.84],
  [2.364, 48.846],
  [2.354, 48.852],
  [2.347, 48.8555],
  [2.338, 48.858],
  [2.327, 48.861],
  [2.314, 48.864],
  [2.301, 48.863],
  [2.29, 48.859],
  [2.28, 48.852],
  [2.272, 48.845],
  [2.265, 48.839],
  [2.255, 48.832],
  [2.245, 48.829],
  [2.232, 48.833],
  [2.225, 48.842],
  [2.227, 48.856],
  [2.232, 48.869],
  [2.245, 48.88],
];

const PERIPHERIQUE: Position[] = closed([
  [2.2825, 48.878],
  [2.3, 48.886],
  [2.313, 48.894],
  [2.329, 48.898],
  [2.36, 48.899],
  [2.37, 48.899],
  [2.386, 48.898],
  [2.399, 48.888],
  [2.411, 48.864],
  [2.413, 48.847],
  [2.395, 48.829],
  [2.359, 48.818],
  [2.326, 48.823],
  [2.304, 48.827],
  [2.275, 48.833],
  [2.257, 48.838],
  [2.256, 48.847],
  [2.268, 48.861],
  [2.276, 48.872],
]);

/** The demo's features by tile layer (the layer names the style's `source-layer`s use). */
export const VECTOR_LAYERS: Readonly<Record<string, FeatureCollection>> = {
  water: collection([polygon([riverPolygon(SEINE, 150)], { name: "La Seine", class: "river" })]),
  parks: collection([
    polygon(
      [
        closed([
          [2.235, 48.877],
          [2.26, 48.879],
          [2.272, 48.871],
          [2.264, 48.861],
          [2.252, 48.847],
          [2.244, 48.845],
          [2.236, 48.854],
          [2.233, 48.866],
        ]),
      ],
      { name: "Bois de Boulogne", class: "wood" },
    ),
    polygon(
      [
        closed([
          [2.415, 48.845],
          [2.445, 48.845],
          [2.47, 48.84],
          [2.47, 48.828],
          [2.45, 48.824],
          [2.43, 48.827],
          [2.415, 48.835],
        ]),
      ],
      { name: "Bois de Vincennes", class: "wood" },
    ),
    polygon([box(2.3325, 48.844, 2.3395, 48.849)], { name: "Jardin du Luxembourg", class: "garden" }),
    polygon([box(2.322, 48.862, 2.333, 48.865)], { name: "Jardin des Tuileries", class: "garden" }),
    polygon([box(2.379, 48.878, 2.386, 48.882)], { name: "Parc des Buttes-Chaumont", class: "park" }),
    polygon([box(2.306, 48.8775, 2.312, 48.881)], { name: "Parc Monceau", class: "park" }),
    polygon(
      [
        closed([
          [2.293, 48.8575],
          [2.2965, 48.8595],
          [2.3045, 48.8545],
          [2.301, 48.8525],
        ]),
      ],
      { name: "Champ de Mars", class: "park" },
    ),
  ]),
  buildings: collection([
    // The Louvre with the Cour Carrée as a hole: a polygon with an inner ring.
    polygon([box(2.3318, 48.8597, 2.3385, 48.8625), box(2.3355, 48.8603, 2.3378, 48.8618).reverse()], {
      name: "Musée du Louvre",
      height: 30,
    }),
    polygon([box(2.3485, 48.8524, 2.3508, 48.8534)], { name: "Notre-Dame", height: 69 }),
    polygon([box(2.311, 48.8545, 2.314, 48.8575)], { name: "Les Invalides", height: 107 }),
    polygon([box(2.312, 48.8655, 2.314, 48.8668)], { name: "Grand Palais", height: 45 }),
    polygon([box(2.2937, 48.8579, 2.2953, 48.8589)], { name: "Tour Eiffel", height: 330 }),
    polygon([box(2.354, 48.88, 2.358, 48.883)], { name: "Gare du Nord", height: 30 }),
    polygon([box(2.3455, 48.8458, 2.3468, 48.8466)], { name: "Panthéon", height: 83 }),
    polygon([box(2.3305, 48.8712, 2.3322, 48.8725)], { name: "Opéra Garnier", height: 56 }),
  ]),
  roads: collection([
    line(PERIPHERIQUE, { name: "Boulevard Périphérique", class: "motorway" }),
    line(
      [
        [2.36, 48.899],
        [2.361, 48.92],
        [2.38, 48.945],
        [2.44, 48.97],
        [2.5, 49.0],
        [2.55, 49.07],
        [2.6, 49.2],
        [2.67, 49.33],
        [2.75, 49.45],
        [2.81, 49.6],
      ],
      { name: "A1", class: "motorway" },
    ),
    line(
      [
        [2.343, 48.8195],
        [2.35, 48.78],
        [2.37, 48.74],
        [2.4, 48.7],
        [2.44, 48.63],
        [2.49, 48.55],
        [2.58, 48.46],
        [2.65, 48.39],
      ],
      { name: "A6", class: "motorway" },
    ),
    line(
      [
        [2.256, 48.845],
        [2.2, 48.835],
        [2.15, 48.83],
        [2.1, 48.85],
        [2.03, 48.89],
        [1.93, 48.96],
        [1.78, 48.99],
        [1.65, 49.05],
      ],
      { name: "A13", class: "motorway" },
    ),
    line(
      [
        [2.405, 48.835],
        [2.46, 48.82],
        [2.52, 48.83],
        [2.59, 48.84],
        [2.69, 48.85],
        [2.8, 48.865],
        [2.95, 48.9],
        [3.08, 48.94],
      ],
      { name: "A4", class: "motorway" },
    ),
    line(
      [
        [2.295, 48.8738],
        [2.3213, 48.8656],
      ],
      { name: "Avenue des Champs-Élysées", class: "primary" },
    ),
    line(
      [
        [2.295, 48.8738],
        [2.2825, 48.878],
      ],
      { name: "Avenue de la Grande Armée", class: "primary" },
    ),
    line(
      [
        [2.3225, 48.866],
        [2.333, 48.8635],
        [2.348, 48.859],
        [2.361, 48.8555],
        [2.369, 48.8532],
      ],
      { name: "Rue de Rivoli", class: "primary" },
    ),
    line(
      [
        [2.318, 48.861],
        [2.326, 48.8575],
        [2.334, 48.8538],
        [2.344, 48.852],
        [2.356, 48.849],
        [2.36, 48.847],
      ],
      { name: "Boulevard Saint-Germain", class: "primary" },
    ),
    line(
      [
        [2.344, 48.8535],
        [2.34, 48.842],
        [2.337, 48.838],
      ],
      { name: "Boulevard Saint-Michel", class: "primary" },
    ),
    line(
      [
        [2.347, 48.858],
        [2.35, 48.865],
        [2.356, 48.876],
      ],
      { name: "Boulevard de Sébastopol", class: "primary" },
    ),
    line(
      [
        [2.336, 48.863],
        [2.3315, 48.871],
      ],
      { name: "Avenue de l'Opéra", class: "street" },
    ),
    line(
      [
        [2.31, 48.874],
        [2.33, 48.873],
        [2.343, 48.872],
      ],
      { name: "Boulevard Haussmann", class: "street" },
    ),
    line(
      [
        [2.37, 48.85],
        [2.396, 48.839],
        [2.413, 48.835],
      ],
      { name: "Avenue Daumesnil", class: "street" },
    ),
    line(
      [
        [2.356, 48.83],
        [2.359, 48.818],
      ],
      { name: "Avenue d'Italie", class: "street" },
    ),
    line(
      [
        [2.3633, 48.8676],
        [2.38, 48.858],
        [2.3958, 48.8483],
      ],
      { name: "Boulevard Voltaire", class: "primary" },
    ),
    line(
      [
        [2.3633, 48.8676],
        [2.3535, 48.883],
      ],
      { name: "Boulevard de Magenta", class: "primary" },
    ),
    line(
      [
        [2.295, 48.8738],
        [2.276, 48.872],
      ],
      { name: "Avenue Foch", class: "street" },
    ),
    line(
      [
        [2.328, 48.856],
        [2.331, 48.841],
        [2.333, 48.833],
      ],
      { name: "Boulevard Raspail", class: "street" },
    ),
    line(
      [
        [2.308, 48.8475],
        [2.322, 48.8425],
        [2.3345, 48.8395],
      ],
      { name: "Boulevard du Montparnasse", class: "street" },
    ),
    line(
      [
        [2.2945, 48.8585],
        [2.3, 48.8505],
        [2.304, 48.842],
        [2.3045, 48.827],
      ],
      { name: "Avenue de Suffren", class: "street" },
    ),
    line(
      [
        [2.3213, 48.8656],
        [2.3137, 48.8637],
        [2.3016, 48.8652],
        [2.2945, 48.8738],
      ],
      { name: "Cours la Reine", class: "street" },
    ),
  ]),
  places: collection([
    point([2.3488, 48.8534], { name: "Paris", rank: 1 }),
    point([2.1301, 48.8049], { name: "Versailles", rank: 2 }),
    point([2.3574, 48.9362], { name: "Saint-Denis", rank: 2 }),
    point([2.4411, 48.7904], { name: "Créteil", rank: 2 }),
  ]),
};

function collection(features: Feature[]): FeatureCollection {
  return { type: "FeatureCollection", features };
}

function* positions(geometry: Geometry): Generator<Position> {
  if (geometry.type === "Point") yield geometry.coordinates as Position;
  else if (geometry.type === "LineString") yield* geometry.coordinates as Position[];
  else if (geometry.type === "Polygon") for (const ring of geometry.coordinates) yield* ring as Position[];
}

/** The Web Mercator envelope of features. */
function extentOf(features: Iterable<Feature>) {
  let [xmin, ymin, xmax, ymax] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const f of features) {
    for (const p of positions(f.geometry)) {
      const [x, y] = toMercator(p);
      [xmin, ymin, xmax, ymax] = [Math.min(xmin, x), Math.min(ymin, y), Math.max(xmax, x), Math.max(ymax, y)];
    }
  }
  return { xmin, ymin, xmax, ymax, spatialReference: WEB_MERCATOR };
}

/** Every tile holding a feature, as gzip-compressed vector tiles keyed `level/row/col` (row = y, col = x). */
function vectorTiles(): Map<string, { level: number; row: number; col: number; bytes: Buffer }> {
  const indexes = Object.entries(VECTOR_LAYERS).map(
    ([name, data]) =>
      [
        name,
        // Sliced eagerly down to the last level (no point threshold), so `tileCoords` lists every tile.
        new GeoJSONVT(data, { maxZoom: MAX_LEVEL, indexMaxZoom: MAX_LEVEL, indexMaxPoints: 0, extent: EXTENT }),
      ] as const,
  );
  const coords = new Map<string, { z: number; x: number; y: number }>();
  for (const [, index] of indexes) for (const c of index.tileCoords) coords.set(`${c.z}/${c.y}/${c.x}`, c);
  const tiles = new Map<string, { level: number; row: number; col: number; bytes: Buffer }>();
  for (const [key, { z, x, y }] of [...coords].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const layers: Record<string, LegacyTile> = {};
    for (const [name, index] of indexes) {
      const tile = index.getTile(z, x, y);
      // Features simplified away at this level leave an empty tile behind: such a layer is left out.
      if (tile && tile.features.length > 0) layers[name] = tile;
    }
    if (Object.keys(layers).length === 0) continue;
    const pbf = fromGeojsonVt(layers, { version: 2, extent: EXTENT });
    tiles.set(key, { level: z, row: y, col: x, bytes: gzipSync(pbf, { level: 9 }) });
  }
  return tiles;
}

function rootJson(): Record<string, unknown> {
  const lods = Array.from({ length: MAX_LEVEL + 1 }, (_, level) => ({
    level,
    resolution: RESOLUTION_0 / 2 ** level,
    scale: SCALE_0 / 2 ** level,
  }));
  const all = Object.values(VECTOR_LAYERS).flatMap((c) => c.features);
  return {
    currentVersion: 11.3,
    name: "Streets",
    copyrightText: "Demo data drawn for mapgate (approximate shapes)",
    capabilities: "TilesOnly",
    type: "indexedVector",
    defaultStyles: "resources/styles",
    tiles: ["tile/{z}/{y}/{x}.pbf"],
    exportTilesAllowed: false,
    initialExtent: extentOf([
      { type: "Feature", properties: {}, geometry: { type: "LineString", coordinates: PERIPHERIQUE } },
    ]),
    fullExtent: extentOf(all),
    minScale: lods[0]?.scale,
    maxScale: lods.at(-1)?.scale,
    tileInfo: {
      rows: 512,
      cols: 512,
      dpi: 96,
      format: "pbf",
      origin: { x: -HALF, y: HALF },
      spatialReference: WEB_MERCATOR,
      lods,
    },
    maxzoom: MAX_LEVEL,
    minLOD: 0,
    maxLOD: MAX_LEVEL,
    resourceInfo: {
      styleVersion: 8,
      tileCompression: "gzip",
      cacheInfo: { storageInfo: { packetSize: PACKET, storageFormat: "compactV2" } },
    },
  };
}

const BACKGROUND = "#f2efe9";

/** The style as a package stores it: its source, sprite and glyphs relative to resources/styles/root.json. */
function styleJson(): Record<string, unknown> {
  const roads = (cls: string, color: string, casing: string, widths: [number, number, number, number]) => [
    {
      id: `roads/${cls}/casing`,
      type: "line",
      source: "esri",
      "source-layer": "roads",
      filter: ["==", ["get", "class"], cls],
      layout: { "line-cap": "round", "line-join": "round" },
      paint: {
        "line-color": casing,
        "line-width": ["interpolate", ["linear"], ["zoom"], widths[0], widths[1] + 1.5, widths[2], widths[3] + 2],
      },
    },
    {
      id: `roads/${cls}`,
      type: "line",
      source: "esri",
      "source-layer": "roads",
      filter: ["==", ["get", "class"], cls],
      layout: { "line-cap": "round", "line-join": "round" },
      paint: {
        "line-color": color,
        "line-width": ["interpolate", ["linear"], ["zoom"], widths[0], widths[1], widths[2], widths[3]],
      },
    },
  ];
  return {
    version: 8,
    name: "Streets",
    // Where a map opens when nothing else says so: all of Paris in a small window.
    center: [2.3405, 48.8585],
    zoom: 11.5,
    sources: { esri: { type: "vector", url: "../../" } },
    sprite: "../sprites/sprite",
    glyphs: "../fonts/{fontstack}/{range}.pbf",
    layers: [
      { id: "background", type: "background", paint: { "background-color": BACKGROUND } },
      {
        id: "water",
        type: "fill",
        source: "esri",
        "source-layer": "water",
        paint: { "fill-color": "#aad3df" },
      },
      { id: "parks", type: "fill", source: "esri", "source-layer": "parks", paint: { "fill-color": "#c8e6b0" } },
      {
        id: "parks/trees",
        type: "fill",
        source: "esri",
        "source-layer": "parks",
        filter: ["==", ["get", "class"], "wood"],
        minzoom: 10,
        paint: { "fill-pattern": "tree" },
      },
      {
        id: "buildings",
        type: "fill",
        source: "esri",
        "source-layer": "buildings",
        minzoom: 10,
        paint: { "fill-color": "#d9d0c9", "fill-outline-color": "#a89a8c" },
      },
      ...roads("street", "#ffffff", "#cfc7bd", [11, 0.5, 16, 8]),
      ...roads("primary", "#fcd6a4", "#d8a35d", [8, 0.8, 16, 12]),
      ...roads("motorway", "#e892a2", "#c24e6b", [4, 1, 16, 14]),
      {
        id: "places",
        type: "circle",
        source: "esri",
        "source-layer": "places",
        paint: {
          "circle-color": "#4a4a4a",
          "circle-radius": ["match", ["get", "rank"], 1, 5, 3],
          "circle-stroke-color": "#ffffff",
          "circle-stroke-width": 1.5,
        },
      },
    ],
  };
}

type Rgba = readonly [number, number, number, number];
/** An icon drawn at a pixel ratio: the colour of a point given in icon units (0…size). */
type Icon = { name: string; size: number; paint: (x: number, y: number) => Rgba | undefined };

const TRANSPARENT: Rgba = [0, 0, 0, 0];
const ICONS: readonly Icon[] = [
  // A tree every few metres of a wood, as a repeating pattern (fill-pattern).
  {
    name: "tree",
    size: 16,
    paint: (x, y) =>
      Math.hypot(x - 5, y - 5) < 2.5 || Math.hypot(x - 12, y - 12) < 2.5 ? [76, 140, 74, 255] : undefined,
  },
  // A point of interest marker, for styles that place icons.
  {
    name: "poi",
    size: 16,
    paint: (x, y) => {
      const d = Math.hypot(x - 8, y - 8);
      if (d < 4) return [255, 255, 255, 255];
      return d < 7 ? [214, 69, 65, 255] : undefined;
    },
  },
];

/** The sprite sheet and its index at a pixel ratio, icons side by side, each sampled 4 × 4 per pixel. */
function sprite(ratio: number): { json: string; png: Buffer } {
  const height = Math.max(...ICONS.map((i) => i.size)) * ratio;
  const width = ICONS.reduce((sum, i) => sum + i.size * ratio, 0);
  const png = new PNG({ width, height });
  png.data.fill(0);
  const index: Record<string, object> = {};
  let left = 0;
  for (const icon of ICONS) {
    const size = icon.size * ratio;
    index[icon.name] = { x: left, y: 0, width: size, height: size, pixelRatio: ratio };
    for (let py = 0; py < size; py++) {
      for (let px = 0; px < size; px++) {
        // Colour weighted by coverage, so edges blend into transparency without dark fringes.
        let [red, green, blue, alpha] = [0, 0, 0, 0];
        for (let s = 0; s < 16; s++) {
          const c = icon.paint((px + ((s % 4) + 0.5) / 4) / ratio, (py + (Math.floor(s / 4) + 0.5) / 4) / ratio);
          const [r, g, b, a] = c ?? TRANSPARENT;
          red += r * a;
          green += g * a;
          blue += b * a;
          alpha += a;
        }
        if (alpha === 0) continue;
        const i = (py * width + left + px) * 4;
        png.data[i] = Math.round(red / alpha);
        png.data[i + 1] = Math.round(green / alpha);
        png.data[i + 2] = Math.round(blue / alpha);
        png.data[i + 3] = Math.round(alpha / 16);
      }
    }
    left += size;
  }
  return { json: JSON.stringify(index), png: PNG.sync.write(png, { colorType: 6 }) };
}

/** Writes the vector tile cache into `dir` (`dir/p12/…`, as a package extracts). */
export async function writeVectorTileCache(dir: string): Promise<void> {
  const p12 = join(dir, "p12");
  const resources = join(p12, "resources");
  for (const sub of ["styles", "sprites", "info"]) await mkdir(join(resources, sub), { recursive: true });
  await writeFile(join(p12, "root.json"), JSON.stringify(rootJson()));
  await writeFile(join(resources, "styles", "root.json"), JSON.stringify(styleJson()));
  const spriteFiles: string[] = [];
  for (const [ratio, suffix] of [
    [1, ""],
    [2, "@2x"],
  ] as const) {
    const { json, png } = sprite(ratio);
    await writeFile(join(resources, "sprites", `sprite${suffix}.json`), json);
    await writeFile(join(resources, "sprites", `sprite${suffix}.png`), png);
    spriteFiles.push(`../sprites/sprite${suffix}.json`, `../sprites/sprite${suffix}.png`);
  }
  // The package's list of its resources (there are no fonts: the style places no text).
  await writeFile(join(resources, "info", "root.json"), JSON.stringify({ resourceInfo: spriteFiles }));

  const bundles = new Map<string, { row: number; col: number; bytes: Uint8Array }[]>();
  for (const t of vectorTiles().values()) {
    const { path } = bundleFile(t.level, t.row, t.col);
    const list = bundles.get(path) ?? [];
    list.push({ row: t.row % PACKET, col: t.col % PACKET, bytes: t.bytes });
    bundles.set(path, list);
  }
  for (const [path, tiles] of bundles) {
    const file = join(p12, "tile", path);
    await mkdir(join(file, ".."), { recursive: true });
    await writeFile(file, writeBundle(tiles));
  }
}
