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

  // The one map of the page, and its layers bottom first (what "Save as web map" writes, in that order): each
  // { cfg, title, prep, visible, opacity, base }, where `prep` is what prepare() made of the layer's service.
  let map;
  const entries = [];
  /** Feature layers' drawn kinds, for a click to find which layer a feature is of. */
  const clickable = [];
  /** The layers of an opened web map that are not drawn, each with why. */
  const unseen = [];
  /** The opened web map's basemap, written again when the map is saved (the portal's default basemap otherwise). */
  let savedBasemap;

  function newMap(style, bounds) {
    drawing = true;
    maplibregl.setWorkerUrl(config.workerUrl);
    map = new maplibregl.Map({
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
    map.on("click", (e) => {
      // A few pixels around the click, as a person aims: a line is drawn 1.2 pixels wide.
      const around = [
        [e.point.x - CLICK_TOLERANCE, e.point.y - CLICK_TOLERANCE],
        [e.point.x + CLICK_TOLERANCE, e.point.y + CLICK_TOLERANCE],
      ];
      const shown = clickable.filter((c) => map.getLayer(c.layerId));
      const hits = shown.length ? map.queryRenderedFeatures(around, { layers: shown.map((c) => c.layerId) }) : [];
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
    return map;
  }

  /** A URL of this site as a web map names it: absolute. */
  const absolute = (path) => new URL(path, document.location.origin).href;

  async function prepareTiles(cfg, p) {
    const service = await getJson(`${cfg.serviceUrl}?f=json`);
    const bounds = boundsOf(service.fullExtent);
    const t = cfg.tiles;
    return {
      bounds,
      sources: {
        [`${p}tiles`]: {
          type: "raster",
          tiles: [`${cfg.serviceUrl}/tile/{z}/{y}/{x}`],
          tileSize: t.tileSize,
          minzoom: t.minzoom,
          maxzoom: t.maxzoom,
          ...(bounds ? { bounds: clamp(bounds) } : {}),
        },
      },
      layers: [{ id: `${p}tiles`, type: "raster", source: `${p}tiles` }],
      note: () => "Tiles drawn.",
      webmap: () => [{ layerType: "ArcGISTiledMapServiceLayer", url: absolute(cfg.serviceUrl) }],
    };
  }

  async function prepareVector(cfg, p) {
    const service = await getJson(`${cfg.serviceUrl}?f=json`);
    const bounds = boundsOf(service.fullExtent || service.initialExtent);
    // The style as the service answers it (its sources, sprite and glyphs pointing at the service), checked here
    // so that a style that cannot be read is said in words.
    const styleUrl = `${cfg.serviceUrl}/resources/styles/root.json`;
    const style = await getJson(styleUrl);
    const webmap = () => [{ layerType: "VectorTileLayer", styleUrl: absolute(styleUrl) }];
    const note = () => "Vector tiles drawn with the service's style.";
    // Alone, the service's style is the map's; among other layers its sources and layers join the map's style
    // under names of their own (labels only where the map has the style's glyphs and sprite: the first one's).
    if (p === "") {
      const ids = (style.layers || []).filter((l) => l.type !== "background").map((l) => l.id);
      return { bounds, ownStyle: style, sources: {}, layers: [], ids, note, webmap };
    }
    const sources = {};
    for (const [name, source] of Object.entries(style.sources || {})) sources[`${p}${name}`] = source;
    const layers = (style.layers || [])
      .filter((l) => l.type !== "background" && l.type !== "symbol")
      .map((l) => ({ ...l, id: `${p}${l.id}`, source: `${p}${l.source}` }));
    return { bounds, sources, layers, note, webmap };
  }

  async function prepareScene(cfg, p) {
    const layer = await getJson(`${cfg.serviceUrl}/layers/0?f=json`);
    let bounds = boundsOf(layer.fullExtent);
    const e = layer.store && layer.store.extent;
    if (!bounds && Array.isArray(e) && e.length === 4 && /4326$/.test(layer.store.indexCRS || "")) bounds = e;
    if (!bounds) throw new Error("The scene layer states no extent in WGS 84 or Web Mercator to draw.");
    const [w, s, east, n] = bounds;
    const ring = [
      [w, s],
      [east, s],
      [east, n],
      [w, n],
      [w, s],
    ];
    const source = `${p}footprint`;
    return {
      bounds,
      sources: {
        [source]: {
          type: "geojson",
          data: {
            type: "Feature",
            properties: { name: layer.name || "", layerType: layer.layerType || "" },
            geometry: { type: "Polygon", coordinates: [ring] },
          },
        },
      },
      layers: [
        { id: `${source}-fill`, type: "fill", source, paint: { "fill-color": "#e07b00", "fill-opacity": 0.45 } },
        { id: `${source}-line`, type: "line", source, paint: { "line-color": "#8a4a00", "line-width": 2 } },
      ],
      note: () => `Footprint of ${layer.name || "the scene layer"} drawn.`,
      webmap: () => [{ layerType: "ArcGISSceneServiceLayer", url: absolute(`${cfg.serviceUrl}/layers/0`) }],
    };
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

  async function prepareFeatures(cfg, p) {
    let ids = cfg.layerIds;
    // What is listed but not drawn: a service's tables, and layers without geometry.
    const notDrawn = [];
    if (!ids) {
      const service = await getJson(`${cfg.serviceUrl}?f=json`);
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
      const url = `${cfg.serviceUrl}/${id}`;
      const info = await getJson(`${url}?f=json`);
      if (!info.geometryType) {
        if (cfg.layerIds === undefined) notDrawn.push(String(info.name));
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
    const sources = {};
    const styleLayers = [];
    for (const l of layers) {
      const source = `${p}layer-${l.id}`;
      sources[source] = { type: "geojson", data: { type: "FeatureCollection", features: [] } };
      const g = l.info.geometryType;
      const kinds =
        g === "esriGeometryPolygon" ? ["fill", "line"] : g === "esriGeometryPolyline" ? ["line"] : ["circle"];
      for (const kind of kinds) {
        const layerId = `${source}-${kind}`;
        styleLayers.push({ id: layerId, type: kind, source, paint: PAINT[kind] });
        clickable.push({ layerId, layer: l });
      }
    }
    let notes = [];
    return {
      bounds,
      sources,
      layers: styleLayers,
      /** Asks each layer for the features in view; false when a newer request overtook this one. */
      async refresh(geometry, current) {
        const made = [];
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
          if (!current()) return false;
          map.getSource(`${p}layer-${l.id}`).setData(unwrapped(answer));
          const more = answer.properties && answer.properties.exceededTransferLimit;
          made.push(
            `${l.info.name}: ${answer.features.length} feature${answer.features.length === 1 ? "" : "s"}` +
              (more ? " (the layer's maximum per request: zoom in for the rest)" : ""),
          );
        }
        notes = made;
        return true;
      },
      note: () => {
        const tables = notDrawn.length
          ? ` Not drawn (${notDrawn.length === 1 ? "a table" : "tables"}, without geometry): ${notDrawn.join(", ")}.`
          : "";
        return `${notes.join("; ")}.${tables}`;
      },
      webmap: () =>
        layers.map((l) => ({ layerType: "ArcGISFeatureLayer", url: absolute(l.url), title: String(l.info.name) })),
    };
  }

  const PREPARE = { tiles: prepareTiles, vector: prepareVector, scene: prepareScene, features: prepareFeatures };

  /** What a layer of the map is made of; throws when its service cannot be read or holds nothing to draw. */
  function prepare(cfg, p) {
    const made = PREPARE[cfg.kind];
    if (!made) throw nothingToDraw("Nothing to draw.");
    return made(cfg, p);
  }

  // Each kind of map layer's opacity paint properties (the layer's own value, if any, is scaled).
  const OPACITY = {
    raster: ["raster-opacity"],
    fill: ["fill-opacity"],
    line: ["line-opacity"],
    circle: ["circle-opacity", "circle-stroke-opacity"],
    symbol: ["icon-opacity", "text-opacity"],
    "fill-extrusion": ["fill-extrusion-opacity"],
  };

  /** The map's style layers of an entry (a service's own style: all but its background). */
  function styleLayersOf(entry) {
    if (entry.prep.ids) return entry.prep.ids.map((id) => map.getLayer(id)).filter(Boolean);
    return entry.prep.layers.map((l) => map.getLayer(l.id)).filter(Boolean);
  }

  /** Shows or hides an entry and sets its opacity, as a web map's `visibility` and `opacity` say. */
  function applyLook(entry) {
    const defined = [...entry.prep.layers, ...((entry.prep.ownStyle && entry.prep.ownStyle.layers) || [])];
    for (const layer of styleLayersOf(entry)) {
      map.setLayoutProperty(layer.id, "visibility", entry.visible ? "visible" : "none");
      const own = defined.find((l) => l.id === layer.id);
      for (const property of OPACITY[layer.type] || []) {
        const base = own && own.paint ? own.paint[property] : undefined;
        if (base !== undefined && typeof base !== "number") continue;
        map.setPaintProperty(layer.id, property, (base === undefined ? 1 : base) * entry.opacity);
      }
    }
  }

  const list = document.getElementById("viewer-layers");
  const unseenNote = document.getElementById("viewer-unseen");

  /** The layer list: each drawn layer with its visibility and opacity, each unseen one with why. */
  function renderList() {
    if (!list) return;
    list.replaceChildren();
    entries.forEach((entry, i) => {
      if (entry.base) return;
      const li = document.createElement("li");
      li.dataset.state = "drawn";
      li.dataset.url = entry.cfg.url;
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = entry.visible;
      box.id = `viewer-layer-${i}`;
      box.addEventListener("change", () => {
        entry.visible = box.checked;
        applyLook(entry);
      });
      const label = document.createElement("label");
      label.htmlFor = box.id;
      label.textContent = entry.title;
      const range = document.createElement("input");
      range.type = "range";
      range.min = "0";
      range.max = "100";
      range.value = String(Math.round(entry.opacity * 100));
      range.setAttribute("aria-label", `Opacity of ${entry.title}`);
      range.addEventListener("change", () => {
        entry.opacity = Number(range.value) / 100;
        applyLook(entry);
      });
      li.append(box, label, range);
      list.append(li);
    });
    for (const u of unseen) {
      const li = document.createElement("li");
      li.dataset.state = "not-drawn";
      li.textContent = `${u.title}: not drawn (${u.why})`;
      list.append(li);
    }
    if (unseenNote) {
      unseenNote.hidden = unseen.length === 0;
      unseenNote.textContent = unseen.length
        ? `Layers you may not see are not drawn: ${unseen.map((u) => u.title).join(", ")}.`
        : "";
    }
  }

  let asked = 0;
  /** Asks every feature layer for what is in view, then says what the map shows once it is idle. */
  async function refresh() {
    const mine = ++asked;
    const current = () => mine === asked;
    const b = map.getBounds();
    // A view across the antimeridian (west of -180° or east of 180°) asks for every longitude.
    const across = b.getWest() < -180 || b.getEast() > 180;
    const [w, s, e, n] = clamp([across ? -180 : b.getWest(), b.getSouth(), across ? 180 : b.getEast(), b.getNorth()]);
    const geometry = JSON.stringify({ xmin: w, ymin: s, xmax: e, ymax: n, spatialReference: { wkid: 4326 } });
    const loading = entries.filter((x) => x.prep.refresh);
    if (loading.length) say("Loading features…", false);
    try {
      for (const entry of loading) if (!(await entry.prep.refresh(geometry, current))) return;
    } catch (err) {
      if (current()) fail(`The layer could not be queried: ${err.message}`);
      return;
    }
    map.once("idle", () => {
      if (!current() || body.dataset.viewer === "failed") return;
      const shown = entries.filter((x) => !x.base).map((x) => x.prep.note());
      const missing = unseen.length ? ` Not drawn: ${unseen.map((u) => `${u.title} (${u.why})`).join("; ")}.` : "";
      const none = entries.some((x) => !x.base) ? "" : "None of the web map's layers is drawn.";
      say(`${shown.join(" ")}${none}${missing}`.trim(), false);
      body.dataset.layers = String(entries.filter((x) => !x.base).length);
      body.dataset.viewer = "drawn";
    });
    map.triggerRepaint();
  }

  /** Once the map's style is loaded: each entry's look, the layer list, the content in view. */
  function whenLoaded() {
    for (const entry of entries) applyLook(entry);
    renderList();
    refresh();
    map.on("moveend", refresh);
    setUpTools();
  }

  const union = (boxes) =>
    boxes.length
      ? [
          Math.min(...boxes.map((b) => b[0])),
          Math.min(...boxes.map((b) => b[1])),
          Math.max(...boxes.map((b) => b[2])),
          Math.max(...boxes.map((b) => b[3])),
        ]
      : undefined;

  /** One service or layer: its own map (a vector tile service's own style, with the basemap put under it). */
  async function drawOne() {
    const prep = await prepare(config, "");
    const style = prep.ownStyle || (await emptyStyle());
    if (!prep.ownStyle) {
      Object.assign(style.sources, prep.sources);
      style.layers.push(...prep.layers);
    }
    newMap(style, prep.bounds);
    entries.push({ cfg: config, title: config.title, prep, visible: true, opacity: 1, base: false });
    map.once("load", () => {
      (prep.ownStyle ? underStyle(map).catch(() => undefined) : Promise.resolve()).then(whenLoaded);
    });
  }

  /** The viewer's own answer for a service URL: what it draws of it, or why it cannot. */
  const viewerConfig = (url) => getJson(`${document.location.pathname}?f=json&url=${encodeURIComponent(url)}`);

  /** A web map layer's service: its `url`, or a vector tile layer's style's service. */
  function serviceOf(layer) {
    if (typeof layer.url === "string" && layer.url) return layer.url;
    if (typeof layer.styleUrl === "string") return layer.styleUrl.replace(/\/resources\/styles(\/root\.json)?$/, "");
    return undefined;
  }

  /** A web map by its item id: its basemap's and operational layers in order, each as saved; the rest named. */
  async function drawWebmap() {
    const rest = config.portalRest;
    const id = encodeURIComponent(config.webmap);
    const item = await getJson(`${rest}/content/items/${id}?f=json`);
    if (item.type !== "Web Map") throw nothingToDraw(`This item is a ${item.type}, not a web map.`);
    const heading = document.querySelector("h1");
    if (heading) heading.textContent = String(item.title);
    const data = await getJson(`${rest}/content/items/${id}/data?f=json`);
    savedBasemap = data.baseMap;
    const wanted = [
      ...((data.baseMap && data.baseMap.baseMapLayers) || []).map((layer) => ({ layer, base: true })),
      ...(data.operationalLayers || []).map((layer) => ({ layer, base: false })),
    ];
    for (const [i, { layer, base }] of wanted.entries()) {
      const title = String(layer.title || layer.id || `Layer ${i + 1}`);
      const url = serviceOf(layer);
      // A basemap of another site (Esri's, say) is left out: the viewer's own world is drawn under every map.
      const missing = (why) => base || unseen.push({ title, why });
      if (!url) {
        missing("it names no service URL");
        continue;
      }
      try {
        const cfg = await viewerConfig(url);
        if (!cfg.kind) {
          missing(cfg.problem || "it cannot be drawn");
          continue;
        }
        const prep = await prepare(cfg, `l${i}-`);
        const visible = layer.visibility !== false;
        const opacity =
          typeof layer.opacity === "number" && layer.opacity >= 0 && layer.opacity <= 1 ? layer.opacity : 1;
        entries.push({ cfg, title, prep, visible, opacity, base });
      } catch (err) {
        missing(err.message);
      }
    }
    const style = await emptyStyle();
    for (const entry of entries) {
      Object.assign(style.sources, entry.prep.sources);
      style.layers.push(...entry.prep.layers);
    }
    newMap(
      style,
      union(
        entries
          .filter((x) => !x.base)
          .map((x) => x.prep.bounds)
          .filter(Boolean),
      ),
    );
    map.once("load", whenLoaded);
  }

  /** "Add layer" and "Save as web map", once the map is there. */
  function setUpTools() {
    const add = document.getElementById("viewer-add");
    if (add && !add.dataset.ready) {
      add.dataset.ready = "true";
      const note = document.createElement("p");
      note.id = "viewer-add-status";
      note.setAttribute("role", "status");
      add.after(note);
      add.addEventListener("submit", (e) => {
        e.preventDefault();
        addLayer(add.elements.url.value.trim(), note).catch((err) => {
          note.textContent = `The layer could not be added: ${err.message}`;
          note.className = "error";
        });
      });
    }
    const save = document.getElementById("viewer-save");
    if (save && !save.dataset.ready) {
      save.dataset.ready = "true";
      loadFolders(save.elements.folder);
      save.addEventListener("submit", (e) => {
        e.preventDefault();
        saveMap(save).catch((err) => saved(`The map was not saved: ${err.message}`, true));
      });
    }
  }

  let added = 0;
  async function addLayer(url, note) {
    note.className = "muted";
    if (!url) {
      note.textContent = "Give the URL of a service or layer of this site.";
      return;
    }
    note.textContent = "Adding the layer…";
    const cfg = await viewerConfig(url);
    if (!cfg.kind) throw new Error(cfg.problem || "it cannot be drawn");
    if (entries.some((x) => x.cfg.url === cfg.url)) {
      note.textContent = `${cfg.title} is already in the map.`;
      return;
    }
    const prep = await prepare(cfg, `a${++added}-`);
    for (const [name, source] of Object.entries(prep.sources)) map.addSource(name, source);
    for (const layer of prep.layers) map.addLayer(layer);
    const entry = { cfg, title: cfg.title, prep, visible: true, opacity: 1, base: false };
    entries.push(entry);
    applyLook(entry);
    renderList();
    note.textContent = `${cfg.title} added.`;
    await refresh();
  }

  async function loadFolders(select) {
    try {
      const content = await getJson(
        `${config.portalRest}/content/users/${encodeURIComponent(config.username)}?f=json&num=1`,
      );
      for (const f of content.folders || []) {
        const option = document.createElement("option");
        option.value = String(f.id);
        option.textContent = String(f.title);
        select.append(option);
      }
    } catch {
      // Without the list the map is saved at the root of the member's content, which the form offers still.
    }
  }

  const savedBox = document.getElementById("viewer-saved");
  function saved(text, isError, links = []) {
    if (!savedBox) return;
    const p = document.createElement("p");
    p.className = isError ? "error" : "";
    p.setAttribute("role", isError ? "alert" : "status");
    p.textContent = text;
    for (const [href, label] of links) {
      const a = document.createElement("a");
      a.href = href;
      a.textContent = label;
      p.append(" ", a);
    }
    savedBox.replaceChildren(p);
  }

  /** The map as the Web Map specification writes it: operational layers bottom first, as each is seen now. */
  async function webmapJson() {
    let baseMap = savedBasemap;
    if (!baseMap) {
      const self = await getJson(`${config.portalRest}/portals/self?f=json`).catch(() => ({}));
      baseMap = self.defaultBasemap || { title: "World", baseMapLayers: [] };
    }
    let n = 0;
    const operationalLayers = entries
      .filter((x) => !x.base)
      .flatMap((entry) => {
        // A feature service is written a layer each, named by its layer's name (as ArcGIS's apps name them).
        return entry.prep.webmap().map((layer) => ({
          ...layer,
          id: `mapgate-layer-${++n}`,
          title: layer.title || entry.title,
          visibility: entry.visible,
          opacity: entry.opacity,
        }));
      });
    return {
      operationalLayers,
      baseMap,
      spatialReference: { wkid: 102100, latestWkid: 3857 },
      authoringApp: "mapgate viewer",
      authoringAppVersion: "1",
      version: "2.31",
    };
  }

  async function saveMap(form) {
    const title = form.elements.title.value.trim();
    if (!title) {
      saved("Give the map a title.", true);
      return;
    }
    saved("Saving…", false);
    const params = new URLSearchParams({ f: "json", type: "Web Map", title, csrf: form.elements.csrf.value });
    // Only what was given: an empty tags field would clear nothing, and is not sent.
    const tags = form.elements.tags.value
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    if (tags.length) params.set("tags", tags.join(","));
    params.set("typeKeywords", "Web Map,Map,Online Map");
    params.set("text", JSON.stringify(await webmapJson()));
    const folder = form.elements.folder.value;
    const owner = encodeURIComponent(config.username);
    const url = `${config.portalRest}/content/users/${owner}${folder ? `/${encodeURIComponent(folder)}` : ""}/addItem`;
    let response;
    try {
      response = await fetch(url, { method: "POST", body: params, credentials: "same-origin" });
    } catch {
      throw new Error("mapgate could not be reached.");
    }
    const answer = await response.json().catch(() => ({ error: { message: `HTTP ${response.status}` } }));
    if (answer.error) {
      const more = Array.isArray(answer.error.details) ? answer.error.details : [];
      throw new Error([answer.error.message, ...more].join(" "));
    }
    const id = String(answer.id);
    body.dataset.saved = id;
    saved(`Saved as the web map “${title}”.`, false, [
      [`${config.portalRest}/content/items/${encodeURIComponent(id)}?f=html`, "Its item"],
      [`${document.location.pathname}?webmap=${encodeURIComponent(id)}`, "Open it"],
    ]);
  }

  if (typeof maplibregl === "undefined") {
    fail("The map library did not load.");
    return;
  }
  const start = config.kind === "webmap" ? drawWebmap : drawOne;
  start().catch((err) =>
    fail(
      err.nothingToDraw
        ? err.message
        : config.kind === "webmap"
          ? `The web map could not be read: ${err.message}`
          : `The service could not be read: ${err.message}`,
    ),
  );
})();
