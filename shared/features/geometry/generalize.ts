// `maxAllowableOffset`: Douglas–Peucker generalization, per path and per ring, in the units of the coordinates.
//
// Written here rather than taken from jsts: its simplifiers either repair polygons with a buffer (costly per
// feature, and it may move the outline) or preserve topology across the whole geometry (costlier still). What a
// map drawing a page needs is cheaper: each ring simplified alone, never below four positions; a ring that
// collapses under the offset is dropped (a hole) or drops its polygon (an outer ring).
import type { Geometry, Position } from "geojson";

function segmentDistanceSq(p: Position, a: Position, b: Position): number {
  const px = p[0] as number;
  const py = p[1] as number;
  const ax = a[0] as number;
  const ay = a[1] as number;
  const dx = (b[0] as number) - ax;
  const dy = (b[1] as number) - ay;
  const len = dx * dx + dy * dy;
  let t = len === 0 ? 0 : ((px - ax) * dx + (py - ay) * dy) / len;
  t = Math.max(0, Math.min(1, t));
  const x = ax + t * dx - px;
  const y = ay + t * dy - py;
  return x * x + y * y;
}

/** Douglas–Peucker over a path, with an explicit stack (a long path must not exhaust the call stack). */
export function simplifyPath(points: readonly Position[], tolerance: number): Position[] {
  const n = points.length;
  if (n <= 2 || !(tolerance > 0)) return points.slice();
  const keep = new Uint8Array(n);
  keep[0] = 1;
  keep[n - 1] = 1;
  const tolSq = tolerance * tolerance;
  const stack: number[] = [0, n - 1];
  while (stack.length) {
    const last = stack.pop() as number;
    const first = stack.pop() as number;
    let maxSq = -1;
    let index = -1;
    const a = points[first] as Position;
    const b = points[last] as Position;
    for (let i = first + 1; i < last; i++) {
      const d = segmentDistanceSq(points[i] as Position, a, b);
      if (d > maxSq) {
        maxSq = d;
        index = i;
      }
    }
    if (index >= 0 && maxSq > tolSq) {
      keep[index] = 1;
      stack.push(first, index, index, last);
    }
  }
  const out: Position[] = [];
  for (let i = 0; i < n; i++) if (keep[i]) out.push(points[i] as Position);
  return out;
}

/** A ring simplified; null when it collapses (fewer than four positions, first and last the same, are left). */
export function simplifyRing(ring: readonly Position[], tolerance: number): Position[] | null {
  if (ring.length < 4) return null;
  // A closed ring's endpoints coincide, which would make every chord a point: split it at its farthest vertex.
  const start = ring[0] as Position;
  let far = 1;
  let farSq = -1;
  for (let i = 1; i < ring.length - 1; i++) {
    const d = segmentDistanceSq(ring[i] as Position, start, start);
    if (d > farSq) {
      farSq = d;
      far = i;
    }
  }
  const head = simplifyPath(ring.slice(0, far + 1), tolerance);
  const tail = simplifyPath(ring.slice(far), tolerance);
  const out = [...head, ...tail.slice(1)];
  return out.length >= 4 ? out : null;
}

/** `maxAllowableOffset` over a geometry; null when everything of it collapses. */
export function generalize(geometry: Geometry, tolerance: number): Geometry | null {
  if (!(tolerance > 0)) return geometry;
  const polygon = (rings: Position[][]): Position[][] | null => {
    const outer = rings[0] && simplifyRing(rings[0], tolerance);
    if (!outer) return null;
    const holes = rings.slice(1).map((r) => simplifyRing(r, tolerance));
    return [outer, ...holes.filter((h): h is Position[] => h !== null)];
  };
  switch (geometry.type) {
    case "Point":
    case "MultiPoint":
      return geometry;
    case "LineString":
      return { type: "LineString", coordinates: simplifyPath(geometry.coordinates, tolerance) };
    case "MultiLineString":
      return { type: "MultiLineString", coordinates: geometry.coordinates.map((l) => simplifyPath(l, tolerance)) };
    case "Polygon": {
      const p = polygon(geometry.coordinates);
      return p ? { type: "Polygon", coordinates: p } : null;
    }
    case "MultiPolygon": {
      const ps = geometry.coordinates.map(polygon).filter((p): p is Position[][] => p !== null);
      return ps.length ? { type: "MultiPolygon", coordinates: ps } : null;
    }
    case "GeometryCollection": {
      const ms = geometry.geometries.map((m) => generalize(m, tolerance)).filter((m): m is Geometry => m !== null);
      return ms.length ? { type: "GeometryCollection", geometries: ms } : null;
    }
  }
}
