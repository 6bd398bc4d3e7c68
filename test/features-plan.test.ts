// The query plan: each `query` parameter read, defaulted and checked, the output kinds and their precedence, and
// ArcGIS's refusals for malformed or conflicting parameters.
import { describe, expect, it } from "vitest";
import { ApiError } from "#shared/errors.ts";
import { fieldByName } from "#shared/features/schema.ts";
import {
  DEFAULT_MAX_RECORD_COUNT,
  MAX_GEOMETRY_LENGTH,
  MAX_OBJECT_IDS,
  parseSpatialReference,
  planQuery,
  type QueryPlan,
} from "#shared/features/plan.ts";
import { citiesSchema } from "./helpers/feature-layer.ts";

const plan = (params: Record<string, string>, maxRecordCount?: number): QueryPlan =>
  planQuery(new Map(Object.entries(params)), citiesSchema, { maxRecordCount });
const field = (name: string) => fieldByName(citiesSchema, name);

function refusal(params: Record<string, string>): string[] {
  try {
    plan(params);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    expect(e.code).toBe(400);
    expect(e.message).toBe("Unable to complete operation.");
    return [...e.details];
  }
  throw new Error(`accepted: ${JSON.stringify(params)}`);
}

describe("planQuery: features", () => {
  it("defaults to every row, the object id only, with geometry, ordered by object id, a page of maxRecordCount", () => {
    const p = plan({});
    expect(p).toMatchObject({
      output: "features",
      where: undefined,
      objectIds: undefined,
      spatial: undefined,
      returnGeometry: true,
      offset: 0,
      pageSize: DEFAULT_MAX_RECORD_COUNT,
      returnZ: false,
      returnM: false,
    });
    if (p.output !== "features") throw new Error();
    expect(p.fields.map((f) => f.name)).toEqual(["objectid"]);
    expect(p.orderBy).toEqual([{ field: field("objectid"), descending: false }]);
  });

  it("reads outFields (* or a list, in layer order, the object id first) and caps the page", () => {
    const p = plan(
      { outFields: " KIND ,name,,name", resultOffset: "10", resultRecordCount: "5000", returnGeometry: "FALSE" },
      1000,
    );
    if (p.output !== "features") throw new Error();
    expect(p.fields.map((f) => f.name)).toEqual(["objectid", "name", "kind"]);
    expect(p).toMatchObject({ offset: 10, pageSize: 1000, returnGeometry: false });
    const all = plan({ outFields: "*", resultRecordCount: "7" });
    if (all.output !== "features") throw new Error();
    expect(all.fields).toHaveLength(citiesSchema.fields.length);
    expect(all.pageSize).toBe(7);
  });

  it("reads orderByFields and appends the object id", () => {
    const p = plan({ orderByFields: "pop DESC, name asc,kind" });
    if (p.output !== "features") throw new Error();
    expect(p.orderBy.map((t) => [t.field.name, t.descending])).toEqual([
      ["pop", true],
      ["name", false],
      ["kind", false],
      ["objectid", false],
    ]);
    const byId = plan({ orderByFields: "objectid DESC" });
    if (byId.output !== "features") throw new Error();
    expect(byId.orderBy).toHaveLength(1);
  });

  it("reads a where that holds on every row (1=1, literals only) as no filter, and keeps any other", () => {
    for (const where of ["1=1", "1 = 1 AND 'a' = 'a'", "2 > 1 OR pop = 3", "(0 <> 1)"])
      expect(plan({ where }).where).toBeUndefined();
    for (const where of [
      "1=0",
      "1=1 AND pop = 3",
      "'a' < 'b'",
      "NULL IS NULL",
      "pop = pop",
      "(1 = 1 OR 1 = 2) AND 1 = 0",
    ])
      expect(plan({ where }).where, where).toBeDefined();
  });

  it("reads objectIds, distinct and sorted", () => {
    expect(plan({ objectIds: "3, 1,3,-2" }).objectIds).toEqual([-2, 1, 3]);
  });

  it("reads geometry as JSON or shorthand, with inSR, spatialRel, distance and units", () => {
    expect(plan({ geometry: "1,2,3,4" }).spatial).toEqual({
      geometry: { xmin: 1, ymin: 2, xmax: 3, ymax: 4 },
      geometryType: "esriGeometryEnvelope",
      inSR: undefined,
      relation: "intersects",
      distance: undefined,
      units: undefined,
    });
    expect(plan({ geometry: "1,2", inSR: "102100", distance: "10", units: "esriSRUnit_Meter" }).spatial).toMatchObject({
      geometry: { x: 1, y: 2 },
      geometryType: "esriGeometryPoint",
      inSR: 3857,
      distance: 10,
      units: "esriSRUnit_Meter",
    });
    const polygon = {
      rings: [
        [
          [0, 0],
          [1, 0],
          [1, 1],
          [0, 0],
        ],
      ],
      spatialReference: { wkid: 4326 },
    };
    expect(
      plan({
        geometry: JSON.stringify(polygon),
        geometryType: "esriGeometryPolygon",
        spatialRel: "esriSpatialRelContains",
      }).spatial,
    ).toMatchObject({ geometry: polygon, geometryType: "esriGeometryPolygon", inSR: 4326, relation: "contains" });
    expect(plan({ geometry: JSON.stringify({ paths: [] }) }).spatial?.geometryType).toBe("esriGeometryPolyline");
    for (const [esri, relation] of [
      ["esriSpatialRelEnvelopeIntersects", "envelopeIntersects"],
      ["esriSpatialRelWithin", "within"],
      ["esriSpatialRelCrosses", "crosses"],
      ["esriSpatialRelTouches", "touches"],
      ["esriSpatialRelOverlaps", "overlaps"],
    ]) {
      expect(plan({ geometry: "1,2", spatialRel: esri ?? "" }).spatial?.relation).toBe(relation);
    }
  });

  it("reads spatial references in their forms", () => {
    expect(parseSpatialReference("4326", "outSR")).toBe(4326);
    expect(parseSpatialReference('{"wkid":102100,"latestWkid":3857}', "outSR")).toBe(3857);
    expect(parseSpatialReference('{"wkid":102113}', "outSR")).toBe(3857);
    expect(plan({ outSR: '{"latestWkid":2154}' }).outSR).toBe(2154);
  });

  it("reads the remaining options", () => {
    expect(plan({ geometryPrecision: "6", maxAllowableOffset: "0.5", returnZ: "true", returnM: "True" })).toMatchObject(
      { geometryPrecision: 6, maxAllowableOffset: 0.5, returnZ: true, returnM: true },
    );
  });
});

describe("planQuery: other outputs and their precedence", () => {
  it("count, ids (not paged), extent with and without count", () => {
    expect(plan({ returnCountOnly: "true", returnIdsOnly: "true" })).toMatchObject({
      output: "count",
      distinctFields: undefined,
    });
    expect(plan({ returnIdsOnly: "true", resultRecordCount: "1" })).toMatchObject({ output: "ids" });
    expect(plan({ returnExtentOnly: "true" })).toMatchObject({ output: "extent", withCount: false });
    expect(plan({ returnExtentOnly: "true", returnCountOnly: "true" })).toMatchObject({
      output: "extent",
      withCount: true,
    });
  });

  it("distinct values: fields in the given order, ordered by them; counted with returnCountOnly", () => {
    const p = plan({ returnDistinctValues: "true", outFields: "kind,name", orderByFields: "name DESC" });
    if (p.output !== "distinct") throw new Error();
    expect(p.fields.map((f) => f.name)).toEqual(["kind", "name"]);
    expect(p.orderBy.map((t) => [t.field.name, t.descending])).toEqual([
      ["name", true],
      ["kind", false],
    ]);
    expect(plan({ returnDistinctValues: "true", outFields: "kind", returnCountOnly: "true" })).toMatchObject({
      output: "count",
      distinctFields: [field("kind")],
    });
  });

  it("statistics take precedence, with group by, having, order and percentiles", () => {
    const p = plan({
      outStatistics: JSON.stringify([
        { statisticType: "COUNT", onStatisticField: "objectid", outStatisticFieldName: "n" },
        {
          statisticType: "percentile_cont",
          onStatisticField: "pop",
          statisticParameters: { value: 0.9, orderBy: "desc" },
        },
      ]),
      groupByFieldsForStatistics: "kind,name",
      having: "COUNT(objectid) > 2 AND kind <> 'x'",
      orderByFields: "n DESC",
      returnCountOnly: "true",
    });
    if (p.output !== "statistics") throw new Error();
    expect(p.statistics).toEqual([
      { type: "count", field: field("objectid"), name: "n", percentile: undefined, descending: false },
      { type: "percentile_cont", field: field("pop"), name: "percentile_cont_pop", percentile: 0.9, descending: true },
    ]);
    expect(p.groupBy.map((f) => f.name)).toEqual(["kind", "name"]);
    expect(p.having).toMatchObject({ kind: "and" });
    expect(p.orderBy).toEqual([
      { kind: "statistic", index: 0, descending: true },
      { kind: "group", field: field("kind"), descending: false },
      { kind: "group", field: field("name"), descending: false },
    ]);
  });
});

describe("planQuery: refusals", () => {
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ where: "nosuch = 1" }, "'where' parameter is invalid", /Unknown field 'nosuch'/],
    [{ objectIds: "1,x" }, "'objectIds' parameter is invalid", /'x' is not an object id/],
    [{ objectIds: "1.5" }, "'objectIds' parameter is invalid", /not an object id/],
    [
      { objectIds: Array.from({ length: MAX_OBJECT_IDS + 1 }, (_, i) => i).join(",") },
      "'objectIds' parameter is invalid",
      /At most/,
    ],
    [{ geometry: "{not json" }, "'geometry' parameter is invalid", /not valid JSON/],
    [{ geometry: "[1,2]" }, "'geometry' parameter is invalid", /Expected Esri JSON/],
    [{ geometry: "1,2,3" }, "'geometry' parameter is invalid", /does not fit esriGeometryEnvelope/],
    [{ geometry: "3,2,1,4" }, "'geometry' parameter is invalid", /minimum exceeds/],
    [{ geometry: "1,2", geometryType: "esriGeometryEnvelope" }, "'geometry' parameter is invalid", /does not fit/],
    [
      { geometry: '{"x":1,"y":2}', geometryType: "esriGeometryPolygon" },
      "'geometry' parameter is invalid",
      /does not fit esriGeometryPolygon/,
    ],
    [
      { geometry: `{"rings":[${"0,".repeat(MAX_GEOMETRY_LENGTH / 2)}0]}` },
      "'geometry' parameter is invalid",
      /longer than/,
    ],
    [
      { geometry: "1,2", geometryType: "esriGeometryCircle" },
      "'geometryType' parameter is invalid",
      /Unknown geometry type/,
    ],
    [{ geometry: "1,2", spatialRel: "esriSpatialRelRelation" }, "'spatialRel' parameter is invalid", /Unsupported/],
    [{ geometry: "1,2", inSR: '{"wkt":"GEOGCS[...]"}' }, "'inSR' parameter is invalid", /well-known id/],
    [{ outSR: "abc" }, "'outSR' parameter is invalid", /well-known id/],
    [{ distance: "10" }, "'distance' parameter is invalid", /needs a 'geometry'/],
    [{ geometry: "1,2", distance: "-1" }, "'distance' parameter is invalid", /zero or more/],
    [{ geometry: "1,2", distance: "1", units: "esriSRUnit_Parsec" }, "'units' parameter is invalid", /Unknown unit/],
    [{ outFields: "name,nosuch" }, "'outFields' parameter is invalid", /Unknown field 'nosuch'/],
    [{ returnGeometry: "yes" }, "'returnGeometry' parameter is invalid", /true or false/],
    [{ returnCountOnly: "1" }, "'returnCountOnly' parameter is invalid", /true or false/],
    [{ geometryPrecision: "-1" }, "'geometryPrecision' parameter is invalid", /whole number/],
    [{ maxAllowableOffset: "x" }, "'maxAllowableOffset' parameter is invalid", /number/],
    [{ resultOffset: "-1" }, "'resultOffset' parameter is invalid", /whole number/],
    [{ resultRecordCount: "0" }, "'resultRecordCount' parameter is invalid", /whole number/],
    [{ orderByFields: "nosuch" }, "'orderByFields' parameter is invalid", /Cannot order by 'nosuch'/],
    [{ orderByFields: "pop UP" }, "'orderByFields' parameter is invalid", /ASC or DESC/],
    [{ orderByFields: "photo" }, "'orderByFields' parameter is invalid", /Cannot order by 'photo'/],
    [{ returnDistinctValues: "true", outFields: "*" }, "'returnDistinctValues' parameter is invalid", /not '\*'/],
    [{ returnDistinctValues: "true" }, "'returnDistinctValues' parameter is invalid", /outFields/],
    [
      { returnDistinctValues: "true", outFields: "kind", orderByFields: "pop" },
      "'orderByFields' parameter is invalid",
      /Cannot order by 'pop'/,
    ],
    [{ outStatistics: "[]" }, "'outStatistics' parameter is invalid", /non-empty JSON array/],
    [{ outStatistics: "{" }, "'outStatistics' parameter is invalid", /not valid JSON/],
    [
      { outStatistics: '[{"statisticType":"median","onStatisticField":"pop"}]' },
      "'outStatistics' parameter is invalid",
      /statisticType/,
    ],
    [
      { outStatistics: '[{"statisticType":"sum","onStatisticField":"name"}]' },
      "'outStatistics' parameter is invalid",
      /sum cannot be computed on the field 'name'/,
    ],
    [
      { outStatistics: '[{"statisticType":"sum","onStatisticField":"nosuch"}]' },
      "'outStatistics' parameter is invalid",
      /unknown field/,
    ],
    [
      { outStatistics: '[{"statisticType":"sum","onStatisticField":"pop","outStatisticFieldName":"a b"}]' },
      "'outStatistics' parameter is invalid",
      /invalid outStatisticFieldName/,
    ],
    [
      {
        outStatistics:
          '[{"statisticType":"sum","onStatisticField":"pop","outStatisticFieldName":"x"},{"statisticType":"avg","onStatisticField":"pop","outStatisticFieldName":"X"}]',
      },
      "'outStatistics' parameter is invalid",
      /given twice/,
    ],
    [
      { outStatistics: '[{"statisticType":"percentile_cont","onStatisticField":"pop"}]' },
      "'outStatistics' parameter is invalid",
      /statisticParameters.value/,
    ],
    [
      { outStatistics: '[{"statisticType":"count","onStatisticField":"pop"}]', groupByFieldsForStatistics: "nosuch" },
      "'groupByFieldsForStatistics' parameter is invalid",
      /Unknown field/,
    ],
    [
      { outStatistics: '[{"statisticType":"count","onStatisticField":"pop"}]', having: "pop > 1" },
      "'having' parameter is invalid",
      /'pop' is neither grouped by nor aggregated/,
    ],
    [
      {
        outStatistics: '[{"statisticType":"count","onStatisticField":"pop","outStatisticFieldName":"n"}]',
        orderByFields: "pop",
      },
      "'orderByFields' parameter is invalid",
      /Cannot order by 'pop'/,
    ],
    [
      { groupByFieldsForStatistics: "kind" },
      "'groupByFieldsForStatistics' parameter is invalid",
      /needs 'outStatistics'/,
    ],
    [{ having: "COUNT(*) > 1" }, "'having' parameter is invalid", /needs 'outStatistics'/],
  ];
  it.each(cases)("refuses %j", (params, detail, pattern) => {
    const details = refusal(params);
    expect(details[0]).toBe(detail);
    expect(details[1]).toMatch(pattern);
  });

  it("refuses an extent of a table without geometry", () => {
    const { geometry: _, ...table } = citiesSchema;
    expect(() => planQuery(new Map([["returnExtentOnly", "true"]]), table)).toThrow(ApiError);
  });
});
