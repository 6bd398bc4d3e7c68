// GET|POST …/portals/<self | id>/datastores/getLayers (and …/allDatasets/getLayers): every layer published
// from a data store with its source dataset. The data store's owner or an administrator only, and only the
// layers whose items they may see. `start`/`num` page the answer (adding `nextStart`) without changing its
// default shape; positions count the pairs the caller sees.
//
// A page costs that page, not everything before it: each page the server hands out remembers (per data store,
// client token and `nextStart`) the key it ended with, and the request for that `nextStart` resumes right after
// that key. So pairs added or deleted between pages never make a client see a pair twice or miss one that
// existed throughout, as counting positions again would. A `start` never handed out is counted to, reading
// only keys and access. Memory holds one DynamoDB page and the answer, never the data store.
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { escapeHtml, page, renderValue } from "#shared/http/html.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { readPaging } from "#shared/paging.ts";
import { viewLink } from "#shared/viewer-links.ts";
import { usableDataStore } from "#shared/publishing.ts";
import {
  type LayerPair,
  nthPairPath,
  type PairAccess,
  pageStart,
  readPairs,
  rememberPageEnd,
} from "#shared/stores/layers.ts";

const FAILED = "Unable to get layers.";
/** Lambda answers at most 6 MB; leave room for the envelope and headers. */
const MAX_ANSWER_BYTES = 5 * 1024 * 1024;

/** The layers as the JSON answers them, after a list linking each to its map. */
function layersPage(data: object): string {
  const pairs = (data as { layerAndDatasets?: LayerPair[] }).layerAndDatasets ?? [];
  const rows = pairs
    .map(
      (p) =>
        `<li>${escapeHtml(p.layer.title)} (${escapeHtml(p.dataset.path)}) · ` +
        `<a href="${escapeHtml(`${p.layer.url}?f=html`)}">Layer</a> · ${viewLink(p.layer.url)}</li>`,
    )
    .join("");
  return page(
    "Get Layers",
    `<h1>Get Layers</h1>${rows ? `<ul>${rows}</ul>` : '<p class="muted">No layers.</p>'}${renderValue(data)}`,
  );
}

/** The data store alone: its datasets (as many as the store holds) are not needed to list its layers. */
export const handler = restHandler({ name: "Get Layers", html: layersPage }, async (req) => {
  const { store, identity } = await usableDataStore(req, FAILED);
  const problems: string[] = [];
  // Without `num` the whole list is answered, unpaged (up to MAX_ANSWER_BYTES).
  const { start, num } = readPaging(
    req.params,
    { maxStart: Infinity, minNum: 1, maxNum: 10_000, defaultNum: undefined, numCapApart: true },
    problems,
  );
  if (problems.length > 0) throw badRequest(FAILED, problems);

  const { datastoreId } = store;
  // A layer whose item the caller may not see is not listed (its item's access, copied onto the pair).
  const visible = (access: PairAccess | undefined) => !access || visibleTo(identity, access);
  const client = identity.claims.id;
  let from: string | undefined;
  if (start > 1) {
    from = (await pageStart(datastoreId, client, start)) ?? (await nthPairPath(datastoreId, start - 1, visible));
    if (from === undefined)
      return num === undefined ? { layerAndDatasets: [] } : { layerAndDatasets: [], nextStart: -1 };
  }

  const layerAndDatasets: LayerPair[] = [];
  let last = "";
  let bytes = 0;
  let more = false;
  // One pair past the page tells whether another follows.
  await readPairs(datastoreId, from, visible, num === undefined ? Infinity : num + 1, (pairs) => {
    for (const { path, pair } of pairs) {
      if (layerAndDatasets.length === num) {
        more = true;
        return;
      }
      const { url } = pair.layer;
      const shown = {
        // A path (pairs kept since layers' URLs are stored as paths) is answered on the caller's origin.
        layer: url.startsWith("/") ? { ...pair.layer, url: `${req.httpsOrigin}${url}` } : pair.layer,
        dataset: {
          name: pair.dataset.name,
          displayName: pair.dataset.displayName,
          type: pair.dataset.type,
          datastoreId: pair.dataset.datastoreId,
          path: pair.dataset.path,
        },
      };
      bytes += Buffer.byteLength(JSON.stringify(shown)) + 1;
      if (bytes > MAX_ANSWER_BYTES) {
        throw new ApiError(400, FAILED, [
          "The answer would exceed the 5 MB a response may hold: page it with 'start' and 'num'.",
        ]);
      }
      layerAndDatasets.push(shown);
      last = path;
    }
  });
  if (num === undefined) return { layerAndDatasets };
  const nextStart = more ? start + layerAndDatasets.length : -1;
  if (more) await rememberPageEnd(datastoreId, client, nextStart, last);
  return { layerAndDatasets, nextStart };
});
