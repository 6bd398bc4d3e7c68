// A child process for the publishing figure: what the publish function runs to keep a file's data (the file read
// as a stream, twice, its rows written into the GeoPackage store), for one CSV item kept in ITEM_FILES_DIR, the
// GeoPackage written into HOSTED_DATA_DIR. Prints one JSON line: the time it took, the rows kept, the file written
// and the process's peak resident memory.
//   ITEM_FILES_DIR=… HOSTED_DATA_DIR=… node bench/publish-child.ts ITEM_ID  →  {"ms":…,"rows":…,"bytes":…,"maxRssMb":…}
import { keepPublishedData } from "#shared/hosted/publish.ts";
import type { Item } from "#shared/stores/items.ts";

const [itemId] = process.argv.slice(2);
if (!itemId) throw new Error("usage: node bench/publish-child.ts ITEM_ID");
// The item record as publishing reads it: only its id (its file) and title are used to keep the data.
const source = { itemId, title: "Bench points", type: "CSV", file: { name: "points.csv" } } as unknown as Item & {
  readonly file: NonNullable<Item["file"]>;
};
const started = performance.now();
const kept = await keepPublishedData(
  { source, filetype: "csv", parameters: {}, serviceItemId: "b".repeat(32), serviceName: "points", publisher: "bench" },
  "Unable to publish item.",
);
const ms = performance.now() - started;
const { extent } = kept.kept.layers[0] ?? {};
console.log(
  JSON.stringify({
    ms,
    bytes: kept.kept.bytes,
    extent,
    notes: kept.notes,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  }),
);
