// The streaming readers of CSV and GeoJSON files (shared/hosted/tables.ts) on files given whole, as analyze takes a
// file sent with its request: a table read twice gives the same rows, a reading stopped early leaves the next one
// whole, a GeoJSON's members are taken in any order, and its bounds (depth, a token's length) hold as it streams.
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { bufferSource, type FileSource } from "#shared/hosted/file-source.ts";
import { checkFileValues, csvTable, geoJsonTable, MAX_JSON_TOKEN, type Table } from "#shared/hosted/tables.ts";
import type { ApiError } from "#shared/errors.ts";

const WHAT = "Unable to analyze.";
const source = (text: string) => bufferSource(Buffer.from(text));

async function rowsOf(table: Table) {
  const out = [];
  for await (const row of table.rows()) out.push({ values: { ...row.values }, geometry: row.geometry ?? null });
  return out;
}

async function refusal(made: Promise<unknown>): Promise<readonly string[]> {
  const err = (await made.then(
    () => undefined,
    (e: unknown) => e,
  )) as ApiError | undefined;
  expect(err?.code).toBe(400);
  return err?.details ?? [];
}

describe("a CSV file", () => {
  const text = ["name,day,lat,lon", "a,2024-02-29,10,20", "b,0050-01-01,x,21", "c,2024-02-28,11,22"].join("\n");

  it("is read again at every rows(), whole after a reading stopped early", async () => {
    const table = await csvTable(source(text), WHAT);
    expect(table.count).toBe(3);
    expect(table.fields.map((f) => [f.name, f.kind])).toEqual([
      ["name", "string"],
      ["day", "date"],
      ["lat", "string"],
      ["lon", "integer"],
    ]);
    expect(table.notes).toEqual([
      "1 row(s) had no coordinates that parse as a latitude and longitude: kept without a point.",
    ]);
    for await (const _ of table.rows()) break;
    const rows = await rowsOf(table);
    expect(rows).toEqual(await rowsOf(table));
    expect(rows.map((r) => [r.values.name, (r.values.day as Date).toISOString(), r.geometry])).toEqual([
      ["a", "2024-02-29T00:00:00.000Z", { type: "Point", coordinates: [20, 10] }],
      // A year below 100 stays that year.
      ["b", "0050-01-01T00:00:00.000Z", null],
      ["c", "2024-02-28T00:00:00.000Z", { type: "Point", coordinates: [22, 11] }],
    ]);
  });

  it("keeps a day that does not exist as text", async () => {
    const table = await csvTable(source("d\n2024-02-30\n2024-02-01\n"), WHAT);
    expect(table.fields[0]?.kind).toBe("string");
  });

  it("is refused once its rows pass the values its size allows", async () => {
    const header = Array.from({ length: 1000 }, (_, i) => `c${i}`).join(",");
    const file = `${header}\n${"1\n".repeat(4000)}`;
    expect(await refusal(csvTable(source(file), WHAT))).toEqual([
      `The file has 3001 rows of 1000 fields: at most 3,000,000 values are published from a file of ${file.length.toLocaleString("en")} bytes (4 a byte, and 3,000,000 from any file).`,
    ]);
  });
});

describe("the values of a file of several layers (a zip of shapefiles, a GeoPackage)", () => {
  it("pass at 4 a byte or 3,000,000 whichever is more, and past it are refused with the file's own words", async () => {
    const said = { holds: "The GeoPackage has", of: "the file" };
    expect(() => checkFileValues(3_000_000, 10, WHAT, said)).not.toThrow();
    expect(() => checkFileValues(4_000_000, 1_000_000, WHAT, said)).not.toThrow();
    expect(await refusal(Promise.resolve().then(() => checkFileValues(4_000_001, 1_000_000, WHAT, said)))).toEqual([
      "The GeoPackage has more than 4,000,000 values: at most 4 a byte of the file are published (and 3,000,000 from any file).",
    ]);
    expect(
      await refusal(
        Promise.resolve().then(() =>
          checkFileValues(3_000_001, 0, WHAT, { holds: "The shapefiles hold", of: "their .dbf files" }),
        ),
      ),
    ).toEqual([
      "The shapefiles hold more than 3,000,000 values: at most 4 a byte of their .dbf files are published (and 3,000,000 from any file).",
    ]);
  });
});

describe("a GeoJSON file", () => {
  const feature = (i: number) => ({
    type: "Feature",
    properties: { n: i, tags: { a: [i] } },
    geometry: { type: "Point", coordinates: [i, i] },
  });

  it("is read with its type after its features, and a large foreign member skipped", async () => {
    const doc = {
      metadata: { rows: Array.from({ length: 1000 }, (_, i) => ({ i })) },
      features: [feature(1), feature(2)],
      type: "FeatureCollection",
    };
    const table = await geoJsonTable(source(JSON.stringify(doc)), WHAT);
    expect(table.count).toBe(2);
    expect(table.geometryType).toBe("POINT");
    expect(await rowsOf(table)).toEqual([
      { values: { n: 1, tags: '{"a":[1]}' }, geometry: { type: "Point", coordinates: [1, 1] } },
      { values: { n: 2, tags: '{"a":[2]}' }, geometry: { type: "Point", coordinates: [2, 2] } },
    ]);
  });

  it("may be a single Feature", async () => {
    const table = await geoJsonTable(source(JSON.stringify(feature(7))), WHAT);
    expect(table.count).toBe(1);
    expect(await rowsOf(table)).toEqual([
      { values: { n: 7, tags: '{"a":[7]}' }, geometry: { type: "Point", coordinates: [7, 7] } },
    ]);
  });

  it("refuses what is no GeoJSON, too deep, a token too long, or not JSON", async () => {
    expect(await refusal(geoJsonTable(source("[1,2]"), WHAT))).toEqual([
      "The GeoJSON file is neither a FeatureCollection nor a Feature.",
    ]);
    expect(await refusal(geoJsonTable(source('{"type":"Topology"}'), WHAT))).toEqual([
      "The GeoJSON file is neither a FeatureCollection nor a Feature.",
    ]);
    const deep = `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"p":${"[".repeat(70)}${"]".repeat(70)}},"geometry":null}]}`;
    expect(await refusal(geoJsonTable(source(deep), WHAT))).toEqual([
      "The GeoJSON file nests more than 64 levels deep.",
    ]);
    const long = `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"p":"${"x".repeat(MAX_JSON_TOKEN + 1)}"},"geometry":null}]}`;
    expect(await refusal(geoJsonTable(source(long), WHAT))).toEqual([
      "The GeoJSON file holds a string, number or name longer than 16,777,216 characters.",
    ]);
    expect(await refusal(geoJsonTable(source('{"type":"FeatureCollection","features":[{'), WHAT))).toEqual([
      "The GeoJSON file is not valid JSON.",
    ]);
    expect(await refusal(geoJsonTable(source('{"type":"FeatureCollection","features":[1]}'), WHAT))).toEqual([
      "Every member of 'features' must be a Feature.",
    ]);
  });
});

describe("a file whose store fails midway", () => {
  // A stand-in source whose stream errors after its first bytes: a store (S3) dropping the connection mid-file cannot
  // be caused otherwise here. Its failure is mapgate's, not the file's: not a 400 quoting it.
  const failing = (first: string): FileSource => ({
    size: 1000,
    head: async () => Buffer.from(first),
    stream: async () =>
      Readable.from(
        (async function* () {
          yield Buffer.from(first);
          throw new Error("socket hang up");
        })(),
      ),
  });

  it("fails as mapgate's fault, never as a 400 about the file", async () => {
    for (const made of [csvTable(failing("a,b\n1,2\n"), WHAT), geoJsonTable(failing('{"type":'), WHAT)]) {
      const err = await made.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect((err as ApiError).code).toBeUndefined();
      expect((err as Error).message).toBe("socket hang up");
    }
  });
});
