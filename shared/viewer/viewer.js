// The map viewer's script (a browser script, loaded after maplibre-gl's CSP build): reads what to draw from the
// page's `data-config` (shared/viewer/page.ts) and draws it. Every failure is said on the page in words.
// The page states what it reached on <body data-viewer="…">: `drawn` once the map has drawn its content,
// `failed` when it cannot; `data-feature` holds the id of the feature whose attributes are shown.
/* global maplibregl, document */
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

  function emptyStyle() {
    return {
      version: 8,
      sources: {},
      layers: [{ id: "background", type: "background", paint: { "background-color": "#eef1f4" } }],
    };
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
    const style = emptyStyle();
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
    map.once("load", () => drawnWhenIdle(map, "Vector tiles drawn with the service's style."));
  }

  async function drawScene() {
    const layer = await getJson(`${config.serviceUrl}/layers/0?f=json`);
    let bounds = boundsOf(layer.fullExtent);
    const e = layer.store && layer.store.extent;
    if (!bounds && Array.isArray(e) && e.length === 4 && /4326$/.test(layer.store.indexCRS || "")) bounds = e;
    if (!bounds) throw new Error("The scene layer states no extent in WGS 84 or Web Mercator to draw.");
    const [w, s, east, n] = bounds;
    const style = emptyStyle();
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

  function showAttributes(title, properties, id) {
    details.replaceChildren();
    const h = document.createElement("h2");
    h.textContent = title;
    const table = document.createElement("table");
    for (const [k, v] of Object.entries(properties)) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.textContent = k;
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

  async function drawFeatures() {
    let ids = config.layerIds;
    if (!ids) {
      const service = await getJson(`${config.serviceUrl}?f=json`);
      ids = (service.layers || []).map((l) => l.id);
      if (ids.length === 0) throw new Error("The feature service has no layers to draw.");
    }
    const layers = [];
    for (const id of ids) {
      const url = `${config.serviceUrl}/${id}`;
      const info = await getJson(`${url}?f=json`);
      if (!info.geometryType) continue;
      const extent = await getJson(`${url}/query?where=1%3D1&returnExtentOnly=true&f=geojson`);
      layers.push({ id, url, info, bbox: Array.isArray(extent.bbox) ? extent.bbox : undefined });
    }
    if (layers.length === 0) throw new Error("A table has no geometry: there is nothing to draw on a map.");
    const boxes = layers.map((l) => l.bbox).filter(Boolean);
    const bounds = boxes.length
      ? [
          Math.min(...boxes.map((b) => b[0])),
          Math.min(...boxes.map((b) => b[1])),
          Math.max(...boxes.map((b) => b[2])),
          Math.max(...boxes.map((b) => b[3])),
        ]
      : undefined;
    const style = emptyStyle();
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
      const [w, s, e, n] = clamp([b.getWest(), b.getSouth(), b.getEast(), b.getNorth()]);
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
          map.getSource(`layer-${l.id}`).setData(answer);
          const more = answer.properties && answer.properties.exceededTransferLimit;
          notes.push(
            `${l.info.name}: ${answer.features.length} feature${answer.features.length === 1 ? "" : "s"}` +
              (more ? " (the layer's maximum per request: zoom in for the rest)" : ""),
          );
        }
        map.once("idle", () => {
          if (mine !== asked || body.dataset.viewer === "failed") return;
          say(`${notes.join("; ")}.`, false);
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
      const hits = map.queryRenderedFeatures(e.point, { layers: clickable.map((c) => c.layerId) });
      const hit = hits[0];
      if (!hit) {
        details.replaceChildren();
        body.dataset.feature = "";
        return;
      }
      const owner = clickable.find((c) => c.layerId === hit.layer.id);
      showAttributes(`${owner ? owner.layer.info.name : "Feature"} ${hit.id ?? ""}`.trim(), hit.properties, hit.id);
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
  draw().catch((err) => fail(`The service could not be read: ${err.message}`));
})();
