// Compact Cache V2 bundles: 128 × 128 tiles per file, a 64-byte header, then 16,384 index records of
// 8 bytes (low 40 bits: offset of the tile's bytes; high 24 bits: their length), then the tiles, each
// preceded by its length in 4 bytes. A tile is read with two ranged reads: its index record, then its bytes.
import { joinPath, type Storage } from "#shared/storage/storage.ts";

export const PACKET = 128;
const HEADER_BYTES = 64;
const RECORDS = PACKET * PACKET;
const INDEX_BYTES = RECORDS * 8;
/** The largest tile a record can describe is 2^24 - 1 bytes; tiles above this are refused as corrupt anyway. */
export const MAX_TILE_BYTES = 16 * 1024 * 1024 - 1;
/** The deepest level a cache may have (ArcGIS caches stop at 23; a few more for good measure). */
export const MAX_LEVEL = 30;

/** Rows and columns beyond this exist in no cache (2^31: level 30 of a world cache at one tile on level 0). */
const MAX_ROW = 2 ** 31;

const hex4 = (n: number) => n.toString(16).padStart(4, "0");

/** The bundle holding a tile, relative to the cache's `_alllayers` (or `tile`) folder. */
export function bundleFile(level: number, row: number, col: number): { path: string; record: number } {
  const r0 = row - (row % PACKET);
  const c0 = col - (col % PACKET);
  return {
    path: `L${String(level).padStart(2, "0")}/R${hex4(r0)}C${hex4(c0)}.bundle`,
    record: (row - r0) * PACKET + (col - c0),
  };
}

/** Whether level/row/col are plain integers a cache could hold (refused before any read). */
export function validTileAddress(level: number, row: number, col: number): boolean {
  return (
    Number.isSafeInteger(level) &&
    Number.isSafeInteger(row) &&
    Number.isSafeInteger(col) &&
    level >= 0 &&
    level <= MAX_LEVEL &&
    row >= 0 &&
    col >= 0 &&
    row < MAX_ROW &&
    col < MAX_ROW
  );
}

export type TileRead =
  { readonly found: true; readonly bytes: Buffer } | { readonly found: false; readonly corrupt?: string };

/**
 * Reads one tile: its index record, then its bytes. A missing bundle or an empty record is "not found"; a
 * record that points outside the file or disagrees with the length stored before the tile is "corrupt".
 */
export async function readBundleTile(
  storage: Storage,
  cacheRoot: string,
  level: number,
  row: number,
  col: number,
): Promise<TileRead> {
  const { path, record } = bundleFile(level, row, col);
  const file = joinPath(cacheRoot, path);
  const entry = await storage.readRange(file, HEADER_BYTES + record * 8, 8);
  if (!entry) return { found: false };
  if (entry.length < 8) return { found: false, corrupt: `${path}: index truncated` };
  const value = entry.readBigUInt64LE(0);
  const offset = Number(value & 0xff_ffff_ffffn);
  const size = Number(value >> 40n);
  if (size === 0) return { found: false };
  if (offset < HEADER_BYTES + INDEX_BYTES + 4)
    return { found: false, corrupt: `${path}: record ${record} points into the index` };
  const bytes = await storage.readRange(file, offset - 4, size + 4);
  if (!bytes || bytes.length < size + 4)
    return { found: false, corrupt: `${path}: record ${record} points past the end` };
  if (bytes.readUInt32LE(0) !== size)
    return { found: false, corrupt: `${path}: record ${record} disagrees with its tile` };
  return { found: true, bytes: bytes.subarray(4) };
}

/**
 * Builds one bundle file from its tiles (`row`/`col` inside the bundle, 0…127). Used to make demo caches and
 * test fixtures; a real cache comes from the tools that made it.
 */
export function writeBundle(tiles: readonly { row: number; col: number; bytes: Uint8Array }[]): Buffer {
  const index = Buffer.alloc(INDEX_BYTES);
  const body: Buffer[] = [];
  let offset = HEADER_BYTES + INDEX_BYTES;
  let largest = 0;
  for (const t of tiles) {
    if (t.row < 0 || t.row >= PACKET || t.col < 0 || t.col >= PACKET) throw new RangeError("tile outside the bundle");
    if (t.bytes.length > MAX_TILE_BYTES) throw new RangeError("tile too large for a bundle");
    const length = Buffer.alloc(4);
    length.writeUInt32LE(t.bytes.length, 0);
    body.push(length, Buffer.from(t.bytes));
    offset += 4;
    index.writeBigUInt64LE((BigInt(t.bytes.length) << 40n) | BigInt(offset), (t.row * PACKET + t.col) * 8);
    offset += t.bytes.length;
    largest = Math.max(largest, t.bytes.length);
  }
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(3, 0); // version
  header.writeUInt32LE(RECORDS, 4);
  header.writeUInt32LE(largest, 8);
  header.writeUInt32LE(5, 12); // bytes of an offset
  header.writeBigUInt64LE(4n, 16); // slack
  header.writeBigUInt64LE(BigInt(offset), 24); // file size
  header.writeBigUInt64LE(40n, 32); // user header offset
  header.writeUInt32LE(20 + INDEX_BYTES, 40); // user header size
  header.writeUInt32LE(3, 44);
  header.writeUInt32LE(16, 48);
  header.writeUInt32LE(RECORDS, 52);
  header.writeUInt32LE(5, 56);
  header.writeUInt32LE(INDEX_BYTES, 60);
  return Buffer.concat([header, index, ...body]);
}
