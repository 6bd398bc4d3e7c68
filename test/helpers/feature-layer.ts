// A small layer for the query plan and SQL tests: its schema, and the same rows in an in-memory SQLite database
// laid out as a GeoPackage feature table (ISO 8601 text dates, GeoPackage point blobs, an R*Tree), with the
// mapgate_* functions registered as the GeoPackage reader registers them.
import { DatabaseSync } from "node:sqlite";
import type { GeoPackageLayer } from "#shared/features/geopackage-writer.ts";
import type { Field, LayerSchema } from "#shared/features/schema.ts";
import { SQLITE_DEADLINE } from "#shared/features/sql/sqlite.ts";
import { SQLITE_AGGREGATES, SQLITE_FUNCTIONS } from "#shared/features/sqlite-functions.ts";

const field = (name: string, type: Field["type"], nullable = true, column = name): Field => ({
  name,
  type,
  alias: name,
  nullable,
  column,
});

export const citiesSchema: LayerSchema = {
  name: "cities",
  table: ["cities"],
  fields: [
    field("objectid", "esriFieldTypeOID", false),
    field("name", "esriFieldTypeString"),
    field("pop", "esriFieldTypeInteger"),
    field("area", "esriFieldTypeDouble"),
    field("founded", "esriFieldTypeDate"),
    field("day", "esriFieldTypeDateOnly"),
    // A column whose name needs quoting, behind a plain field name.
    field("kind", "esriFieldTypeString", true, 'ki"nd'),
    field("photo", "esriFieldTypeBlob"),
  ],
  objectIdField: "objectid",
  displayField: "name",
  geometry: {
    column: "geom",
    type: "esriGeometryPoint",
    hasZ: false,
    hasM: false,
    srid: 4326,
    index: "rtree_cities_geom",
  },
};

export interface City {
  readonly objectid: number;
  readonly name: string | null;
  readonly pop: number | null;
  readonly area: number;
  readonly founded: string | null;
  readonly day: string | null;
  readonly kind: string | null;
  readonly x: number;
  readonly y: number;
}

export const cities: readonly City[] = [
  {
    objectid: 1,
    name: "Paris",
    pop: 2100000,
    area: 105.4,
    founded: "2001-03-04T05:06:07.000Z",
    day: "2001-03-04",
    kind: "capital",
    x: 2.35,
    y: 48.85,
  },
  {
    objectid: 2,
    name: "Lyon",
    pop: 520000,
    area: 47.87,
    founded: "1999-12-31T23:59:59.500Z",
    day: "1999-12-31",
    kind: "city",
    x: 4.83,
    y: 45.76,
  },
  {
    objectid: 3,
    name: "paris",
    pop: 25000,
    area: 10,
    founded: "2020-02-29T00:00:00.000Z",
    day: "2020-02-29",
    kind: "town",
    x: -95.55,
    y: 33.66,
  },
  {
    objectid: 4,
    name: "Zürich",
    pop: 420000,
    area: 87.88,
    founded: "1985-06-15T12:00:00.000Z",
    day: "1985-06-15",
    kind: "city",
    x: 8.54,
    y: 47.37,
  },
  { objectid: 5, name: null, pop: null, area: 1.5, founded: null, day: null, kind: null, x: 0, y: 0 },
  {
    objectid: 6,
    name: "O'Hare 100%",
    pop: 0,
    area: 30.1,
    founded: "2010-01-01T00:00:00.000Z",
    day: "2010-01-01",
    kind: "airport",
    x: -87.9,
    y: 41.97,
  },
  {
    objectid: 7,
    name: "Lille_Nord",
    pop: 230000,
    area: 34.8,
    founded: "2001-03-04T18:00:00.000Z",
    day: "2001-03-04",
    kind: "city",
    x: 3.06,
    y: 50.63,
  },
  {
    objectid: 8,
    name: "  Nice  ",
    pop: 340000,
    area: 71.9,
    founded: "1970-01-01T00:00:00.000Z",
    day: "1970-01-01",
    kind: "city",
    x: 7.26,
    y: 43.7,
  },
];

/** The same cities as a GeoPackage layer, for tests that write them to a file (and copy them to PostGIS). */
export const citiesLayer: GeoPackageLayer = {
  name: "cities",
  geometryType: "POINT",
  columns: [
    { name: "name", type: "TEXT" },
    { name: "pop", type: "INTEGER" },
    { name: "area", type: "REAL" },
    { name: "founded", type: "DATETIME" },
    { name: "day", type: "DATE" },
    { name: "kind", type: "TEXT", maxLength: 16 },
  ],
  rows: cities.map((c) => ({
    id: c.objectid,
    values: { name: c.name, pop: c.pop, area: c.area, founded: c.founded, day: c.day, kind: c.kind },
    geometry: { type: "Point", coordinates: [c.x, c.y] },
  })),
};

/** A GeoPackage point blob: header (little endian, no envelope unless asked) and WKB. */
export function gpkgPoint(x: number, y: number, srid = 4326, envelope = false): Uint8Array {
  const header = envelope ? 8 + 32 : 8;
  const buf = Buffer.alloc(header + 21);
  buf.write("GP", 0, "latin1");
  buf.writeUInt8(0, 2);
  buf.writeUInt8(envelope ? 0x03 : 0x01, 3);
  buf.writeInt32LE(srid, 4);
  if (envelope) [x, x, y, y].forEach((v, i) => buf.writeDoubleLE(v, 8 + i * 8));
  buf.writeUInt8(1, header);
  buf.writeUInt32LE(1, header + 1);
  buf.writeDoubleLE(x, header + 5);
  buf.writeDoubleLE(y, header + 13);
  return new Uint8Array(buf);
}

/** The point of a blob made by gpkgPoint. */
export function pointOf(blob: Uint8Array): [number, number] {
  const b = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  const envelope = (b.readUInt8(3) >> 1) & 7;
  const at = 8 + (envelope ? 32 : 0);
  return [b.readDoubleLE(at + 5), b.readDoubleLE(at + 13)];
}

export function registerFunctions(db: DatabaseSync) {
  for (const f of SQLITE_FUNCTIONS) db.function(f.name, { deterministic: true, varargs: f.varargs }, f.fn);
  // The reader's deadline, which never passes here.
  db.function(SQLITE_DEADLINE, { deterministic: false }, () => 1);
  for (const a of SQLITE_AGGREGATES) db.aggregate(a.name, a.options as never);
}

/** The cities in a fresh in-memory database; `rtree: false` leaves the index out. */
export function citiesDatabase(options: { rtree?: boolean } = {}): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec(`CREATE TABLE cities (objectid INTEGER PRIMARY KEY, name TEXT, pop INTEGER, area REAL, founded DATETIME,
    day DATE, "ki""nd" TEXT, photo BLOB, geom BLOB)`);
  if (options.rtree !== false)
    db.exec("CREATE VIRTUAL TABLE rtree_cities_geom USING rtree(id, minx, maxx, miny, maxy)");
  const insert = db.prepare("INSERT INTO cities VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)");
  const index =
    options.rtree === false ? undefined : db.prepare("INSERT INTO rtree_cities_geom VALUES (?, ?, ?, ?, ?)");
  for (const c of cities) {
    insert.run(
      c.objectid,
      c.name,
      c.pop,
      c.area,
      c.founded,
      c.day,
      c.kind,
      gpkgPoint(c.x, c.y, 4326, c.objectid % 2 === 0),
    );
    index?.run(c.objectid, c.x, c.x, c.y, c.y);
  }
  registerFunctions(db);
  return db;
}
