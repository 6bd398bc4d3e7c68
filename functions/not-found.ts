// Every request no declared route matches ($default on API Gateway): the error envelope, not a bare 404 — except
// the short addresses people type, sent where they lead: `/portal` and `/portal/home` to the home page,
// `/<server>` and `/<server>/rest` to that server's REST services directory, `/viewer` to the map viewer's page.
import { noSuchResource } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { hostedServer } from "#shared/stores/servers.ts";
import { VIEWER_PATH } from "#shared/viewer/links.ts";

const PORTAL_HOME = /^\/portal(\/home)?\/?$/;
const SERVER_HOME = /^\/([^/]+)(\/rest)?\/?$/;

export const handler = restHandler({ name: "Not Found" }, async (req) => {
  const path = req.event.rawPath;
  if (req.method === "GET" && PORTAL_HOME.test(path)) return new Redirect("/");
  if (req.method === "GET" && /^\/viewer\/?$/.test(path)) {
    const query = req.event.rawQueryString;
    return new Redirect(`${VIEWER_PATH}${query ? `?${query}` : ""}`);
  }
  const name = req.method === "GET" ? SERVER_HOME.exec(path)?.[1] : undefined;
  const server = name ? await hostedServer(name) : undefined;
  if (server) return new Redirect(`/${encodeURIComponent(server.name)}/rest/services`);
  throw noSuchResource([`Nothing is served at ${req.method} ${path.slice(0, 200)}.`]);
});
