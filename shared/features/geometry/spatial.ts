// Exact spatial tests for `query` (geometry + spatialRel [+ distance]), run in JS by readers whose index only
// narrows (the GeoPackage R*Tree), and stated for SQL by readers whose database tests exactly (PostGIS).
//
// The sense of each relation. ArcGIS's esriSpatialRelEnum reads "Query Geometry Contains Target Geometry",
// "Query Geometry is Within Target Geometry" and so on (ArcObjects / Enterprise SDK reference for
// esriSpatialRelEnum; the Pro SDK's SpatialRelationship says "The filter geometry wholly contains within it a
// feature from the target feature class"): the `geometry` parameter is the subject, the layer's feature the
// object. So esriSpatialRelContains returns the features the query geometry contains (features inside a drawn
// polygon), esriSpatialRelWithin the features the query geometry lies within (the polygons around a clicked point).
// The wording "feature class 1 … feature class 2" of the REST and JS API pages is the same statement with the
// query as class 1. In PostGIS that is ST_Contains(query, feature) and ST_Within(query, feature), as the plan's
// SPATIAL_RELATIONS states and the PostgreSQL emitter (sql.ts) writes it. Intersects, Touches, Crosses and
// Overlaps are symmetric.
//
// Per row, the query geometry is prepared once (bounds, an indexed point-in-area locator and a segment index when
// it is areal), so a point feature costs a locate (about a microsecond) and other features an envelope test
// before anything heavier; only Contains/Within/Touches/Crosses/Overlaps of lines and polygons build a full
// DE-9IM matrix.
import type { Geometry, Position } from "geojson";
import proj4 from "proj4";
import type { Bounds } from "#shared/features/schema.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import {
  Location,
  coordinate,
  fromJts,
  indexedLocator,
  isTopologyError,
  locateInArea,
  pointOnLine,
  pointIntersects,
  rectangleIntersects,
  segmentFinder,
  toJts,
  type Coordinate,
  type JtsGeometry,
} from "./jts.ts";
import { crsInfo, mapPositions } from "./projection.ts";
import { boundsIntersect, geometryBounds } from "./bounds.ts";

export const SPATIAL_RELATIONS = [
  "esriSpatialRelIntersects",
  "esriSpatialRelEnvelopeIntersects",
  "esriSpatialRelIndexIntersects",
  "esriSpatialRelContains",
  "esriSpatialRelWithin",
  "esriSpatialRelCrosses",
  "esriSpatialRelTouches",
  "esriSpatialRelOverlaps",
] as const;
export type SpatialRelation = (typeof SPATIAL_RELATIONS)[number];

// ---------------------------------------------------------------------------------------------------------------

const boundsCover = (outer: Bounds, inner: Bounds): boolean =>
  outer[0] <= inner[0] && outer[1] <= inner[1] && outer[2] >= inner[2] && outer[3] >= inner[3];

const inBounds = (c: Coordinate, b: Bounds) => c.x >= b[0] && c.x <= b[2] && c.y >= b[1] && c.y <= b[3];

const isPuntal = (g: Geometry) => g.type === "Point" || g.type === "MultiPoint";
const isAreal = (g: Geometry) => g.type === "Polygon" || g.type === "MultiPolygon";

const puntalPositions = (g: Geometry): Position[] =>
  g.type === "Point" ? [g.coordinates] : g.type === "MultiPoint" ? g.coordinates : [];

// ---------------------------------------------------------------------------------------------------------------

export interface SpatialFilterOptions {
  /** The `distance` parameter in metres (already converted from `units`); 0 or absent: none. */
  readonly distance?: number;
  /**
   * The dataset's EPSG code, which says what a metre is in its coordinates. Geographic data (degrees) is measured
   * in an azimuthal equidistant projection centred on the query geometry: exact along lines through the centre
   * and well within a percent for distances of hundreds of kilometres. Absent or 0: the distance is taken in the
   * dataset's own units.
   */
  readonly srid?: number;
}

export interface SpatialFilter {
  readonly relation: SpatialRelation;
  /** The window a spatial index narrows by (the query's bounds, widened by the distance). */
  readonly bounds: Bounds;
  /** The exact test of one feature's geometry (in the dataset's coordinates); null geometry never matches. */
  test(feature: Geometry | null | undefined): boolean;
  /**
   * Where `test` of a point feature is exactly "its x and y inside this box, edges included" (an envelope's
   * intersects, an upright rectangle's): a reader may test a point's position against it without building the
   * point. Absent where a point needs the full test.
   */
  readonly pointBox?: Bounds;
  /**
   * The geometry a database tests `relation` against in SQL: the query geometry, buffered by the distance when
   * one is given (within-distance of the query is intersecting its buffer), so both sources answer alike.
   */
  sqlGeometry(): Geometry;
}

interface MetricFrame {
  toFrame(g: Geometry): Geometry;
  fromFrame(g: Geometry): Geometry;
  /** The distance in frame units. */
  distance: number;
}

const METRES_PER_DEGREE = 111_320;

/**
 * The largest distance a query geometry is buffered by in projected data (in geographic data, past the longest
 * geodesic the buffer is the world): far past any two places on Earth in any projection's units, so a longer
 * distance would select nothing more.
 */
export const MAX_BUFFER_METRES = 1e9;

/** The longest geodesic between two places on the WGS 84 ellipsoid (pole to pole along a meridian), rounded up. */
const MAX_GEODESIC_METRES = 20_004_000;

function metricFrame(bounds: Bounds, metres: number, srid: number | undefined): MetricFrame {
  const identity = (g: Geometry) => g;
  if (!srid) return { toFrame: identity, fromFrame: identity, distance: metres };
  const info = crsInfo(srid);
  if (!info.geographic) return { toFrame: identity, fromFrame: identity, distance: metres / info.metersPerUnit };
  const lon = (bounds[0] + bounds[2]) / 2;
  const lat = (bounds[1] + bounds[3]) / 2;
  const converter = proj4(`EPSG:${srid}`, `+proj=aeqd +lat_0=${lat} +lon_0=${lon} +datum=WGS84 +units=m +no_defs`);
  const forward = (p: Position) => converter.forward([p[0] as number, p[1] as number]) as Position;
  const inverse = (p: Position) => converter.inverse([p[0] as number, p[1] as number]) as Position;
  return {
    toFrame: (g) => mapPositions(g, forward),
    fromFrame: (g) => mapPositions(g, inverse),
    distance: metres,
  };
}

function widen(b: Bounds, metres: number, srid: number | undefined): Bounds {
  if (!(metres > 0)) return b;
  const info = srid ? crsInfo(srid) : { geographic: false, metersPerUnit: 1 };
  if (!info.geographic) {
    const d = metres / info.metersPerUnit;
    return [b[0] - d, b[1] - d, b[2] + d, b[3] + d];
  }
  const dLat = metres / METRES_PER_DEGREE;
  const maxLat = Math.min(89.9, Math.max(Math.abs(b[1]), Math.abs(b[3])) + dLat);
  const dLon = metres / (METRES_PER_DEGREE * Math.cos((maxLat * Math.PI) / 180));
  const wide = dLon >= 180;
  return [
    wide ? -180 : Math.max(-180, b[0] - dLon),
    Math.max(-90, b[1] - dLat),
    wide ? 180 : Math.min(180, b[2] + dLon),
    Math.min(90, b[3] + dLat),
  ];
}

/** The query geometry, prepared once for many features. */
/**
 * Relations of an area query to point features, read from where each point lies in the area (Location's interior,
 * boundary or exterior) without building the feature's geometry or its DE-9IM matrix.
 */
const AREA_POINT_RELATIONS: Partial<Record<SpatialRelation, (where: readonly number[]) => boolean>> = {
  esriSpatialRelContains: (where) =>
    where.every((l) => l !== Location.EXTERIOR) && where.some((l) => l === Location.INTERIOR),
  esriSpatialRelTouches: (where) =>
    where.every((l) => l !== Location.INTERIOR) && where.some((l) => l === Location.BOUNDARY),
  // Area/point crosses (T*****T**): some point inside the area and some outside it.
  esriSpatialRelCrosses: (where) => where.includes(Location.INTERIOR) && where.includes(Location.EXTERIOR),
};

class PreparedQuery {
  readonly source: Geometry;
  readonly geometry: JtsGeometry;
  readonly bounds: Bounds;
  readonly dimension: number;
  readonly areal: boolean;
  readonly rectangle: boolean;
  /**
   * An areal query's indexes, built when a feature first needs them: a query prepared for each request (a map's
   * tile) may find no candidate at all, or points only (which need no segment index), and building both cost more
   * than such a query's rows.
   */
  #locator?: { locate(c: Coordinate): number };
  #segments?: (other: JtsGeometry) => boolean;
  private readonly vertices: Coordinate[];
  /** The query geometry made valid, once one was found not to be. */
  private repaired?: JtsGeometry;
  /** A puntal query's positions, as `x y` keys. */
  private positions?: Set<string>;
  /** A lineal query's segments, indexed for point features. */
  private onLine?: (c: Coordinate) => boolean;

  constructor(source: Geometry) {
    const bounds = geometryBounds(source);
    if (!bounds) throw badRequest("Unable to complete operation.", ["'geometry' parameter is invalid", "empty"]);
    this.source = source;
    this.bounds = bounds;
    this.geometry = toJts(source);
    this.dimension = this.geometry.getDimension();
    this.areal = isAreal(source);
    this.rectangle = this.areal && this.geometry.isRectangle();
    this.vertices = this.geometry.getCoordinates();
  }

  private get locator(): { locate(c: Coordinate): number } | undefined {
    if (this.areal) this.#locator ??= indexedLocator(this.geometry);
    return this.#locator;
  }

  private get segments(): ((other: JtsGeometry) => boolean) | undefined {
    if (this.areal) this.#segments ??= segmentFinder(this.geometry);
    return this.#segments;
  }

  /**
   * `op` on the query geometry and a feature. JTS's relate cannot node an invalid polygon (a ring crossing
   * itself, as simplified boundaries in real data often have): on that error, both are repaired the usual way
   * (a zero-width buffer) and `op` tried once more.
   */
  private tolerant<T>(feature: Geometry, op: (q: JtsGeometry, f: JtsGeometry) => T): T {
    const f = toJts(feature);
    try {
      return op(this.geometry, f);
    } catch (err) {
      if (!isTopologyError(err)) throw err;
      this.repaired ??= this.areal ? this.geometry.buffer(0) : this.geometry;
      return op(this.repaired, f.getDimension() === 2 ? f.buffer(0) : f);
    }
  }

  /** Where a position lies in the (areal) query geometry. */
  locate(p: Position): number {
    return (this.locator as { locate(c: Coordinate): number }).locate(coordinate(p[0] as number, p[1] as number));
  }

  intersects(feature: Geometry, fb: Bounds): boolean {
    if (!boundsIntersect(this.bounds, fb)) return false;
    if (this.areal) {
      // A point is in an upright rectangle (an envelope's query) where it is in its bounds, edges included, as
      // JTS locates it: a comparison rather than a locator's walk, for each point of a page.
      if (this.rectangle && feature.type === "Point") return true;
      if (isPuntal(feature)) return puntalPositions(feature).some((p) => this.locate(p) !== Location.EXTERIOR);
      const f = toJts(feature);
      if (this.rectangle) return rectangleIntersects(this.geometry, f);
      // JTS's PreparedPolygonIntersects, step by step: a feature vertex in the query, then crossing segments,
      // then (for an areal feature) a query vertex inside the feature.
      if (f.getCoordinates().some((c) => this.locator?.locate(c) !== Location.EXTERIOR)) return true;
      if (this.segments?.(f)) return true;
      return isAreal(feature) && this.vertices.some((c) => locateInArea(c, f) !== Location.EXTERIOR);
    }
    // Point features against a query of many points or vertices: a lookup each, not a walk of the query.
    if (isPuntal(this.source)) {
      if (isPuntal(feature)) {
        this.positions ??= new Set(puntalPositions(this.source).map(([x, y]) => `${x} ${y}`));
        const positions = this.positions;
        return puntalPositions(feature).some(([x, y]) => positions.has(`${x} ${y}`));
      }
      const f = toJts(feature);
      return this.vertices.some((c) => inBounds(c, fb) && pointIntersects(c, f));
    }
    if (isPuntal(feature)) {
      this.onLine ??= pointOnLine(this.geometry);
      const onLine = this.onLine;
      return puntalPositions(feature).some((p) => onLine(coordinate(p[0] as number, p[1] as number)));
    }
    return this.tolerant(feature, (q, f) => q.intersects(f));
  }

  /** Relations other than intersects: fast answers where the shapes allow, the DE-9IM matrix otherwise. */
  relate(relation: SpatialRelation, feature: Geometry, fb: Bounds): boolean {
    switch (relation) {
      case "esriSpatialRelContains":
        if (!boundsCover(this.bounds, fb)) return false;
        break;
      case "esriSpatialRelWithin":
        if (!boundsCover(fb, this.bounds)) return false;
        if (this.source.type === "Point" && isAreal(feature)) {
          const [x, y] = this.source.coordinates as [number, number];
          return locateInArea(coordinate(x, y), toJts(feature)) === Location.INTERIOR;
        }
        break;
      case "esriSpatialRelTouches":
      case "esriSpatialRelCrosses":
      case "esriSpatialRelOverlaps":
        if (!boundsIntersect(this.bounds, fb)) return false;
        break;
      default:
        return this.intersects(feature, fb);
    }
    const byPoints = this.areal && isPuntal(feature) ? AREA_POINT_RELATIONS[relation] : undefined;
    if (byPoints) return byPoints(puntalPositions(feature).map((p) => this.locate(p)));
    const [m, fd] = this.tolerant(feature, (q, f) => [q.relate(f), f.getDimension()] as const);
    switch (relation) {
      case "esriSpatialRelContains":
        return m.isContains();
      case "esriSpatialRelWithin":
        return m.isWithin();
      case "esriSpatialRelTouches":
        return m.isTouches(this.dimension, fd);
      case "esriSpatialRelCrosses":
        return m.isCrosses(this.dimension, fd);
      default:
        return m.isOverlaps(this.dimension, fd);
    }
  }
}

/**
 * Prepares `relation` with a query geometry (already in the dataset's coordinates) for testing many features.
 * With a distance, Intersects is "within the distance of the query geometry" (as ST_DWithin) and the other
 * relations test the query geometry buffered by the distance (as ArcGIS buffers the input geometry).
 */
export function prepareSpatialFilter(
  relation: SpatialRelation,
  query: Geometry,
  options: SpatialFilterOptions = {},
): SpatialFilter {
  const queryBounds = geometryBounds(query);
  if (!queryBounds) throw badRequest("Unable to complete operation.", ["'geometry' parameter is invalid", "empty"]);
  const metres = options.distance ?? 0;
  if (!Number.isFinite(metres) || metres < 0)
    throw badRequest("Unable to complete operation.", ["'distance' parameter is invalid"]);
  const bounds = widen(queryBounds, metres, options.srid);
  let buffer: Geometry | undefined;
  const sqlGeometry = () => {
    if (!(metres > 0)) return query;
    if (!buffer) {
      // Past the span of the Earth a larger buffer holds nothing more, and near the doubles' limit JTS and the
      // frame's inverse projection stop making progress (a 1e308 m buffer held the event loop for minutes).
      const geographic = !!options.srid && crsInfo(options.srid).geographic;
      if (geographic && metres >= MAX_GEODESIC_METRES) {
        // Every place on Earth lies within this distance of any other: the buffer is the whole world (the
        // azimuthal frame cannot draw it: past half the globe its inverse folds back on itself).
        buffer = {
          type: "Polygon",
          coordinates: [
            [
              [-180, -90],
              [180, -90],
              [180, 90],
              [-180, 90],
              [-180, -90],
            ],
          ],
        };
        return buffer;
      }
      const frame = metricFrame(queryBounds, Math.min(metres, MAX_BUFFER_METRES), options.srid);
      try {
        buffer = frame.fromFrame(fromJts(toJts(frame.toFrame(query)).buffer(frame.distance, 8)));
      } catch (err) {
        if (err instanceof ApiError) throw err;
        // JTS's buffer breaks down on distances and coordinates far past any on Earth (1e305 m).
        throw badRequest("Unable to complete operation.", [
          "'distance' parameter is invalid",
          "The geometry cannot be buffered by this distance.",
        ]);
      }
    }
    return buffer;
  };

  // Every filter reads a feature's bounds first: a feature without geometry (or an empty one) matches nothing.
  const filter = (
    window: Bounds,
    test: (feature: Geometry, fb: Bounds) => boolean,
    pointBox?: Bounds,
  ): SpatialFilter => ({
    relation,
    bounds: window,
    sqlGeometry,
    test: (feature) => {
      const fb = feature && geometryBounds(feature);
      return !!fb && test(feature, fb);
    },
    ...(pointBox ? { pointBox } : {}),
  });

  // A point's bounds are the point: it intersects the window where it lies in it.
  if (relation === "esriSpatialRelEnvelopeIntersects" || relation === "esriSpatialRelIndexIntersects")
    return filter(bounds, (_, fb) => boundsIntersect(bounds, fb), bounds);

  if (metres > 0 && relation === "esriSpatialRelIntersects") {
    const frame = metricFrame(queryBounds, metres, options.srid);
    const framedQuery = frame.toFrame(query);
    const framed = toJts(framedQuery);
    // From a point to a point, the distance is between two positions: no JTS geometry for each feature.
    const origin = framedQuery.type === "Point" ? (framedQuery.coordinates as [number, number]) : undefined;
    return filter(bounds, (feature, fb) => {
      if (!boundsIntersect(bounds, fb)) return false;
      const f = frame.toFrame(feature);
      if (origin && f.type === "Point") {
        const [x, y] = f.coordinates as [number, number];
        return Math.hypot(x - origin[0], y - origin[1]) <= frame.distance;
      }
      return framed.isWithinDistance(toJts(f), frame.distance);
    });
  }

  const effective = sqlGeometry();
  const prepared = new PreparedQuery(effective);
  // PreparedQuery.intersects keeps a point in an upright rectangle by the rectangle's bounds, edges included.
  const pointBox = relation === "esriSpatialRelIntersects" && prepared.rectangle ? prepared.bounds : undefined;
  return filter(
    metres > 0 ? prepared.bounds : bounds,
    (feature, fb) => prepared.relate(relation, feature, fb),
    pointBox,
  );
}

/** One test, preparing the query geometry for it: for a single feature; use prepareSpatialFilter for many. */
export function spatialTest(
  relation: SpatialRelation,
  query: Geometry,
  feature: Geometry,
  options: SpatialFilterOptions = {},
): boolean {
  return prepareSpatialFilter(relation, query, options).test(feature);
}
