// Coordinates on an integer grid, as ArcGIS answers a query with `quantizationParameters` (and every f=pbf page):
// a cell is `tolerance` map units wide and high, and cell (0, 0) is the grid's origin corner of its extent.
//
//   upperLeft:  x = round((X - xmin) / tolerance)   y = round((ymax - Y) / tolerance)   translate (xmin, ymax)
//   lowerLeft:  x = round((X - xmin) / tolerance)   y = round((Y - ymin) / tolerance)   translate (xmin, ymin)
//
// so that X = translateX + x · scaleX and Y = translateY ∓ y · scaleY: the answer's transform describes exactly
// this grid, and a client that ignores it (the ArcGIS Maps SDK in view mode reads a tile's integers as pixels of
// the tile it asked for) reads the same coordinates. Within a path or ring the first vertex is absolute and the
// others are deltas from the one before; a vertex that falls on the cell of the one before adds nothing at this
// resolution and is left out, and a part left with too few cells (a path under two, a ring under four) is left
// out: it has no length or no area at this resolution.
import type { Position } from "geojson";
import { invalidParameter } from "#shared/features/errors.ts";
import type { Bounds } from "#shared/features/schema.ts";
import type { EsriGeometry } from "./esri-json.ts";

export type OriginPosition = "upperLeft" | "lowerLeft";

export interface QuantizationGrid {
  readonly originPosition: OriginPosition;
  /** The origin corner: (xmin, ymax) for upperLeft, (xmin, ymin) for lowerLeft. */
  readonly tx: number;
  readonly ty: number;
  /** A cell's size in map units. */
  readonly sx: number;
  readonly sy: number;
}

/** The grid of cells of `tolerance` whose origin is the `originPosition` corner of `extent`. */
export function gridOf(extent: Bounds, tolerance: number, originPosition: OriginPosition): QuantizationGrid {
  return {
    originPosition,
    tx: extent[0],
    ty: originPosition === "upperLeft" ? extent[3] : extent[1],
    sx: tolerance,
    sy: tolerance,
  };
}

const MAX_CELL = 2 ** 52;

/**
 * A cell number as answered: a safe integer, or the request is refused. The grid's extent is bounded
 * (MAX_QUANTIZATION_CELLS) but features are not: one far outside it, on a fine grid, would count past 2^53 (no
 * longer exact: f=json would answer a rounded number, f=pbf could not write it as a varint).
 */
function exact(cell: number): number {
  // At most 2^52 either way, so that the delta between two cells (what paths and f=pbf carry) is exact too.
  if (!Number.isSafeInteger(cell) || Math.abs(cell) > MAX_CELL)
    throw invalidParameter(
      "quantizationParameters",
      "A feature lies too far from the grid's extent for its tolerance: its cell would not be an exact integer. Use a larger tolerance or an extent around the features.",
    );
  return cell;
}

export const cellX = (g: QuantizationGrid, x: number): number => exact(Math.round((x - g.tx) / g.sx));
export const cellY = (g: QuantizationGrid, y: number): number =>
  exact(Math.round(g.originPosition === "upperLeft" ? (g.ty - y) / g.sy : (y - g.ty) / g.sy));

/** The map coordinates a cell stands for (what a client applying the transform reads). */
export const mapX = (g: QuantizationGrid, x: number): number => g.tx + x * g.sx;
export const mapY = (g: QuantizationGrid, y: number): number =>
  g.originPosition === "upperLeft" ? g.ty - y * g.sy : g.ty + y * g.sy;

/** One vertex kept: its cell's delta from the previous kept vertex (absolute for the first), and the source. */
export type EmitCell = (dx: number, dy: number, source: Position, first: boolean) => void;

/**
 * One path or ring onto the grid, in one pass: each kept vertex handed to `emit`. Returns how many were kept;
 * the caller drops a part under its minimum (`minimumCells`).
 */
export function quantizePart(part: readonly Position[], g: QuantizationGrid, emit: EmitCell): number {
  let px = 0;
  let py = 0;
  let count = 0;
  for (const p of part) {
    const x = cellX(g, p[0] as number);
    const y = cellY(g, p[1] as number);
    if (count > 0 && x === px && y === py) continue;
    emit(count === 0 ? x : x - px, count === 0 ? y : y - py, p, count === 0);
    px = x;
    py = y;
    count++;
  }
  return count;
}

/** The fewest cells a part keeps: a path needs a segment, a ring a triangle and its closing vertex. */
export const minimumCells = (closed: boolean): number => (closed ? 4 : 2);

/** The answer's `transform` (f=json): the grid, as ArcGIS writes it beside quantized features. */
export const transformJson = (g: QuantizationGrid) => ({
  originPosition: g.originPosition,
  scale: [g.sx, g.sy],
  translate: [g.tx, g.ty],
});

/**
 * An Esri JSON geometry with its x and y on the grid (f=json with quantizationParameters): a point absolute, a
 * multipoint's points and each path or ring delta-coded from the one before. Every point of a multipoint is kept
 * (its points are not a path: two in one cell are still two points). z is answered as it is (ArcGIS quantizes
 * only x and y in JSON). Null when every part collapses.
 */
export function quantizeEsriGeometry(esri: EsriGeometry, g: QuantizationGrid): EsriGeometry | null {
  if ("x" in esri) return { ...esri, x: cellX(g, esri.x), y: cellY(g, esri.y) };
  if ("points" in esri) {
    let px = 0;
    let py = 0;
    const points = esri.points.map((p, i) => {
      const x = cellX(g, p[0] as number);
      const y = cellY(g, p[1] as number);
      const out = [i ? x - px : x, i ? y - py : y, ...p.slice(2)];
      px = x;
      py = y;
      return out;
    });
    return { ...esri, points };
  }
  const closed = "rings" in esri;
  const parts: number[][][] = [];
  for (const part of closed ? esri.rings : esri.paths) {
    const cells: number[][] = [];
    quantizePart(part, g, (dx, dy, p) => cells.push([dx, dy, ...p.slice(2)]));
    if (cells.length >= minimumCells(closed)) parts.push(cells);
  }
  if (parts.length === 0) return null;
  return closed ? { ...esri, rings: parts } : { ...esri, paths: parts };
}
