// The part of jsts (the JTS port) mapgate uses, typed: its own declarations type most methods as returning void.
// jsts's prepared geometries cannot be built from its ES modules (their constructors pass no geometry to the
// base class: bjornharrtell/jsts#479), so spatial.ts prepares a query geometry from the same building blocks
// JTS's PreparedPolygon uses: an indexed point-in-area locator and a segment intersection finder.
import GeometryFactoryJs from "jsts/org/locationtech/jts/geom/GeometryFactory.js";
import GeoJSONReaderJs from "jsts/org/locationtech/jts/io/GeoJSONReader.js";
import GeoJSONWriterJs from "jsts/org/locationtech/jts/io/GeoJSONWriter.js";
import CoordinateJs from "jsts/org/locationtech/jts/geom/Coordinate.js";
import IndexedPointInAreaLocatorJs from "jsts/org/locationtech/jts/algorithm/locate/IndexedPointInAreaLocator.js";
import SimplePointInAreaLocatorJs from "jsts/org/locationtech/jts/algorithm/locate/SimplePointInAreaLocator.js";
import PointLocatorJs from "jsts/org/locationtech/jts/algorithm/PointLocator.js";
import FastSegmentSetIntersectionFinderJs from "jsts/org/locationtech/jts/noding/FastSegmentSetIntersectionFinder.js";
import SegmentStringUtilJs from "jsts/org/locationtech/jts/noding/SegmentStringUtil.js";
import RectangleIntersectsJs from "jsts/org/locationtech/jts/operation/predicate/RectangleIntersects.js";
import TopologyExceptionJs from "jsts/org/locationtech/jts/geom/TopologyException.js";
import EnvelopeJs from "jsts/org/locationtech/jts/geom/Envelope.js";
import OrientationJs from "jsts/org/locationtech/jts/algorithm/Orientation.js";
import STRtreeJs from "jsts/org/locationtech/jts/index/strtree/STRtree.js";
// Installs relate, buffer, isWithinDistance… on Geometry (jsts keeps them apart to break import cycles).
import "jsts/org/locationtech/jts/monkey.js";
import type { Geometry as GeoJsonGeometry } from "geojson";

export interface Coordinate {
  x: number;
  y: number;
}

export interface Envelope {
  getMinX(): number;
  getMinY(): number;
  getMaxX(): number;
  getMaxY(): number;
  intersects(other: Envelope): boolean;
  covers(other: Envelope): boolean;
}

export interface IntersectionMatrix {
  isIntersects(): boolean;
  isContains(): boolean;
  isWithin(): boolean;
  isTouches(dimA: number, dimB: number): boolean;
  isCrosses(dimA: number, dimB: number): boolean;
  isOverlaps(dimA: number, dimB: number): boolean;
  toString(): string;
}

export interface JtsGeometry {
  getEnvelopeInternal(): Envelope;
  getDimension(): number;
  getCoordinates(): Coordinate[];
  isEmpty(): boolean;
  isRectangle(): boolean;
  relate(other: JtsGeometry): IntersectionMatrix;
  intersects(other: JtsGeometry): boolean;
  isWithinDistance(other: JtsGeometry, distance: number): boolean;
  buffer(distance: number, quadrantSegments?: number): JtsGeometry;
  getGeometryType(): string;
  getNumGeometries(): number;
  getGeometryN(n: number): JtsGeometry;
}

export const Location = { INTERIOR: 0, BOUNDARY: 1, EXTERIOR: 2 } as const;

interface PointInArea {
  locate(c: Coordinate): number;
}

interface SegmentFinder {
  intersects(segmentStrings: unknown): boolean;
}

const factory = new GeometryFactoryJs();
const reader = new (GeoJSONReaderJs as unknown as new (f: unknown) => { read(g: unknown): JtsGeometry })(factory);
const writer = new (GeoJSONWriterJs as unknown as new () => { write(g: JtsGeometry): GeoJsonGeometry })();

export const toJts = (g: GeoJsonGeometry): JtsGeometry => reader.read(g);
export const fromJts = (g: JtsGeometry): GeoJsonGeometry => writer.write(g);

export const coordinate = (x: number, y: number): Coordinate =>
  new (CoordinateJs as unknown as new (x: number, y: number) => Coordinate)(x, y);

export const indexedLocator = (areal: JtsGeometry): PointInArea =>
  new (IndexedPointInAreaLocatorJs as unknown as new (g: JtsGeometry) => PointInArea)(areal);

/** Where a point lies in an areal geometry (not indexed: for one test against a feature read once). */
export const locateInArea = (c: Coordinate, areal: JtsGeometry): number =>
  (SimplePointInAreaLocatorJs as unknown as { locate(c: Coordinate, g: JtsGeometry): number }).locate(c, areal);

const pointLocator = new (
  PointLocatorJs as unknown as new () => {
    intersects(c: Coordinate, g: JtsGeometry): boolean;
  }
)();

/** True when a point lies on or in any geometry (lines included). */
export const pointIntersects = (c: Coordinate, g: JtsGeometry): boolean => pointLocator.intersects(c, g);

const segmentStrings = (g: JtsGeometry): unknown =>
  (SegmentStringUtilJs as unknown as { extractSegmentStrings(g: JtsGeometry): unknown }).extractSegmentStrings(g);

/** An index of a geometry's segments answering "does any segment of this other geometry meet one of mine". */
export function segmentFinder(g: JtsGeometry): (other: JtsGeometry) => boolean {
  const finder = new (FastSegmentSetIntersectionFinderJs as unknown as new (s: unknown) => SegmentFinder)(
    segmentStrings(g),
  );
  return (other) => finder.intersects(segmentStrings(other));
}

export const rectangleIntersects = (rectangle: JtsGeometry, g: JtsGeometry): boolean =>
  (RectangleIntersectsJs as unknown as { intersects(r: JtsGeometry, g: JtsGeometry): boolean }).intersects(
    rectangle,
    g,
  );

/** JTS's error for geometry its graph operations cannot node: an invalid polygon (a ring crossing itself). */
export const isTopologyError = (err: unknown): boolean =>
  err instanceof (TopologyExceptionJs as unknown as new () => Error);

interface SegmentTree {
  insert(envelope: unknown, segment: readonly [Coordinate, Coordinate]): void;
  query(envelope: unknown): { size(): number; get(i: number): readonly [Coordinate, Coordinate] };
}
const envelopeOf = (...corners: Coordinate[]): unknown =>
  new (EnvelopeJs as unknown as new (...c: Coordinate[]) => unknown)(...corners);
const orientation = OrientationJs as unknown as { index(p: Coordinate, q: Coordinate, r: Coordinate): number };

/**
 * An index of a lineal geometry's segments answering "does this point lie on the line", in time logarithmic in
 * its vertices (JTS's point locator walks every segment for every point).
 */
export function pointOnLine(g: JtsGeometry): (c: Coordinate) => boolean {
  const tree = new (STRtreeJs as unknown as new () => SegmentTree)();
  for (let n = 0; n < g.getNumGeometries(); n++) {
    const line = g.getGeometryN(n).getCoordinates();
    for (let i = 1; i < line.length; i++) {
      const a = line[i - 1] as Coordinate;
      const b = line[i] as Coordinate;
      tree.insert(envelopeOf(a, b), [a, b]);
    }
  }
  return (c) => {
    const near = tree.query(envelopeOf(c));
    // Within a segment's box (what the query found) and collinear with it: on it.
    for (let i = 0; i < near.size(); i++) {
      const [a, b] = near.get(i);
      if (orientation.index(a, b, c) === 0) return true;
    }
    return false;
  };
}
