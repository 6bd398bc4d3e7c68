// Where a published service shows, as one caller sees it: the REST directory, the SOAP catalog, the service's JSON,
// a tile, its item and search. The sharing suites compare these for every kind of caller after each change.
import type { RunningEngine } from "./engine.ts";
import { call, jsonCalls } from "./http.ts";

const NS = "http://www.esri.com/schemas/ArcGIS/10.8";

const withToken = (url: string, token?: string) => `${url}${token ? `?token=${encodeURIComponent(token)}` : ""}`;

/** The SOAP catalog's GetServiceDescriptions answer (its XML) for the caller of `token` (none: anonymous). */
export async function soapDescriptions(engine: RunningEngine, token?: string): Promise<string> {
  const answer = await call(withToken(`${engine.ready.https}/arcgis/services`, token), {
    ca: engine.ca,
    body: `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><GetServiceDescriptions xmlns="${NS}"/></soap:Body></soap:Envelope>`,
    headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' },
  });
  return answer.text;
}

/** A published service: its name in the root folder, its item and its URL. */
export interface Surfaced {
  readonly name: string;
  readonly id: string;
  readonly serviceUrl: string;
}

/** What each surface shows the caller of `token`: whether the service (or its item) is there. */
export async function surfaces(
  engine: RunningEngine,
  { name, id, serviceUrl }: Surfaced,
  token?: string,
): Promise<Record<string, boolean>> {
  const { getJson } = jsonCalls(() => engine.ca);
  const rest = `${engine.ready.https}/portal/sharing/rest`;
  const root = await getJson(`${engine.ready.https}/arcgis/rest/services`, token);
  const serviceJson = await getJson(serviceUrl, token);
  const tile = await call(withToken(`${serviceUrl}/tile/0/0/0`, token), { ca: engine.ca });
  const item = await getJson(`${rest}/content/items/${id}`, token);
  const search = await getJson(`${rest}/search?q=id:${id}`, token);
  return {
    directory: ((root.services ?? []) as { name: string }[]).some((s) => s.name === name),
    soap: (await soapDescriptions(engine, token)).includes(`<Name>${name}</Name>`),
    service: serviceJson.serviceItemId === id,
    tile: tile.status === 200 && tile.headers["content-type"] === "image/png",
    item: item.id === id,
    search: search.total === 1,
  };
}
