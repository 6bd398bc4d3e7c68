// A child process for the draw-path figures' floor (bench/draw.ts): a bare node:http server answering the tile
// queries the ArcGIS Maps SDK makes with the least work each takes. Each tile's statement is the one mapgate's plan
// and SQL emitter make for it, prepared once at start with its exact spatial test and its quantization grid;
// a request is then one run of that statement on node:sqlite (the R*Tree, the exact test on each candidate), each
// row's geometry decoded, projected to the answer's spatial reference and generalized to the grid, and the page
// encoded by mapgate's own PBF encoder. No routing, no parameters read per request, no catalog, no pipeline:
// what separates mapgate from it is everything mapgate does beyond reading the rows and writing the tile.
//   node bench/draw-floor.ts FILE SPEC.json  →  prints `floor PORT`; GET /<i> answers tile i of SPEC (a JSON
//   list of { table, query }: the query's `?…` as the SDK sent it).
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import type { Geometry } from "geojson";
import { GeoPackage } from "#shared/features/geopackage.ts";
import { fromEsriGeometry } from "#shared/features/geometry/esri-json.ts";
import { generalize } from "#shared/features/geometry/generalize.ts";
import { encodeFeatureCollection, type PbfField } from "#shared/features/geometry/pbf.ts";
import { project, projectBounds } from "#shared/features/geometry/projection.ts";
import { gridOf, type QuantizationGrid } from "#shared/features/geometry/quantize.ts";
import { prepareSpatialFilter } from "#shared/features/geometry/spatial.ts";
import { decodeGeoPackageGeometry } from "#shared/features/geometry/wkb.ts";
import {
  MAX_RECORD_COUNT,
  spatialReference,
  STANDARD_MAX_RECORD_COUNT,
  TILE_MAX_RECORD_COUNT,
} from "#shared/features/layer-json.ts";
import { planQuery } from "#shared/features/plan.ts";
import type { FeatureRow, LayerSchema } from "#shared/features/schema.ts";
import { emitQuery } from "#shared/features/sql.ts";
import { sqliteEmitter, SQLITE_DEADLINE } from "#shared/features/sql/sqlite.ts";

export interface DrawFloorTile {
  readonly table: string;
  /** The query's `?…` part, as the SDK sent it. */
  readonly query: string;
}

interface Prepared {
  readonly run: () => unknown[][];
  readonly schema: LayerSchema;
  readonly fields: readonly PbfField[];
  /** Where each answered field and the geometry lie in a row. */
  readonly fieldAt: readonly [string, number][];
  readonly geometryAt: number;
  readonly pageSize: number;
  readonly outSR: number;
  readonly grid: QuantizationGrid;
  /** The generalization: the larger of maxAllowableOffset and, in view mode, the grid's cell. */
  readonly offset: number;
  readonly test: (g: Geometry | null | undefined) => boolean;
}

const [file, specFile] = process.argv.slice(2);
if (!file || !specFile) throw new Error("usage: draw-floor.ts FILE SPEC.json");
const tiles = JSON.parse(readFileSync(specFile, "utf8")) as DrawFloorTile[];

// The layers' schemas as mapgate reads them, once; the floor's own connection reads the rows.
const reader = await GeoPackage.open(file, "floor");
const db = new DatabaseSync(file, { readOnly: true });
/** The exact test of the tile being answered: the statement calls it on each candidate the R*Tree gives. */
let current: Prepared["test"] = () => false;
db.function(SQLITE_DEADLINE, { deterministic: false }, () => 1);
db.function("mapgate_spatial", { deterministic: false }, (blob) =>
  blob instanceof Uint8Array && current(decodeGeoPackageGeometry(blob).geometry) ? 1 : 0,
);

function prepare(tile: DrawFloorTile): Prepared {
  const schema = reader.schema(tile.table);
  if (!schema || !("fields" in schema) || !schema.geometry) throw new Error(`${tile.table}: no such layer`);
  const params = new URLSearchParams(tile.query);
  const plan = planQuery({ get: (n) => params.get(n) ?? undefined }, schema, {
    maxRecordCount: MAX_RECORD_COUNT,
    standardMaxRecordCount: STANDARD_MAX_RECORD_COUNT,
    tileMaxRecordCount: TILE_MAX_RECORD_COUNT,
  });
  const srid = schema.geometry.srid;
  if (plan.output !== "features" || !plan.spatial || !plan.quantization || plan.spatial.relation !== "intersects")
    throw new Error(`${tile.query}: not a tile query (features in an envelope, quantized)`);
  // The query envelope in the layer's coordinates and its exact test, as mapgate's query step makes them.
  const parsed = fromEsriGeometry(plan.spatial.geometry, plan.spatial.geometryType);
  const inSR = parsed.spatialReference ?? plan.spatial.inSR ?? srid;
  const geometry = project(parsed.geometry, inSR, srid);
  const spatial = prepareSpatialFilter("esriSpatialRelIntersects", geometry, { distance: 0, srid });
  const emitted = emitQuery(sqliteEmitter, plan, schema, { bbox: spatial.bounds, relation: "intersects", geometry });
  const statement = db.prepare(emitted.sql);
  statement.setReturnArrays(true);
  const outSR = plan.outSR ?? srid;
  const q = plan.quantization;
  const from = q.extentSR ?? plan.spatial.inSR ?? srid;
  const extent = q.extent && from !== outSR ? projectBounds(q.extent, from, outSR) : q.extent;
  if (!extent) throw new Error(`${tile.query}: quantization without an extent`);
  return {
    run: () => statement.all(...(emitted.params as SQLInputValue[])) as unknown as unknown[][],
    schema,
    fields: plan.fields.map((f) => ({ name: f.name, type: f.type, alias: f.alias })),
    fieldAt: emitted.columns.flatMap((c, i) => (c.role === "field" ? [[c.name, i] as [string, number]] : [])),
    geometryAt: emitted.columns.findIndex((c) => c.role === "geometry"),
    pageSize: plan.pageSize,
    outSR,
    grid: gridOf(extent, q.tolerance, q.originPosition),
    offset: Math.max(plan.maxAllowableOffset ?? 0, q.mode === "view" ? q.tolerance : 0),
    test: (g) => spatial.test(g),
  };
}

const prepared = tiles.map(prepare);
reader.db.close();

function answer(p: Prepared): Uint8Array {
  current = p.test;
  const rows = p.run();
  const more = rows.length > p.pageSize;
  const page = more ? rows.slice(0, p.pageSize) : rows;
  const srid = p.schema.geometry?.srid ?? 0;
  const features = page.map((row): FeatureRow => {
    const attributes: Record<string, string | number | null> = {};
    for (const [name, i] of p.fieldAt) attributes[name] = row[i] as string | number | null;
    const blob = row[p.geometryAt];
    let g = blob instanceof Uint8Array ? (decodeGeoPackageGeometry(blob).geometry ?? null) : null;
    if (g && srid !== p.outSR) g = project(g, srid, p.outSR);
    if (g && p.offset > 0) g = generalize(g, p.offset);
    return { attributes, geometry: g };
  });
  return encodeFeatureCollection({
    objectIdFieldName: p.schema.objectIdField,
    uniqueIdField: { name: p.schema.objectIdField, isSystemMaintained: true },
    geometryType: p.schema.geometry?.type,
    spatialReference: spatialReference(p.outSR) as { wkid: number },
    hasZ: false,
    hasM: false,
    exceededTransferLimit: more,
    fields: p.fields,
    features,
    quantization: { grid: p.grid },
  });
}

const server = createServer((req, res) => {
  const p = prepared[Number(req.url?.slice(1))];
  if (!p) {
    res.writeHead(404).end();
    return;
  }
  const bytes = answer(p);
  res.writeHead(200, { "content-type": "application/x-protobuf" });
  res.end(bytes);
});
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => console.log(`floor ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => process.exit(0));
