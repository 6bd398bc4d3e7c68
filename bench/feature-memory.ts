// A child process for the features memory figure (run with --expose-gc): the query step alone — plan, SQL on the
// GeoPackage, rows shaped, the answer serialized as the pipeline serializes it — run N times on one layer, with
// the heap collected before and after, so what queries leave behind and the most memory one needs can be set
// against one page and against the layer.
//   node --expose-gc bench/feature-memory.ts FILE TABLE N QUERY  →  prints one JSON line
import { statSync } from "node:fs";
import { DatasetError } from "#shared/features/errors.ts";
import { geoPackageAt } from "#shared/features/geopackage.ts";
import { runQuery } from "#shared/features/query.ts";
import { Params } from "#shared/http/params.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";

const [file, table, n, query] = process.argv.slice(2);
const exposed = (globalThis as { gc?: () => void }).gc;
if (!file || !table || !n || query === undefined || !exposed) throw new Error("usage: --expose-gc FILE TABLE N QUERY");
const gc = exposed;

const gpkg = await geoPackageAt(file, "bench");
const schema = gpkg.schema(table);
if (!schema || schema instanceof DatasetError) throw new Error(`no layer ${table} in ${file}`);
const req = { params: new Params(new Map(new URLSearchParams(query))) } as unknown as RestRequest;
const dataset = (await import("#shared/features/dataset.ts")).geoPackageDataset(gpkg, schema);
const once = async () => JSON.stringify(await runQuery(req, dataset)).length;

let pageBytes = 0;
for (let i = 0; i < 20; i++) pageBytes = await once(); // warm: statements prepared, code optimized
const queries = Number(n);
/** What N queries leave behind once collected, per query, and the highest RSS right after one of them. */
async function window() {
  gc();
  const before = process.memoryUsage();
  let peak = before.rss;
  for (let i = 0; i < queries; i++) {
    await once();
    peak = Math.max(peak, process.memoryUsage.rss());
  }
  gc();
  const after = process.memoryUsage();
  return {
    heapPerQuery: (after.heapUsed - before.heapUsed) / queries,
    rssPerQuery: (after.rss - before.rss) / queries,
    peakRssGrowth: peak - before.rss,
  };
}
// Two windows: in the first the heap still grows to the size this load keeps it at (V8 sizes it to the rate of
// allocation), the second shows whether anything grows after that.
const first = await window();
const second = await window();
console.log(JSON.stringify({ queries, first, second, pageBytes, layerBytes: statSync(file).size }));
