// GET|POST /<server>/rest/services[/<folder>]: the REST services directory of a hosted server — the same
// catalog and the same visibility as the SOAP catalog (shared/catalog.ts), as ArcGIS answers it.
import { catalogPrefetch, requestCatalog, findFolder, viewerKey, visibleTo } from "#shared/catalog.ts";
import { ApiError } from "#shared/errors.ts";
import { escapeHtml, page } from "#shared/http/html.ts";
import { VIEWABLE_TYPES, viewLink } from "#shared/viewer-links.ts";
import { addressedServer } from "#shared/http/hosted-server.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { Rendered } from "#shared/http/render.ts";
import { SERVER_REST_VERSION } from "#shared/urls.ts";

interface Directory {
  readonly currentVersion: number;
  readonly folders: readonly string[];
  readonly services: readonly { readonly name: string; readonly type: string }[];
}

const folderNotFound = (folder: string) =>
  new ApiError(404, "Folder not found.", [`Folder '${folder.slice(0, 120)}' does not exist.`]);

function render(data: object, req: RestRequest): string {
  const d = data as Directory;
  const here = req.path.replace(/\/+$/, "");
  const folder = req.pathParameters.folder;
  const root = folder === undefined ? here : here.slice(0, here.lastIndexOf("/"));
  const link = (href: string, text: string) => `<li><a href="${escapeHtml(href)}">${escapeHtml(text)}</a></li>`;
  const folders = d.folders.map((f) => link(`${root}/${encodeURIComponent(f)}?f=html`, f)).join("");
  const services = d.services
    .map((s) => {
      const url = `${root}/${s.name.split("/").map(encodeURIComponent).join("/")}/${s.type}`;
      const entry = link(`${url}?f=html`, `${s.name} (${s.type})`);
      return VIEWABLE_TYPES.has(s.type) ? entry.replace(/<\/li>$/, ` · ${viewLink(url)}</li>`) : entry;
    })
    .join("");
  const title = folder === undefined ? "Folder: /" : `Folder: ${folder}`;
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1><p class="muted">Current version: ${d.currentVersion}</p>` +
      (folder === undefined ? "" : `<p><a href="${escapeHtml(root)}?f=html">Home</a></p>`) +
      (folders ? `<h2>Folders</h2><ul>${folders}</ul>` : "") +
      `<h2>Services</h2>${services ? `<ul>${services}</ul>` : "<p>None you can see.</p>"}`,
  );
}

// Listings per server, catalog version, viewer and folder, as the SOAP catalog keeps its answers: a member of
// hundreds of groups is matched against the catalog once per version, not on every request. The viewer's key
// carries their groups, so joining or leaving one is never answered from here. Bounded; older versions age out.
const listings = new Map<string, Rendered>();

export const handler = restHandler(
  { name: "Services Directory", at: addressedServer, html: render, openCors: true, prefetch: catalogPrefetch },
  async (req) => {
    const server = req.server;
    if (!server) throw new Error("server route without a server");
    const catalog = await requestCatalog(req);
    const asked = req.pathParameters.folder;
    const folder = asked === undefined ? "" : findFolder(catalog, asked);
    if (folder === undefined) throw folderNotFound(asked ?? "");
    const key = [server.serverId, catalog.version, viewerKey(req.identity), folder].join("\u0000");
    let answer = listings.get(key);
    if (!answer) {
      const services: { name: string; type: string }[] = [];
      for (const s of catalog.services) {
        if (s.folder !== folder || !visibleTo(req.identity, s)) continue;
        const name = folder ? `${folder}/${s.name}` : s.name;
        services.push({ name, type: s.type });
        for (const x of s.extensions) services.push({ name, type: x.type });
      }
      const directory: Directory = {
        currentVersion: SERVER_REST_VERSION,
        folders: folder === "" ? [...catalog.folders] : [],
        services,
      };
      // Kept with its JSON text: a repeated listing is not serialised again either.
      answer = new Rendered(directory);
      if (listings.size >= 256) listings.delete(listings.keys().next().value as string);
      listings.set(key, answer);
    }
    return answer;
  },
);
