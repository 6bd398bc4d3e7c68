// Bounds of GeoJSON geometry: the window a spatial index narrows by, and the page extent the PBF grid covers.
// Kept apart from the spatial tests so that encoders need not load jsts.
import type { Geometry, Position } from "geojson";
import type { Bounds } from "#shared/features/schema.ts";

/** [xmin, ymin, xmax, ymax] of a GeoJSON geometry; undefined when it has no position. */
export function geometryBounds(g: Geometry): Bounds | undefined {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const visit = (p: Position) => {
    const x = p[0] as number;
    const y = p[1] as number;
    if (x < xmin) xmin = x;
    if (x > xmax) xmax = x;
    if (y < ymin) ymin = y;
    if (y > ymax) ymax = y;
  };
  const walk = (g: Geometry): void => {
    switch (g.type) {
      case "Point":
        return visit(g.coordinates);
      case "MultiPoint":
      case "LineString":
        return g.coordinates.forEach(visit);
      case "MultiLineString":
      case "Polygon":
        return g.coordinates.forEach((l) => l.forEach(visit));
      case "MultiPolygon":
        return g.coordinates.forEach((p) => p.forEach((r) => r.forEach(visit)));
      case "GeometryCollection":
        return g.geometries.forEach(walk);
    }
  };
  walk(g);
  return xmin <= xmax ? [xmin, ymin, xmax, ymax] : undefined;
}

export const boundsIntersect = (a: Bounds, b: Bounds): boolean =>
  a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
