// A child process for the features figures' floor: a bare node:http server that answers one query of a point
// layer with the least work that query takes — one SELECT on node:sqlite (the R*Tree narrowing, the where, the
// exact envelope test on the blob, the order and the page, as mapgate's own statement does them) and one
// JSON.stringify of the rows as Esri JSON. No routing, no parameters read, no catalog, no pipeline: what
// separates mapgate from it is everything mapgate does beyond reading and writing the page.
//   node bench/feature-floor.ts FILE SPEC  →  prints `floor PORT`; SPEC is JSON (see Spec)
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";

interface Spec {
  /** Selects the answer's fields in order, then the geometry blob; `inside(blob)` is the exact test. */
  readonly sql: string;
  readonly params: SQLInputValue[];
  /** The query envelope the exact test keeps points in: xmin, ymin, xmax, ymax. */
  readonly envelope: readonly [number, number, number, number];
  readonly pageSize: number;
  /** The answer's members before `features` (field list, spatial reference…), as mapgate answers them. */
  readonly head: Record<string, unknown>;
}

const [file, specText] = process.argv.slice(2);
if (!file || !specText) throw new Error("usage: feature-floor.ts FILE SPEC");
const spec = JSON.parse(specText) as Spec;
const [xmin, ymin, xmax, ymax] = spec.envelope;

/** A GeoPackage point blob's x and y: the header, its envelope (sized by the flags), then WKB. */
function point(blob: Uint8Array): [number, number] | undefined {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  const flags = blob[3] ?? 0;
  const envelope = [0, 32, 48, 48, 64][(flags >> 1) & 7] ?? 0;
  const wkb = 8 + envelope;
  const little = blob[wkb] === 1;
  if (view.getUint32(wkb + 1, little) % 1000 !== 1) return undefined;
  return [view.getFloat64(wkb + 5, little), view.getFloat64(wkb + 13, little)];
}

const db = new DatabaseSync(file, { readOnly: true });
db.function("inside", { deterministic: true }, (blob) => {
  const p = blob instanceof Uint8Array ? point(blob) : undefined;
  return p !== undefined && p[0] >= xmin && p[0] <= xmax && p[1] >= ymin && p[1] <= ymax ? 1 : 0;
});
const statement = db.prepare(spec.sql);
statement.setReturnArrays(true);
const names = statement.columns().map((c) => c.name);
const geometryAt = names.length - 1;

const server = createServer((_req, res) => {
  const rows = statement.all(...spec.params) as unknown as unknown[][];
  const more = rows.length > spec.pageSize;
  const features = (more ? rows.slice(0, spec.pageSize) : rows).map((row) => {
    const attributes: Record<string, unknown> = {};
    for (let i = 0; i < geometryAt; i++) attributes[names[i] as string] = row[i];
    const p = row[geometryAt] instanceof Uint8Array ? point(row[geometryAt]) : undefined;
    return { attributes, geometry: p ? { x: p[0], y: p[1] } : null };
  });
  res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ ...spec.head, features, exceededTransferLimit: more }));
});
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => console.log(`floor ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => process.exit(0));
