// GET|POST …/portals/<self | id>/datastores/getLayers (and …/allDatasets/getLayers): every layer published
// from a data store with its source dataset. The data store's owner or an administrator only, and only the
// layers whose items they may see. Read with paged
// Queries; `start`/`num` page the answer (adding `nextStart`) without changing its default shape.
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest, forbidden } from "#shared/http/errors.ts";
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { dataStoreOf } from "#shared/publishing.ts";
import { forEachPairPage, type LayerPair } from "#shared/stores/layers.ts";

const FAILED = "Unable to get layers.";
/** Lambda answers at most 6 MB; leave room for the envelope and headers. */
const MAX_ANSWER_BYTES = 5 * 1024 * 1024;

function count(raw: string | undefined, name: string, min: number, problems: string[]): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) problems.push(`'${name}' must be a whole number, at least ${min}.`);
  return n;
}

export const handler = restHandler({ name: "Get Layers" }, async (req) => {
  const { user, portal } = requireMember(req);
  const contents = await dataStoreOf(portal.portalId, req.params.get("datastoreId"), FAILED);
  if (contents.store.owner !== user.username && user.role !== "org_admin") throw forbidden();
  const problems: string[] = [];
  const start = count(req.params.get("start"), "start", 1, problems) ?? 1;
  const num = count(req.params.get("num"), "num", 1, problems);
  if (num !== undefined && num > 10_000) problems.push("'num' may be at most 10000.");
  if (problems.length > 0) throw badRequest(FAILED, problems);

  const layerAndDatasets: LayerPair[] = [];
  let seen = 0;
  let bytes = 0;
  let more = false;
  await forEachPairPage(contents.store.datastoreId, (pairs) => {
    for (const pair of pairs) {
      // A layer whose item the caller may not see is not listed (its item's access, copied onto the pair).
      if (pair.access && !visibleTo(req.identity, pair.access)) continue;
      seen++;
      if (seen < start) continue;
      if (num !== undefined && layerAndDatasets.length >= num) {
        more = true;
        return false;
      }
      bytes += Buffer.byteLength(JSON.stringify(pair));
      if (bytes > MAX_ANSWER_BYTES) {
        throw new ApiError(400, FAILED, [
          "The answer would exceed the 5 MB a response may hold: page it with 'start' and 'num'.",
        ]);
      }
      layerAndDatasets.push({
        layer: pair.layer,
        dataset: {
          name: pair.dataset.name,
          displayName: pair.dataset.displayName,
          type: pair.dataset.type,
          datastoreId: pair.dataset.datastoreId,
          path: pair.dataset.path,
        },
      });
    }
    return true;
  });
  if (num === undefined) return { layerAndDatasets };
  return { layerAndDatasets, nextStart: more ? start + layerAndDatasets.length : -1 };
});
