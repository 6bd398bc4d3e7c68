// Small geometries and files the feature tests build their fixtures from.
import yazl from "yazl";

/**
 * The closed square ring from (x, y) of side `size`: counter-clockwise (GeoJSON's exterior, RFC 7946), or
 * clockwise when `ccw` is false (an Esri exterior, a GeoJSON hole).
 */
export function square(x: number, y: number, size: number, ccw = true): [number, number][] {
  const ring: [number, number][] = [
    [x, y],
    [x + size, y],
    [x + size, y + size],
    [x, y + size],
    [x, y],
  ];
  return ccw ? ring : ring.reverse();
}

/** A zip made by yazl of `files`, named as given (`mode` for a link; compressed unless `compress` is false). */
export function zipOf(
  files: readonly { name: string; bytes: Buffer | string; mode?: number; compress?: boolean }[],
): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const f of files)
    zip.addBuffer(Buffer.from(f.bytes), f.name, { ...(f.mode ? { mode: f.mode } : {}), compress: f.compress ?? true });
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c));
    zip.outputStream.on("end", () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on("error", reject);
  });
}
