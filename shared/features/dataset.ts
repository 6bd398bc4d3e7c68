// A layer's dataset, open: one shape over both readers (a GeoPackage through SQLite, a table through PostGIS), which
// the query runs on without knowing which it is. Where a dataset lies and how it is found is sources.ts's; the
// hosting database's reader (hosting-database.ts) opens its layers as this too, without importing sources.ts.
import type { Geometry } from "geojson";
import { type AccessPath, chooseAccess } from "#shared/features/access.ts";
import type { GeoPackage } from "#shared/features/geopackage.ts";
import { decodeGeoPackageGeometry, decodeWkb, geoPackagePointIn } from "#shared/features/geometry/wkb.ts";
import type { PostGisDatabase } from "#shared/features/postgis.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import type { SpatialFilter as TestFilter } from "#shared/features/geometry/spatial.ts";
import type { SpatialFilter, SqlEmitter } from "#shared/features/sql/emitter.ts";
import type { QueryPlan } from "#shared/features/plan.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import type { Expr } from "#shared/features/where-tree.ts";

/** The exact spatial test a reader without one in SQL runs on each candidate row (see SpatialFilter). */
export type SpatialTest = Pick<TestFilter, "test" | "pointBox">;

/** A layer's dataset, open: its schema and how its rows are read; a DatasetError says why it cannot be. */
export interface OpenDataset {
  readonly schema: LayerSchema;
  /**
   * A condition every read of it ANDs into its plan (a hosted view's definition query, over the source's fields):
   * rows outside it are not the layer's.
   */
  readonly restriction?: Expr;
  /** What writes its statements' SQL. */
  readonly emitter: SqlEmitter;
  /**
   * The path to a plan's rows by the layer's statistics (access.ts), where the reader chooses one; undefined leaves
   * the database's own planner to it (PostgreSQL weighs its indexes itself).
   */
  access?(plan: QueryPlan, spatial: SpatialFilter | undefined): AccessPath | undefined;
  /**
   * Runs an emitted statement until `deadline` (epoch ms); rows as arrays in SELECT order. `test` is the exact
   * spatial test, for the SQLite dialect (PostGIS tests in SQL).
   */
  run(emitted: EmittedQuery, test: SpatialTest | undefined, deadline: number): Promise<unknown[][]>;
  /** A geometry column's value as read (a GeoPackage blob, or WKB from PostGIS) as a geometry. */
  decode(value: unknown): Geometry | null;
  /** The definition (WKT) the source gives a coordinate system, for one no projection library knows. */
  definitionOf(srid: number): Promise<string | undefined>;
}

export function geoPackageDataset(gpkg: GeoPackage, schema: LayerSchema): OpenDataset {
  return {
    schema,
    emitter: sqliteEmitter,
    access(plan, spatial) {
      if (spatial === undefined || plan.where === undefined) return undefined;
      const stats = gpkg.statistics(schema);
      const oid = schema.fields.find((f) => f.name === schema.objectIdField);
      if (!stats || !oid) return undefined;
      return chooseAccess(plan, oid, spatial.bbox, stats)?.path;
    },
    // Synchronous inside: nothing else runs between choosing the open file and reading it.
    run: async (emitted, test, deadline) => {
      gpkg.spatialTest = test ? blobTest(test) : undefined;
      try {
        return gpkg.all(emitted.sql, emitted.params, deadline);
      } finally {
        gpkg.spatialTest = undefined;
      }
    },
    decode: (value) => (value instanceof Uint8Array ? (decodeGeoPackageGeometry(value).geometry ?? null) : null),
    definitionOf: async (srid) => gpkg.definitionOf(srid),
  };
}

/**
 * The exact test on a GeoPackage blob: a plain 2-D point by its position where the filter allows (no geometry built:
 * a page tests a thousand), anything else decoded and tested whole.
 */
function blobTest(t: SpatialTest): (blob: Uint8Array | null) => boolean {
  const box = t.pointBox;
  return (blob) => {
    if (!blob) return false;
    const inBox = box ? geoPackagePointIn(blob, box) : undefined;
    return inBox ?? t.test(decodeGeoPackageGeometry(blob).geometry);
  };
}

export function postGisDataset(db: PostGisDatabase, schema: LayerSchema): OpenDataset {
  return {
    schema,
    emitter: postgresEmitter,
    // The database's statement_timeout bounds each statement (postgis.ts).
    run: (emitted) => db.all(emitted.sql, emitted.params),
    decode: (value) => (value instanceof Uint8Array ? (decodeWkb(value).geometry ?? null) : null),
    definitionOf: (srid) => db.definitionOf(srid),
  };
}
