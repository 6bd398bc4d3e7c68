// The map viewer's script (a browser script, loaded after maplibre-gl's CSP build): reads what to draw from the
// page's `data-config` (shared/viewer/page.ts) and draws it. Every failure is said on the page in words.
// The page states what it reached on <body data-viewer="…">: `drawn` once the map has drawn its content,
// `failed` when it cannot; `data-feature` holds the id of the feature whose attributes are shown.
/* global maplibregl, topojson, document */
"use strict";

(function () {
  const root = document.getElementById("viewer");
  const status = document.getElementById("viewer-status");
  const details = document.getElementById("viewer-details");
  if (!root || !status || !details) return;
  const config = JSON.parse(root.dataset.config || "{}");
  const body = document.body;

  function say(text, isError) {
    status.textContent = text;
    status.className = isError ? "error" : "muted";
    status.setAttribute("role", isError ? "alert" : "status");
  }
  let drawing = false;
  function fail(text) {
    say(text, true);
    body.dataset.viewer = "failed";
    // No map was made: no empty box where one would be.
    const box = document.getElementById("map");
    if (box && !drawing) box.hidden = true;
  }

  /** A JSON answer of this site, or an Error with its envelope's message and details. */
  async function getJson(url) {
    let response;
    try {
      response = await fetch(url, { credentials: "same-origin" });
    } catch {
      throw new Error(`${url} could not be reached.`);
    }
    if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}.`);
    const json = await response.json().catch(() => {
      throw new Error(`${url} did not answer JSON.`);
    });
    if (json && json.error) {
      const message = json.error.message || "Error";
      const more = Array.isArray(json.error.details) ? json.error.details.filter((d) => d !== message) : [];
      throw new Error([message, ...more].join(" "));
    }
    return json;
  }

  const WORLD = [-180, -85.05, 180, 85.05];
  const R = 6378137;
  function toLonLat(x, y) {
    return [(x / R) * (180 / Math.PI), (Math.atan(Math.exp(y / R)) * 2 - Math.PI / 2) * (180 / Math.PI)];
  }
  /** An Esri extent as [west, south, east, north] in degrees (WGS 84 or Web Mercator only), else undefined. */
  function boundsOf(extent) {
    if (!extent || typeof extent.xmin !== "number") return undefined;
    const sr = extent.spatialReference || {};
    const wkid = sr.latestWkid || sr.wkid;
    if (wkid === 4326) return [extent.xmin, extent.ymin, extent.xmax, extent.ymax];
    if ([3857, 102100, 102113, 900913].includes(wkid)) {
      const sw = toLonLat(extent.xmin, extent.ymin);
      const ne = toLonLat(extent.xmax, extent.ymax);
      return [sw[0], sw[1], ne[0], ne[1]];
    }
    return undefined;
  }
  const clamp = (b) => [Math.max(b[0], -180), Math.max(b[1], -85.05), Math.min(b[2], 180), Math.min(b[3], 85.05)];

  // Geometry that crosses the antimeridian. A GeoJSON line or ring that steps from 179.9° to -179.9° means the
  // short way across it (Natural Earth's Russia, Fiji, Antarctica), but a flat map draws the long way round: a
  // stripe across the world. Each line and ring is made continuous instead (-179.9° becomes 180.1°), which the
  // map library draws in place; a ring that goes once round the globe (around a pole) is closed over that pole.
  // Linear in the number of coordinates.

  /** The line's longitudes without jumps of more than 180°. */
  function unwrapLine(line) {
    const out = [];
    let shift = 0;
    let previous;
    for (const p of line) {
      let x = p[0] + shift;
      if (previous !== undefined && Math.abs(x - previous) > 180) {
        const turn = x > previous ? -360 : 360;
        shift += turn;
        x += turn;
      }
      out.push([x, p[1]]);
      previous = x;
    }
    return out;
  }

  /** Twice the ring's signed area in degrees (positive: counter-clockwise). */
  function signedArea(ring) {
    let sum = 0;
    for (let i = 0; i + 1 < ring.length; i++) sum += ring[i][0] * ring[i + 1][1] - ring[i + 1][0] * ring[i][1];
    return sum;
  }

  /** A ring made continuous; a ring around a pole (it ends 360° from where it began) closed over that pole. */
  function unwrapRing(ring) {
    const out = unwrapLine(ring);
    const first = out[0];
    const last = out[out.length - 1];
    if (!first || Math.abs(last[0] - first[0]) < 180) return { ring: out, polar: false };
    const pole = out.reduce((sum, p) => sum + p[1], 0) < 0 ? -90 : 90;
    out.push([last[0], pole], [first[0], pole], first);
    return { ring: out, polar: true };
  }

  /**
   * A polygon's rings made continuous, wound as RFC 7946 says (the map library tells holes by their winding).
   * Around a pole the widest polar ring bounds the polygon and the others are holes in it: Antarctica from the
   * world-atlas package is its coast plus a small circle at the pole.
   */
  function unwrapPolygon(rings) {
    const made = rings.map(unwrapRing);
    if (made.length === 0) return [];
    const polar = made.filter((r) => r.polar);
    let outer = made[0];
    if (polar.length > 0) {
      outer = polar.reduce((a, b) => (Math.abs(signedArea(b.ring)) > Math.abs(signedArea(a.ring)) ? b : a));
    }
    const wound = (r, ccw) => (signedArea(r.ring) > 0 === ccw ? r.ring : r.ring.reverse());
    return [wound(outer, true), ...made.filter((r) => r !== outer).map((r) => wound(r, false))];
  }

  function unwrapGeometry(g) {
    if (!g) return g;
    switch (g.type) {
      case "LineString":
        return { type: g.type, coordinates: unwrapLine(g.coordinates) };
      case "MultiLineString":
        return { type: g.type, coordinates: g.coordinates.map(unwrapLine) };
      case "Polygon":
        return { type: g.type, coordinates: unwrapPolygon(g.coordinates) };
      case "MultiPolygon":
        return { type: g.type, coordinates: g.coordinates.map(unwrapPolygon) };
      case "GeometryCollection":
        return { type: g.type, geometries: g.geometries.map(unwrapGeometry) };
      default:
        return g;
    }
  }

  /** A FeatureCollection, Feature or geometry with every line and ring made continuous. */
  function unwrapped(geojson) {
    if (geojson.type === "FeatureCollection") return { ...geojson, features: geojson.features.map(unwrapped) };
    if (geojson.type === "Feature") return { ...geojson, geometry: unwrapGeometry(geojson.geometry) };
    return unwrapGeometry(geojson);
  }

  // The basemap under every map: the world's land and its countries' borders (Natural Earth 1:110m, from the
  // world-atlas package), served by mapgate itself like the map library, so a map shows where its data lies
  // with no request to any other site. A basemap that cannot be read leaves the map without one, not broken.
  const LAND = "#dde3d6";
  const BORDER = "#b9c1b0";
  const basemap = (async () => {
    if (!config.basemapUrl || typeof topojson === "undefined") return undefined;
    try {
      const world = await getJson(config.basemapUrl);
      return {
        land: unwrapped(topojson.feature(world, world.objects.land)),
        borders: unwrapped(topojson.mesh(world, world.objects.countries, (a, b) => a !== b)),
      };
    } catch {
      return undefined;
    }
  })();

  /** The basemap's sources and layers, drawn under everything but the background. */
  function basemapStyle(data) {
    if (!data) return { sources: {}, layers: [] };
    return {
      sources: {
        "basemap-land": { type: "geojson", data: data.land },
        "basemap-borders": { type: "geojson", data: data.borders },
      },
      layers: [
        { id: "basemap-land", type: "fill", source: "basemap-land", paint: { "fill-color": LAND } },
        {
          id: "basemap-borders",
          type: "line",
          source: "basemap-borders",
          paint: { "line-color": BORDER, "line-width": 0.6 },
        },
      ],
    };
  }

  /** A style of the viewer's own: the background (the sea) and the basemap, ready for what the map shows. */
  async function emptyStyle() {
    const base = basemapStyle(await basemap);
    return {
      version: 8,
      sources: { ...base.sources },
      layers: [{ id: "background", type: "background", paint: { "background-color": "#eef1f4" } }, ...base.layers],
    };
  }

  /** The basemap put under a style the service brought (its vector tiles' own), above that style's background. */
  async function underStyle(map) {
    const base = basemapStyle(await basemap);
    const layers = map.getStyle().layers || [];
    const above = layers.find((l) => l.type !== "background");
    for (const [id, source] of Object.entries(base.sources)) map.addSource(id, source);
    for (const layer of base.layers) map.addLayer(layer, above ? above.id : undefined);
  }

  function newMap(style, bounds) {
    drawing = true;
    maplibregl.setWorkerUrl(config.workerUrl);
    const map = new maplibregl.Map({
      container: "map",
      style,
      bounds: clamp(bounds || WORLD),
      fitBoundsOptions: { padding: 20 },
      attributionControl: false,
      // The view is kept in the address (#zoom/latitude/longitude): a reload or a shared link shows the same place.
      hash: true,
    });
    map.addControl(new maplibregl.NavigationControl({ showCompass: false }));
    map.on("error", (e) => {
      const err = e && e.error;
      // A tile the cache does not hold is a gap in the map, not a failure.
      if (err && err.status === 404 && /\/tile\//.test(err.url || "")) return;
      fail(`The map could not read part of the service: ${(err && err.message) || "unknown error"}`);
    });
    return map;
  }

  /** Marks the map drawn once it is idle after `ready` resolved (content asked for and answered). */
  function drawnWhenIdle(map, text) {
    map.once("idle", () => {
      if (body.dataset.viewer === "failed") return;
      say(text, false);
      body.dataset.viewer = "drawn";
    });
    map.triggerRepaint();
  }

  async function drawTiles() {
    const service = await getJson(`${config.serviceUrl}?f=json`);
    const bounds = boundsOf(service.fullExtent);
    const t = config.tiles;
    const style = await emptyStyle();
    style.sources.tiles = {
      type: "raster",
      tiles: [`${config.serviceUrl}/tile/{z}/{y}/{x}`],
      tileSize: t.tileSize,
      minzoom: t.minzoom,
      maxzoom: t.maxzoom,
      ...(bounds ? { bounds: clamp(bounds) } : {}),
    };
    style.layers.push({ id: "tiles", type: "raster", source: "tiles" });
    const map = newMap(style, bounds);
    map.once("load", () => drawnWhenIdle(map, "Tiles drawn."));
  }

  async function drawVector() {
    const service = await getJson(`${config.serviceUrl}?f=json`);
    const bounds = boundsOf(service.fullExtent || service.initialExtent);
    // The style as the service answers it (its sources, sprite and glyphs pointing at the service), checked here
    // so that a style that cannot be read is said in words.
    const style = await getJson(`${config.serviceUrl}/resources/styles/root.json`);
    const map = newMap(style, bounds);
    map.once("load", () => {
      underStyle(map)
        .catch(() => undefined)
        .then(() => drawnWhenIdle(map, "Vector tiles drawn with the service's style."));
    });
  }

  async function drawScene() {
    const layer = await getJson(`${config.serviceUrl}/layers/0?f=json`);
    let bounds = boundsOf(layer.fullExtent);
    const e = layer.store && layer.store.extent;
    if (!bounds && Array.isArray(e) && e.length === 4 && /4326$/.test(layer.store.indexCRS || "")) bounds = e;
    if (!bounds) throw new Error("The scene layer states no extent in WGS 84 or Web Mercator to draw.");
    const [w, s, east, n] = bounds;
    const style = await emptyStyle();
    style.sources.footprint = {
      type: "geojson",
      data: {
        type: "Feature",
        properties: { name: layer.name || "", layerType: layer.layerType || "" },
        geometry: {
          type: "Polygon",
          coordinates: [
            [
              [w, s],
              [east, s],
              [east, n],
              [w, n],
              [w, s],
            ],
          ],
        },
      },
    };
    style.layers.push(
      {
        id: "footprint-fill",
        type: "fill",
        source: "footprint",
        paint: { "fill-color": "#e07b00", "fill-opacity": 0.45 },
      },
      { id: "footprint-line", type: "line", source: "footprint", paint: { "line-color": "#8a4a00", "line-width": 2 } },
    );
    const map = newMap(style, bounds);
    map.once("load", () => drawnWhenIdle(map, `Footprint of ${layer.name || "the scene layer"} drawn.`));
  }

  /**
   * A feature's attributes, each named by its field's alias as ArcGIS's popups name them (a column's own name as
   * written in the uploaded file, which may be any text: it is set as text, never as markup). The fields the server
   * keeps for editing (the global id, who made and last edited the feature, and when) are not the feature's own.
   */
  function showAttributes(title, properties, id, info) {
    details.replaceChildren();
    const h = document.createElement("h2");
    h.textContent = title;
    const table = document.createElement("table");
    const aliases = new Map(((info && info.fields) || []).map((f) => [f.name, f.alias]));
    const kept = new Set([info && info.globalIdField, ...Object.values((info && info.editFieldsInfo) || {})]);
    for (const [k, v] of Object.entries(properties)) {
      if (kept.has(k)) continue;
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      const alias = aliases.get(k);
      th.textContent = typeof alias === "string" && alias !== "" ? alias : k;
      if (th.textContent !== k) th.title = k;
      const td = document.createElement("td");
      td.textContent = v === null || v === undefined ? "null" : String(v);
      tr.append(th, td);
      table.append(tr);
    }
    details.append(h, table);
    body.dataset.feature = id === undefined ? "" : String(id);
  }

  const PAINT = {
    fill: { "fill-color": "#0070ff", "fill-opacity": 0.35 },
    line: { "line-color": "#20364f", "line-width": 1.2 },
    circle: {
      "circle-color": "#0070ff",
      "circle-radius": 4,
      "circle-stroke-color": "#ffffff",
      "circle-stroke-width": 1,
    },
  };

  /** What the service holds cannot be drawn (it was read well): said as it is, not as a failure to read. */
  function nothingToDraw(text) {
    const err = new Error(text);
    err.nothingToDraw = true;
    return err;
  }

  /** How far from a click (in pixels) a feature is still the one clicked. */
  const CLICK_TOLERANCE = 4;

  async function drawFeatures() {
    let ids = config.layerIds;
    // What is listed but not drawn: a service's tables, and layers without geometry.
    const notDrawn = [];
    if (!ids) {
      const service = await getJson(`${config.serviceUrl}?f=json`);
      ids = (service.layers || []).map((l) => l.id);
      for (const t of service.tables || []) notDrawn.push(String(t.name));
      if (ids.length === 0) {
        throw nothingToDraw(
          notDrawn.length > 0
            ? `The feature service has tables only (${notDrawn.join(", ")}): they have no geometry to draw on a map.`
            : "The feature service has no layers to draw.",
        );
      }
    }
    const layers = [];
    for (const id of ids) {
      const url = `${config.serviceUrl}/${id}`;
      const info = await getJson(`${url}?f=json`);
      if (!info.geometryType) {
        if (config.layerIds === undefined) notDrawn.push(String(info.name));
        continue;
      }
      const extent = await getJson(`${url}/query?where=1%3D1&returnExtentOnly=true&f=geojson`);
      layers.push({ id, url, info, bbox: Array.isArray(extent.bbox) ? extent.bbox : undefined });
    }
    if (layers.length === 0) throw nothingToDraw("A table has no geometry: there is nothing to draw on a map.");
    const boxes = layers.map((l) => l.bbox).filter(Boolean);
    const bounds = boxes.length
      ? [
          Math.min(...boxes.map((b) => b[0])),
          Math.min(...boxes.map((b) => b[1])),
          Math.max(...boxes.map((b) => b[2])),
          Math.max(...boxes.map((b) => b[3])),
        ]
      : undefined;
    const style = await emptyStyle();
    const clickable = [];
    for (const l of layers) {
      const source = `layer-${l.id}`;
      style.sources[source] = { type: "geojson", data: { type: "FeatureCollection", features: [] } };
      const g = l.info.geometryType;
      const kinds =
        g === "esriGeometryPolygon" ? ["fill", "line"] : g === "esriGeometryPolyline" ? ["line"] : ["circle"];
      for (const kind of kinds) {
        const layerId = `${source}-${kind}`;
        style.layers.push({ id: layerId, type: kind, source, paint: PAINT[kind] });
        clickable.push({ layerId, layer: l });
      }
    }
    const map = newMap(style, bounds);
    let asked = 0;
    async function load() {
      const mine = ++asked;
      const b = map.getBounds();
      // A view across the antimeridian (west of -180° or east of 180°) asks for every longitude.
      const across = b.getWest() < -180 || b.getEast() > 180;
      const [w, s, e, n] = clamp([across ? -180 : b.getWest(), b.getSouth(), across ? 180 : b.getEast(), b.getNorth()]);
      const geometry = JSON.stringify({ xmin: w, ymin: s, xmax: e, ymax: n, spatialReference: { wkid: 4326 } });
      say("Loading features…", false);
      try {
        const notes = [];
        for (const l of layers) {
          const query = new URLSearchParams({
            where: "1=1",
            geometry,
            geometryType: "esriGeometryEnvelope",
            inSR: "4326",
            spatialRel: "esriSpatialRelIntersects",
            outFields: "*",
            returnGeometry: "true",
            f: "geojson",
          });
          const answer = await getJson(`${l.url}/query?${query}`);
          if (mine !== asked) return;
          map.getSource(`layer-${l.id}`).setData(unwrapped(answer));
          const more = answer.properties && answer.properties.exceededTransferLimit;
          notes.push(
            `${l.info.name}: ${answer.features.length} feature${answer.features.length === 1 ? "" : "s"}` +
              (more ? " (the layer's maximum per request: zoom in for the rest)" : ""),
          );
        }
        map.once("idle", () => {
          if (mine !== asked || body.dataset.viewer === "failed") return;
          const tables = notDrawn.length
            ? ` Not drawn (${notDrawn.length === 1 ? "a table" : "tables"}, without geometry): ${notDrawn.join(", ")}.`
            : "";
          say(`${notes.join("; ")}.${tables}`, false);
          body.dataset.viewer = "drawn";
        });
        map.triggerRepaint();
      } catch (err) {
        if (mine === asked) fail(`The layer could not be queried: ${err.message}`);
      }
    }
    map.once("load", () => {
      load();
      map.on("moveend", load);
    });
    map.on("click", (e) => {
      // A few pixels around the click, as a person aims: a line is drawn 1.2 pixels wide.
      const around = [
        [e.point.x - CLICK_TOLERANCE, e.point.y - CLICK_TOLERANCE],
        [e.point.x + CLICK_TOLERANCE, e.point.y + CLICK_TOLERANCE],
      ];
      const hits = map.queryRenderedFeatures(around, { layers: clickable.map((c) => c.layerId) });
      const hit = hits[0];
      if (!hit) {
        details.replaceChildren();
        body.dataset.feature = "";
        return;
      }
      const owner = clickable.find((c) => c.layerId === hit.layer.id);
      showAttributes(
        `${owner ? owner.layer.info.name : "Feature"} ${hit.id ?? ""}`.trim(),
        hit.properties,
        hit.id,
        owner && owner.layer.info,
      );
    });
    for (const c of clickable) {
      map.on("mouseenter", c.layerId, () => (map.getCanvas().style.cursor = "pointer"));
      map.on("mouseleave", c.layerId, () => (map.getCanvas().style.cursor = ""));
    }
  }

  const draw = { tiles: drawTiles, vector: drawVector, scene: drawScene, features: drawFeatures }[config.kind];
  if (typeof maplibregl === "undefined") {
    fail("The map library did not load.");
    return;
  }
  if (!draw) {
    fail("Nothing to draw.");
    return;
  }
  draw().catch((err) => fail(err.nothingToDraw ? err.message : `The service could not be read: ${err.message}`));
})();
