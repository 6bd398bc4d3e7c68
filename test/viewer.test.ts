// Which tiled caches the viewer draws as web map tiles: the Web Mercator tiling scheme's, whatever levels a cache
// holds and whatever size its tiles; any other scheme is said in words on the page instead.
import { describe, expect, it } from "vitest";
import { webMercatorTileInfo } from "#shared/caches/tiling.ts";
import { viewerHref } from "#shared/viewer-links.ts";
import { webMercatorLevels } from "#shared/viewer/page.ts";

describe("webMercatorLevels", () => {
  it("takes the Web Mercator scheme as it is, or from a level on, with 256- or 512-pixel tiles", () => {
    const standard = webMercatorTileInfo(5, "PNG");
    expect(webMercatorLevels(standard)).toEqual({ minzoom: 0, maxzoom: 5, tileSize: 256 });
    expect(webMercatorLevels({ ...standard, lods: standard.lods.slice(3) })).toEqual({
      minzoom: 3,
      maxzoom: 5,
      tileSize: 256,
    });
    const large = {
      ...standard,
      rows: 512,
      cols: 512,
      lods: standard.lods.map((l) => ({ ...l, resolution: l.resolution / 2 })),
    };
    expect(webMercatorLevels(large)).toEqual({ minzoom: 0, maxzoom: 5, tileSize: 512 });
  });

  it("refuses other schemes: another projection, another origin, levels that skip a halving", () => {
    const standard = webMercatorTileInfo(3, "PNG");
    expect(webMercatorLevels({ ...standard, spatialReference: { wkid: 4326 } })).toBeUndefined();
    expect(webMercatorLevels({ ...standard, origin: { x: -180, y: 90 } })).toBeUndefined();
    const odd = standard.lods.map((l) => ({ ...l, resolution: l.resolution * 1.5 }));
    expect(webMercatorLevels({ ...standard, lods: odd })).toBeUndefined();
    expect(webMercatorLevels({ ...standard, lods: [] })).toBeUndefined();
  });
});

describe("viewerHref", () => {
  it("links the viewer by the URL's path, absolute URLs reduced to theirs", () => {
    expect(viewerHref("https://gis.example.com/arcgis/rest/services/A/MapServer")).toBe(
      "/viewer/map?url=%2Farcgis%2Frest%2Fservices%2FA%2FMapServer",
    );
    expect(viewerHref("/arcgis/rest/services/F/FeatureServer/0")).toBe(
      "/viewer/map?url=%2Farcgis%2Frest%2Fservices%2FF%2FFeatureServer%2F0",
    );
  });
});
