// A small but real I3S scene layer for the demo: a 3D object layer (I3S 1.7, node pages) of a few box-shaped
// buildings by the Louvre in Paris, written as an extracted scene layer package (gzip files, as SLPKs store
// them): layer document, node page, node index documents, geometry and attribute buffers, statistics.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";

interface Building {
  readonly id: number;
  readonly name: string;
  /** Centre (degrees) and footprint (metres), height (metres). */
  readonly lon: number;
  readonly lat: number;
  readonly width: number;
  readonly depth: number;
  readonly height: number;
  readonly color: readonly [number, number, number];
}

const BUILDINGS: readonly Building[] = [
  {
    id: 1,
    name: "Aile Richelieu",
    lon: 2.3372,
    lat: 48.8622,
    width: 160,
    depth: 40,
    height: 28,
    color: [214, 196, 160],
  },
  { id: 2, name: "Aile Denon", lon: 2.3355, lat: 48.8597, width: 180, depth: 36, height: 26, color: [206, 188, 150] },
  { id: 3, name: "Aile Sully", lon: 2.3393, lat: 48.8607, width: 60, depth: 70, height: 30, color: [220, 204, 170] },
  {
    id: 4,
    name: "Pavillon de Flore",
    lon: 2.3305,
    lat: 48.8603,
    width: 45,
    depth: 45,
    height: 36,
    color: [198, 180, 140],
  },
  {
    id: 5,
    name: "Pavillon de Marsan",
    lon: 2.3322,
    lat: 48.8628,
    width: 45,
    depth: 45,
    height: 34,
    color: [198, 180, 140],
  },
  { id: 6, name: "Pyramide", lon: 2.3359, lat: 48.861, width: 35, depth: 35, height: 21, color: [120, 160, 190] },
];

const METERS_PER_DEGREE_LAT = 111_320;
const metersPerDegreeLon = (lat: number) => METERS_PER_DEGREE_LAT * Math.cos((lat * Math.PI) / 180);

/** The 10 triangles (4 walls, roof) of a box, as per-vertex positions (metres from the box's base centre). */
function boxTriangles(w: number, d: number, h: number): { positions: number[]; normals: number[] } {
  const x = w / 2;
  const y = d / 2;
  const quads: [number[][], number[]][] = [
    [
      [
        [-x, -y, 0],
        [x, -y, 0],
        [x, -y, h],
        [-x, -y, h],
      ],
      [0, -1, 0],
    ],
    [
      [
        [x, -y, 0],
        [x, y, 0],
        [x, y, h],
        [x, -y, h],
      ],
      [1, 0, 0],
    ],
    [
      [
        [x, y, 0],
        [-x, y, 0],
        [-x, y, h],
        [x, y, h],
      ],
      [0, 1, 0],
    ],
    [
      [
        [-x, y, 0],
        [-x, -y, 0],
        [-x, -y, h],
        [-x, y, h],
      ],
      [-1, 0, 0],
    ],
    [
      [
        [-x, -y, h],
        [x, -y, h],
        [x, y, h],
        [-x, y, h],
      ],
      [0, 0, 1],
    ],
  ];
  const positions: number[] = [];
  const normals: number[] = [];
  for (const [[a, b, c, e], n] of quads as [[number[], number[], number[], number[]], number[]][]) {
    for (const v of [a, b, c, a, c, e]) {
      positions.push(...v);
      normals.push(...n);
    }
  }
  return { positions, normals };
}

interface NodeContent {
  readonly index: number;
  readonly buildings: readonly Building[];
}

/** The node's centre: the middle of its buildings' centres, at half the tallest height. */
function centerOf(buildings: readonly Building[]): [number, number, number] {
  const lon = buildings.reduce((s, b) => s + b.lon, 0) / buildings.length;
  const lat = buildings.reduce((s, b) => s + b.lat, 0) / buildings.length;
  return [lon, lat, Math.max(...buildings.map((b) => b.height)) / 2];
}

/** Half sizes (metres) of an east-north-up box around the node's buildings. */
function halfSizeOf(buildings: readonly Building[], center: [number, number, number]): [number, number, number] {
  let hx = 0;
  let hy = 0;
  for (const b of buildings) {
    hx = Math.max(hx, Math.abs(b.lon - center[0]) * metersPerDegreeLon(center[1]) + b.width / 2);
    hy = Math.max(hy, Math.abs(b.lat - center[1]) * METERS_PER_DEGREE_LAT + b.depth / 2);
  }
  return [hx, hy, center[2]];
}

/**
 * The node's geometry buffer (I3S default geometry layout): vertex and feature counts, then positions (x, y as
 * degree offsets and z in metres from the node's centre, as global scene layers store them), normals, uv0,
 * colours, feature ids and face ranges.
 */
function geometryBuffer(node: NodeContent, center: [number, number, number]): Buffer {
  const positions: number[] = [];
  const normals: number[] = [];
  const colors: number[] = [];
  const ranges: number[] = [];
  for (const b of node.buildings) {
    const box = boxTriangles(b.width, b.depth, b.height);
    const first = positions.length / 9;
    for (let i = 0; i < box.positions.length; i += 3) {
      const east = box.positions[i] ?? 0;
      const north = box.positions[i + 1] ?? 0;
      const up = box.positions[i + 2] ?? 0;
      positions.push(
        b.lon - center[0] + east / metersPerDegreeLon(b.lat),
        b.lat - center[1] + north / METERS_PER_DEGREE_LAT,
        up - center[2],
      );
      colors.push(...b.color, 255);
    }
    normals.push(...box.normals);
    ranges.push(first, positions.length / 9 - 1);
  }
  const vertexCount = positions.length / 3;
  const featureCount = node.buildings.length;
  const out = Buffer.alloc(8 + vertexCount * (12 + 12 + 8 + 4) + featureCount * (8 + 8));
  let o = 0;
  o = out.writeUInt32LE(vertexCount, o);
  o = out.writeUInt32LE(featureCount, o);
  for (const v of positions) o = out.writeFloatLE(v, o);
  for (const v of normals) o = out.writeFloatLE(v, o);
  o += vertexCount * 8; // uv0: no textures
  for (const v of colors) o = out.writeUInt8(v, o);
  for (const b of node.buildings) o = out.writeBigUInt64LE(BigInt(b.id), o);
  for (const r of ranges) o = out.writeUInt32LE(r, o);
  return out;
}

/** Attribute buffers: a count, then the values (8-byte aligned for Float64, as I3S readers expect). */
function oidBuffer(values: readonly number[]): Buffer {
  const out = Buffer.alloc(4 + values.length * 4);
  out.writeUInt32LE(values.length, 0);
  values.forEach((v, i) => out.writeUInt32LE(v, 4 + i * 4));
  return out;
}

function float64Buffer(values: readonly number[]): Buffer {
  const out = Buffer.alloc(8 + values.length * 8);
  out.writeUInt32LE(values.length, 0);
  values.forEach((v, i) => out.writeDoubleLE(v, 8 + i * 8));
  return out;
}

function stringBuffer(values: readonly string[]): Buffer {
  const bytes = values.map((v) => Buffer.from(`${v}\u0000`, "utf8"));
  const total = bytes.reduce((s, b) => s + b.length, 0);
  const head = Buffer.alloc(8 + values.length * 4);
  head.writeUInt32LE(values.length, 0);
  head.writeUInt32LE(total, 4);
  bytes.forEach((b, i) => head.writeUInt32LE(b.length, 8 + i * 4));
  return Buffer.concat([head, ...bytes]);
}

const FIELDS = [
  { key: "f_0", name: "OBJECTID", type: "esriFieldTypeOID", valueType: "Oid32" },
  { key: "f_1", name: "NAME", type: "esriFieldTypeString", valueType: "String" },
  { key: "f_2", name: "HEIGHT", type: "esriFieldTypeDouble", valueType: "Float64" },
] as const;

function attributeStorageInfo() {
  return FIELDS.map((f) => {
    const header = [{ property: "count", valueType: "UInt32" }];
    if (f.valueType === "Oid32")
      return {
        key: f.key,
        name: f.name,
        header,
        ordering: ["ObjectIds"],
        objectIds: { valueType: "Oid32", valuesPerElement: 1 },
      };
    if (f.valueType === "String") {
      return {
        key: f.key,
        name: f.name,
        header: [...header, { property: "attributeValuesByteCount", valueType: "UInt32" }],
        ordering: ["attributeByteCounts", "attributeValues"],
        attributeByteCounts: { valueType: "UInt32", valuesPerElement: 1 },
        attributeValues: { valueType: "String", encoding: "UTF-8", valuesPerElement: 1 },
      };
    }
    return {
      key: f.key,
      name: f.name,
      header,
      ordering: ["attributeValues"],
      attributeValues: { valueType: f.valueType, valuesPerElement: 1 },
    };
  });
}

const gz = (data: Buffer | string) => gzipSync(typeof data === "string" ? Buffer.from(data) : data);

async function put(dir: string, file: string, data: Buffer | string): Promise<void> {
  const path = join(dir, file);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, gz(data));
}

function statistics(values: readonly number[]) {
  const count = values.length;
  const sum = values.reduce((s, v) => s + v, 0);
  const avg = sum / count;
  const variance = values.reduce((s, v) => s + (v - avg) ** 2, 0) / count;
  return {
    stats: {
      min: Math.min(...values),
      max: Math.max(...values),
      avg,
      stddev: Math.sqrt(variance),
      count,
      sum,
      variance,
    },
  };
}

/** Writes the demo scene layer into `dir`. */
export async function writeSceneLayer(dir: string): Promise<void> {
  const nodes: NodeContent[] = [
    { index: 1, buildings: BUILDINGS.slice(0, 3) },
    { index: 2, buildings: BUILDINGS.slice(3) },
  ];
  const all = centerOf(BUILDINGS);
  const allHalf = halfSizeOf(BUILDINGS, all);
  const radius = Math.hypot(...allHalf);
  const extent = [
    Math.min(...BUILDINGS.map((b) => b.lon)) - 0.002,
    Math.min(...BUILDINGS.map((b) => b.lat)) - 0.001,
    Math.max(...BUILDINGS.map((b) => b.lon)) + 0.002,
    Math.max(...BUILDINGS.map((b) => b.lat)) + 0.001,
  ];
  const obb = (center: [number, number, number], half: [number, number, number]) => ({
    center,
    halfSize: half,
    quaternion: [0, 0, 0, 1],
  });
  const pageNodes: Record<string, unknown>[] = [
    { index: 0, lodThreshold: 0, obb: obb(all, allHalf), children: [1, 2] },
  ];
  for (const node of nodes) {
    const center = centerOf(node.buildings);
    const half = halfSizeOf(node.buildings, center);
    const geometry = geometryBuffer(node, center);
    const vertexCount = geometry.readUInt32LE(0);
    pageNodes.push({
      index: node.index,
      parentIndex: 0,
      lodThreshold: 0,
      obb: obb(center, half),
      children: [],
      mesh: {
        material: { definition: 0 },
        geometry: { definition: 0, resource: node.index, vertexCount, featureCount: node.buildings.length },
        attribute: { resource: node.index },
      },
    });
    const base = `nodes/${node.index}`;
    await put(dir, `${base}/geometries/0.bin.gz`, geometry);
    await put(dir, `${base}/attributes/f_0/0.bin.gz`, oidBuffer(node.buildings.map((b) => b.id)));
    await put(dir, `${base}/attributes/f_1/0.bin.gz`, stringBuffer(node.buildings.map((b) => b.name)));
    await put(dir, `${base}/attributes/f_2/0.bin.gz`, float64Buffer(node.buildings.map((b) => b.height)));
    // The node index document: what readers of I3S before node pages (1.6) walk instead.
    await put(
      dir,
      `${base}/3dNodeIndexDocument.json.gz`,
      JSON.stringify({
        id: String(node.index),
        level: 1,
        mbs: [...center, Math.hypot(...half)],
        obb: obb(center, half),
        parentNode: { id: "root", href: "../root", mbs: [...all, radius] },
        children: [],
        geometryData: [{ href: "./geometries/0" }],
        attributeData: FIELDS.map((f) => ({ href: `./attributes/${f.key}/0` })),
        lodSelection: [{ metricType: "maxScreenThresholdSQ", maxError: 0 }],
      }),
    );
  }
  await put(dir, "nodepages/0.json.gz", JSON.stringify({ nodes: pageNodes }));
  await put(
    dir,
    "nodes/root/3dNodeIndexDocument.json.gz",
    JSON.stringify({
      id: "root",
      level: 0,
      mbs: [...all, radius],
      obb: obb(all, allHalf),
      children: nodes.map((n) => ({ id: String(n.index), href: `../${n.index}` })),
      lodSelection: [{ metricType: "maxScreenThresholdSQ", maxError: 0 }],
    }),
  );
  await put(dir, "statistics/f_2/0.json.gz", JSON.stringify(statistics(BUILDINGS.map((b) => b.height))));
  const layer = {
    id: 0,
    version: "{7C7C33F4-1F1E-4A5E-8B53-6F0C1A2D0E01}",
    name: "Buildings3D",
    alias: "Buildings3D",
    description: "Demo buildings by the Louvre, Paris",
    copyrightText: "",
    layerType: "3DObject",
    href: "./layers/0",
    capabilities: ["View", "Query"],
    spatialReference: { wkid: 4326, latestWkid: 4326, vcsWkid: 5773, latestVcsWkid: 5773 },
    heightModelInfo: { heightModel: "gravity_related_height", vertCRS: "EGM96_Geoid", heightUnit: "meter" },
    ZFactor: 1,
    disablePopup: false,
    serviceUpdateTimeStamp: { lastUpdate: 1767225600000 },
    store: {
      id: "{7C7C33F4-1F1E-4A5E-8B53-6F0C1A2D0E02}",
      profile: "meshes",
      resourcePattern: ["3dNodeIndexDocument", "Attributes", "Geometry"],
      rootNode: "./nodes/root",
      extent,
      indexCRS: "http://www.opengis.net/def/crs/EPSG/0/4326",
      vertexCRS: "http://www.opengis.net/def/crs/EPSG/0/4326",
      normalReferenceFrame: "east-north-up",
      lodType: "MeshPyramid",
      lodModel: "node-switching",
      version: "1.7",
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
    materialDefinitions: [
      { doubleSided: true, pbrMetallicRoughness: { baseColorFactor: [1, 1, 1, 1], metallicFactor: 0 } },
    ],
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
    fields: FIELDS.map((f) => ({ name: f.name, type: f.type, alias: f.name })),
    attributeStorageInfo: attributeStorageInfo(),
    statisticsInfo: [{ key: "f_2", name: "HEIGHT", href: "./statistics/f_2/0" }],
    popupInfo: {
      title: "{NAME}",
      fieldInfos: [
        { fieldName: "NAME", visible: true },
        { fieldName: "HEIGHT", visible: true },
      ],
    },
  };
  await put(dir, "3dSceneLayer.json.gz", JSON.stringify(layer));
  await writeFile(
    join(dir, "metadata.json"),
    JSON.stringify({
      folderPattern: "1",
      ArchiveCompressionType: "Store",
      ResourceCompressionType: "GZIP",
      I3SVersion: "1.7",
      nodeCount: pageNodes.length,
    }),
  );
}
