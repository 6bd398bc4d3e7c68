// A small but real I3S scene layer for the demo: a 3D object layer (I3S 1.7, node pages) of a few box-shaped
// buildings by the Louvre in Paris, written as an extracted scene layer package: every resource gzipped as
// SLPKs store them, plus the package's metadata.json. Same bytes on every run (gzip with no timestamp, fixed
// ids and dates), so the demo store and the tests that read it never drift.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";

type Vec3 = [number, number, number];

interface Building {
  readonly id: number;
  readonly name: string;
  /** Centre of the footprint (degrees). */
  readonly lon: number;
  readonly lat: number;
  /** East-west and north-south sizes and height (metres). */
  readonly width: number;
  readonly depth: number;
  readonly height: number;
  readonly color: readonly [number, number, number];
}

const building = (
  id: number,
  name: string,
  [lon, lat]: [number, number],
  [width, depth, height]: Vec3,
  color: Building["color"],
): Building => ({ id, name, lon, lat, width, depth, height, color });

const BUILDINGS: readonly Building[] = [
  building(1, "Aile Richelieu", [2.3372, 48.8622], [160, 40, 28], [214, 196, 160]),
  building(2, "Aile Denon", [2.3355, 48.8597], [180, 36, 26], [206, 188, 150]),
  building(3, "Aile Sully", [2.3393, 48.8607], [60, 70, 30], [220, 204, 170]),
  building(4, "Pavillon de Flore", [2.3305, 48.8603], [45, 45, 36], [198, 180, 140]),
  building(5, "Pavillon de Marsan", [2.3322, 48.8628], [45, 45, 34], [198, 180, 140]),
  building(6, "Pyramide", [2.3359, 48.861], [35, 35, 21], [120, 160, 190]),
];

/** The leaves below the root (node page index → its buildings); the root holds no mesh of its own. */
const LEAVES: readonly { readonly index: number; readonly buildings: readonly Building[] }[] = [
  { index: 1, buildings: BUILDINGS.slice(0, 3) },
  { index: 2, buildings: BUILDINGS.slice(3) },
];

/** The ground by the Louvre, in metres above the EGM96 geoid: at zero the buildings would sink below terrain. */
const GROUND = 34;
/** Added to each half size, for the rounding of positions to Float32. */
const OBB_MARGIN = 0.05;

/** The WGS84 ellipsoid: its semi-major axis (metres) and first eccentricity squared. */
const A = 6_378_137;
const E2 = 0.006_694_379_990_14;
const rad = (degrees: number) => (degrees * Math.PI) / 180;

/** Metres per degree of longitude and of latitude at a latitude, on the ellipsoid. */
function metersPerDegree(lat: number): { lon: number; lat: number } {
  const w = 1 - E2 * Math.sin(rad(lat)) ** 2;
  return { lon: rad(1) * (A / Math.sqrt(w)) * Math.cos(rad(lat)), lat: (rad(1) * A * (1 - E2)) / w ** 1.5 };
}

/** Earth-centred, earth-fixed coordinates (metres) of a longitude, latitude and ellipsoidal height. */
function ecef([lon, lat, h]: Vec3): Vec3 {
  const n = A / Math.sqrt(1 - E2 * Math.sin(rad(lat)) ** 2);
  const r = (n + h) * Math.cos(rad(lat));
  return [r * Math.cos(rad(lon)), r * Math.sin(rad(lon)), (n * (1 - E2) + h) * Math.sin(rad(lat))];
}

/** The east, north and up directions at a place, in earth-centred coordinates. */
function enuAxes(lon: number, lat: number): [Vec3, Vec3, Vec3] {
  const [sl, cl, sp, cp] = [Math.sin(rad(lon)), Math.cos(rad(lon)), Math.sin(rad(lat)), Math.cos(rad(lat))];
  return [
    [-sl, cl, 0],
    [-sp * cl, -sp * sl, cp],
    [cp * cl, cp * sl, sp],
  ];
}

/**
 * The rotation from east-north-up at a place to earth-centred axes, as an [x, y, z, w] quaternion: a global
 * layer's OBB is oriented in earth-centred space, so an identity quaternion would tilt every box.
 */
function enuQuaternion(lon: number, lat: number): [number, number, number, number] {
  // The rotation matrix's columns are the east, north and up directions.
  const [[m00, m10, m20], [m01, m11, m21], [m02, m12, m22]] = enuAxes(lon, lat);
  const trace = m00 + m11 + m22;
  if (trace > 0) {
    const s = Math.sqrt(trace + 1) * 2;
    return [(m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, s / 4];
  }
  if (m00 > m11 && m00 > m22) {
    const s = Math.sqrt(1 + m00 - m11 - m22) * 2;
    return [s / 4, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s];
  }
  if (m11 > m22) {
    const s = Math.sqrt(1 + m11 - m00 - m22) * 2;
    return [(m01 + m10) / s, s / 4, (m12 + m21) / s, (m02 - m20) / s];
  }
  const s = Math.sqrt(1 + m22 - m00 - m11) * 2;
  return [(m02 + m20) / s, (m12 + m21) / s, s / 4, (m10 - m01) / s];
}

/** The corners (longitude, latitude, height) of a building's box, by bits: 1 east, 2 north, 4 top. */
function cornersOf(b: Building): Vec3[] {
  const m = metersPerDegree(b.lat);
  return Array.from({ length: 8 }, (_, bits): Vec3 => [
    b.lon + ((bits & 1 ? 1 : -1) * b.width) / 2 / m.lon,
    b.lat + ((bits & 2 ? 1 : -1) * b.depth) / 2 / m.lat,
    GROUND + (bits & 4 ? b.height : 0),
  ]);
}
/** A box's faces by their corners, counter-clockwise seen from outside, with their normals (east-north-up). */
const FACES: readonly { readonly corners: readonly [number, number, number, number]; readonly normal: Vec3 }[] = [
  { corners: [0, 1, 5, 4], normal: [0, -1, 0] },
  { corners: [1, 3, 7, 5], normal: [1, 0, 0] },
  { corners: [3, 2, 6, 7], normal: [0, 1, 0] },
  { corners: [2, 0, 4, 6], normal: [-1, 0, 0] },
  { corners: [4, 5, 7, 6], normal: [0, 0, 1] },
];
/** Walls and roof, two triangles each: no floor, as nobody looks at a building from below ground. */
const TRIANGLES_PER_BOX = FACES.length * 2;

/**
 * A node's oriented bounding box, built as the spec asks for global layers: the centre in degrees (the middle
 * of the buildings' footprint centres, halfway up the tallest), axes east-north-up there, and half sizes in metres
 * from every corner measured along those axes in earth-centred space.
 */
function obbOf(buildings: readonly Building[]) {
  const lon = buildings.reduce((s, b) => s + b.lon, 0) / buildings.length;
  const lat = buildings.reduce((s, b) => s + b.lat, 0) / buildings.length;
  const center: Vec3 = [lon, lat, GROUND + Math.max(...buildings.map((b) => b.height)) / 2];
  const origin = ecef(center);
  const axes = enuAxes(lon, lat);
  const halfSize: Vec3 = [0, 0, 0];
  for (const point of buildings.flatMap(cornersOf)) {
    const d = ecef(point).map((v, i) => v - (origin[i] ?? 0));
    axes.forEach((axis, i) => {
      const along = Math.abs(axis.reduce((s, v, j) => s + v * (d[j] ?? 0), 0)) + OBB_MARGIN;
      halfSize[i] = Math.max(halfSize[i] ?? 0, along);
    });
  }
  return { center, halfSize, quaternion: enuQuaternion(lon, lat) };
}

/** A bounding sphere as I3S 1.6 documents give it: [lon, lat, z, radius in metres]. */
const mbsOf = (obb: { center: Vec3; halfSize: Vec3 }) => [...obb.center, Math.hypot(...obb.halfSize)];

/**
 * A leaf's geometry buffer in the layout of the layer's geometry definition (and of its 1.6 default geometry
 * schema): vertex and feature counts, then per vertex the positions (x, y in degrees and z in metres, from
 * the node's OBB centre, as global layers store them), normals (east-north-up), uv0 (unused: no textures)
 * and colours, then per feature its id and its range of triangles.
 */
function geometryBuffer(buildings: readonly Building[], center: Vec3): Buffer {
  const vertexCount = buildings.length * TRIANGLES_PER_BOX * 3;
  const out = Buffer.alloc(8 + vertexCount * (12 + 12 + 8 + 4) + buildings.length * (8 + 8));
  out.writeUInt32LE(vertexCount, 0);
  out.writeUInt32LE(buildings.length, 4);
  let position = 8;
  let normal = position + vertexCount * 12;
  let color = normal + vertexCount * 12 + vertexCount * 8;
  let feature = color + vertexCount * 4;
  for (const b of buildings) {
    const corners = cornersOf(b);
    for (const face of FACES) {
      const [c0, c1, c2, c3] = face.corners;
      for (const bits of [c0, c1, c2, c0, c2, c3]) {
        const point = corners[bits] ?? center;
        for (let i = 0; i < 3; i++) position = out.writeFloatLE((point[i] ?? 0) - (center[i] ?? 0), position);
        for (const v of face.normal) normal = out.writeFloatLE(v, normal);
        for (const v of [...b.color, 255]) color = out.writeUInt8(v, color);
      }
    }
    feature = out.writeBigUInt64LE(BigInt(b.id), feature);
  }
  buildings.forEach((_, i) => {
    feature = out.writeUInt32LE(i * TRIANGLES_PER_BOX, feature);
    feature = out.writeUInt32LE((i + 1) * TRIANGLES_PER_BOX - 1, feature);
  });
  return out;
}

/** An object id buffer: a count, then the ids. */
function oidBuffer(values: readonly number[]): Buffer {
  const out = Buffer.alloc(4 + values.length * 4);
  out.writeUInt32LE(values.length, 0);
  values.forEach((v, i) => out.writeUInt32LE(v, 4 + i * 4));
  return out;
}

/** A Float64 buffer: a count and 4 bytes of padding, so the values are 8-byte aligned. */
function float64Buffer(values: readonly number[]): Buffer {
  const out = Buffer.alloc(8 + values.length * 8);
  out.writeUInt32LE(values.length, 0);
  values.forEach((v, i) => out.writeDoubleLE(v, 8 + i * 8));
  return out;
}

/** A string buffer: count, total bytes, each string's byte count, then the NUL-terminated UTF-8 strings. */
function stringBuffer(values: readonly string[]): Buffer {
  const bytes = values.map((v) => Buffer.from(`${v}\u0000`, "utf8"));
  const head = Buffer.alloc(8 + values.length * 4);
  head.writeUInt32LE(values.length, 0);
  head.writeUInt32LE(
    bytes.reduce((s, b) => s + b.length, 0),
    4,
  );
  bytes.forEach((b, i) => head.writeUInt32LE(b.length, 8 + i * 4));
  return Buffer.concat([head, ...bytes]);
}

const COUNT = { property: "count", valueType: "UInt32" };

/** The attribute fields: how each is described and stored, and its buffer for a node's buildings. */
const FIELDS = [
  {
    key: "f_0",
    field: { name: "OBJECTID", type: "esriFieldTypeOID", alias: "OBJECTID" },
    storage: { header: [COUNT], ordering: ["ObjectIds"], objectIds: { valueType: "Oid32", valuesPerElement: 1 } },
    buffer: (bs: readonly Building[]) => oidBuffer(bs.map((b) => b.id)),
  },
  {
    key: "f_1",
    field: { name: "NAME", type: "esriFieldTypeString", alias: "Name" },
    storage: {
      header: [COUNT, { property: "attributeValuesByteCount", valueType: "UInt32" }],
      ordering: ["attributeByteCounts", "attributeValues"],
      attributeByteCounts: { valueType: "UInt32", valuesPerElement: 1 },
      attributeValues: { valueType: "String", encoding: "UTF-8", valuesPerElement: 1 },
    },
    buffer: (bs: readonly Building[]) => stringBuffer(bs.map((b) => b.name)),
  },
  {
    key: "f_2",
    field: { name: "HEIGHT", type: "esriFieldTypeDouble", alias: "Height (m)" },
    storage: {
      header: [COUNT],
      ordering: ["attributeValues"],
      attributeValues: { valueType: "Float64", valuesPerElement: 1 },
    },
    buffer: (bs: readonly Building[]) => float64Buffer(bs.map((b) => b.height)),
  },
] as const;

function numberStatistics(values: readonly number[]) {
  const count = values.length;
  const sum = values.reduce((s, v) => s + v, 0);
  const avg = sum / count;
  const variance = values.reduce((s, v) => s + (v - avg) ** 2, 0) / count;
  const min = Math.min(...values);
  const max = Math.max(...values);
  return { stats: { min, max, avg, stddev: Math.sqrt(variance), count, sum, variance } };
}

function stringStatistics(values: readonly string[]) {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  const mostFrequentValues = [...counts].map(([value, count]) => ({ value, count }));
  return { stats: { totalValuesCount: values.length, mostFrequentValues } };
}

/** Fixed, so the written layer is the same on every run. */
const LAYER_VERSION = "7C7C33F4-1F1E-4A5E-8B53-6F0C1A2D0E01";
const STORE_ID = "7C7C33F4-1F1E-4A5E-8B53-6F0C1A2D0E02";
const UPDATED = Date.UTC(2026, 0, 1);

function layerDocument() {
  const lons = BUILDINGS.map((b) => b.lon);
  const lats = BUILDINGS.map((b) => b.lat);
  const extent = [
    Math.min(...lons) - 0.002,
    Math.min(...lats) - 0.001,
    Math.max(...lons) + 0.002,
    Math.max(...lats) + 0.001,
  ];
  const spatialReference = { wkid: 4326, latestWkid: 4326, vcsWkid: 5773, latestVcsWkid: 5773 };
  return {
    id: 0,
    version: LAYER_VERSION,
    name: "Buildings3D",
    alias: "Buildings3D",
    description: "Demo buildings by the Louvre, Paris",
    copyrightText: "",
    layerType: "3DObject",
    href: "./layers/0",
    capabilities: ["View", "Query"],
    spatialReference,
    heightModelInfo: { heightModel: "gravity_related_height", vertCRS: "EGM96_Geoid", heightUnit: "meter" },
    fullExtent: {
      xmin: extent[0],
      ymin: extent[1],
      xmax: extent[2],
      ymax: extent[3],
      zmin: GROUND,
      zmax: GROUND + Math.max(...BUILDINGS.map((b) => b.height)),
      spatialReference,
    },
    ZFactor: 1,
    disablePopup: false,
    serviceUpdateTimeStamp: { lastUpdate: UPDATED },
    store: {
      id: STORE_ID,
      profile: "meshpyramids",
      version: "1.7",
      resourcePattern: ["3dNodeIndexDocument", "Attributes", "Geometry"],
      rootNode: "./nodes/root",
      extent,
      indexCRS: "http://www.opengis.net/def/crs/EPSG/0/4326",
      vertexCRS: "http://www.opengis.net/def/crs/EPSG/0/4326",
      normalReferenceFrame: "east-north-up",
      attributeEncoding: "application/octet-stream; version=1.6",
      lodType: "MeshPyramid",
      lodModel: "node-switching",
      // Still required in 1.7, and what readers of uncompressed geometry (loaders.gl among them) go by.
      defaultGeometrySchema: {
        geometryType: "triangles",
        header: [
          { property: "vertexCount", type: "UInt32" },
          { property: "featureCount", type: "UInt32" },
        ],
        topology: "PerAttributeArray",
        ordering: ["position", "normal", "uv0", "color"],
        vertexAttributes: {
          position: { valueType: "Float32", valuesPerElement: 3 },
          normal: { valueType: "Float32", valuesPerElement: 3 },
          uv0: { valueType: "Float32", valuesPerElement: 2 },
          color: { valueType: "UInt8", valuesPerElement: 4 },
        },
        featureAttributeOrder: ["id", "faceRange"],
        featureAttributes: {
          id: { valueType: "UInt64", valuesPerElement: 1 },
          faceRange: { valueType: "UInt32", valuesPerElement: 2 },
        },
      },
    },
    nodePages: { nodesPerPage: 64, lodSelectionMetricType: "maxScreenThresholdSQ" },
    // The colours are in the vertices: the material only says how to light them.
    materialDefinitions: [{ doubleSided: true, pbrMetallicRoughness: { metallicFactor: 0, roughnessFactor: 1 } }],
    geometryDefinitions: [
      {
        geometryBuffers: [
          {
            offset: 8,
            position: { type: "Float32", component: 3 },
            normal: { type: "Float32", component: 3 },
            uv0: { type: "Float32", component: 2 },
            color: { type: "UInt8", component: 4 },
            featureId: { type: "UInt64", component: 1, binding: "per-feature" },
            faceRange: { type: "UInt32", component: 2, binding: "per-feature" },
          },
        ],
      },
    ],
    fields: FIELDS.map((f) => f.field),
    attributeStorageInfo: FIELDS.map((f) => ({ key: f.key, name: f.field.name, ...f.storage })),
    statisticsInfo: [
      { key: "f_1", name: "NAME", href: "./statistics/f_1/0" },
      { key: "f_2", name: "HEIGHT", href: "./statistics/f_2/0" },
    ],
    popupInfo: {
      title: "{NAME}",
      fieldInfos: FIELDS.map((f) => ({ fieldName: f.field.name, label: f.field.alias, visible: true })),
    },
  };
}

async function put(dir: string, file: string, data: Buffer | object): Promise<void> {
  const path = join(dir, file);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, gzipSync(Buffer.isBuffer(data) ? data : Buffer.from(JSON.stringify(data))));
}

/** Writes the demo scene layer, as an extracted scene layer package, into `dir` (created if missing). */
export async function writeSceneLayer(dir: string): Promise<void> {
  const root = obbOf(BUILDINGS);
  const leaves = LEAVES.map((leaf) => ({ ...leaf, obb: obbOf(leaf.buildings) }));
  const nodes: object[] = [{ index: 0, lodThreshold: 0, obb: root, children: leaves.map((l) => l.index) }];
  for (const leaf of leaves) {
    const geometry = geometryBuffer(leaf.buildings, leaf.obb.center);
    const vertexCount = geometry.readUInt32LE(0);
    nodes.push({
      index: leaf.index,
      parentIndex: 0,
      lodThreshold: 0,
      obb: leaf.obb,
      children: [],
      mesh: {
        material: { definition: 0 },
        geometry: { definition: 0, resource: leaf.index, vertexCount, featureCount: leaf.buildings.length },
        attribute: { resource: leaf.index },
      },
    });
    const base = `nodes/${leaf.index}`;
    await put(dir, `${base}/geometries/0.bin.gz`, geometry);
    for (const f of FIELDS) await put(dir, `${base}/attributes/${f.key}/0.bin.gz`, f.buffer(leaf.buildings));
    // What readers from before node pages (I3S 1.6) walk instead.
    await put(dir, `${base}/3dNodeIndexDocument.json.gz`, {
      id: String(leaf.index),
      level: 2,
      version: LAYER_VERSION,
      mbs: mbsOf(leaf.obb),
      obb: leaf.obb,
      parentNode: { id: "root", href: "../root", mbs: mbsOf(root), obb: root },
      lodSelection: [{ metricType: "maxScreenThresholdSQ", maxError: 0 }],
      geometryData: [{ href: "./geometries/0" }],
      attributeData: FIELDS.map((f) => ({ href: `./attributes/${f.key}/0` })),
    });
  }
  await put(dir, "nodes/root/3dNodeIndexDocument.json.gz", {
    id: "root",
    level: 1,
    version: LAYER_VERSION,
    mbs: mbsOf(root),
    obb: root,
    children: leaves.map((l) => ({ id: String(l.index), href: `../${l.index}`, mbs: mbsOf(l.obb), obb: l.obb })),
    lodSelection: [{ metricType: "maxScreenThresholdSQ", maxError: 0 }],
  });
  await put(dir, "nodepages/0.json.gz", { nodes });
  await put(dir, "statistics/f_1/0.json.gz", stringStatistics(BUILDINGS.map((b) => b.name)));
  await put(dir, "statistics/f_2/0.json.gz", numberStatistics(BUILDINGS.map((b) => b.height)));
  await put(dir, "3dSceneLayer.json.gz", layerDocument());
  // The package's own description: the one file an SLPK does not gzip.
  await writeFile(
    join(dir, "metadata.json"),
    JSON.stringify({
      folderPattern: "BASIC",
      ArchiveCompressionType: "STORE",
      ResourceCompressionType: "GZIP",
      I3SVersion: "1.7",
      nodeCount: nodes.length,
    }),
  );
}
