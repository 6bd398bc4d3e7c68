// Ring orientation and containment on plain coordinate arrays, shared by the Esri JSON and GeoJSON writers, the
// Esri JSON reader (which groups rings into polygons by them) and the PBF encoder. Orientation is read in the
// plane of the coordinates as stored: y up.
import type { Position } from "geojson";

/** Twice the signed area (shoelace): positive counter-clockwise, negative clockwise, with y pointing up. */
export function ringSignedArea(ring: readonly Position[]): number {
  let sum = 0;
  for (let i = 0, n = ring.length; i < n; i++) {
    const a = ring[i] as Position;
    const b = ring[(i + 1) % n] as Position;
    sum += (a[0] as number) * (b[1] as number) - (b[0] as number) * (a[1] as number);
  }
  return sum;
}

export const isClockwise = (ring: readonly Position[]) => ringSignedArea(ring) < 0;

/** The ring turned the wanted way (a copy when it must turn, the same array otherwise). */
export function orient(ring: Position[], clockwise: boolean): Position[] {
  const area = ringSignedArea(ring);
  if (area === 0 || area < 0 === clockwise) return ring;
  return ring.slice().reverse();
}

/** Even-odd point in ring; a point on the boundary may fall either way (callers test a vertex of a hole). */
export function pointInRing(x: number, y: number, ring: readonly Position[]): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const a = ring[i] as Position;
    const b = ring[j] as Position;
    const ay = a[1] as number;
    const by = b[1] as number;
    if (ay > y !== by > y) {
      const ax = a[0] as number;
      const bx = b[0] as number;
      if (x < ((bx - ax) * (y - ay)) / (by - ay) + ax) inside = !inside;
    }
  }
  return inside;
}

/** Closes a ring (first position repeated last) when it is open. */
export function closeRing(ring: Position[]): Position[] {
  const first = ring[0];
  const last = ring[ring.length - 1];
  if (!first || !last) return ring;
  if (first[0] === last[0] && first[1] === last[1]) return ring;
  return [...ring, first];
}
