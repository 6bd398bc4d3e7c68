// Defines (and edits) a hosted feature service with the real @esri/arcgis-rest-feature-service client, signed in with
// ArcGISIdentityManager at the portal: createFeatureService, then addToServiceDefinition at the admin wire (for which
// the session exchanges its portal token for a server-token by itself), then reads it back. Prints each answer (or
// error) as JSON, and the server-tokens the session got. Input on stdin: {portal, username, password, calls}; an
// empty username calls anonymously (no session, no token).
import {
  addFeatures,
  addToServiceDefinition,
  applyEdits,
  deleteFeatures,
  updateFeatures,
  createFeatureService,
  getLayer,
  getService,
  getViewSources,
  queryFeatures,
  updateServiceDefinition,
} from "@esri/arcgis-rest-feature-service";
import { request } from "@esri/arcgis-rest-request";
import { runCalls, signedInOrAnonymous, type Call } from "./signed-in.ts";

const { input, session } = await signedInOrAnonymous<{ calls: Call[] }>();
// REST JS takes `authentication: undefined` as none.
const authentication = session as NonNullable<typeof session>;

const CALLS: Record<string, (o: Record<string, unknown>) => Promise<unknown>> = {
  createFeatureService: (o) =>
    createFeatureService({
      item: o.item as never,
      ...(o.folderId ? { folderId: String(o.folderId) } : {}),
      // A view: `isView` beside createParameters, as ArcGIS's own clients send it.
      ...(o.params ? { params: o.params as never } : {}),
      authentication,
    }),
  addToServiceDefinition: (o) =>
    addToServiceDefinition(String(o.url), {
      layers: o.layers as never,
      tables: o.tables as never,
      authentication,
    }),
  updateServiceDefinition: (o) =>
    updateServiceDefinition(String(o.url), { updateDefinition: o.updateDefinition as never, authentication }),
  // Editing a layer, as field apps call it (the layer's URL, its features or ids, rollbackOnFailure and the rest).
  applyEdits: (o) => applyEdits({ url: String(o.url), ...(o.params as object), authentication }),
  addFeatures: (o) => addFeatures({ url: String(o.url), ...(o.params as object), authentication } as never),
  updateFeatures: (o) => updateFeatures({ url: String(o.url), ...(o.params as object), authentication } as never),
  deleteFeatures: (o) => deleteFeatures({ url: String(o.url), ...(o.params as object), authentication } as never),
  getViewSources: (o) => getViewSources(String(o.url), authentication),
  getService: (o) => getService({ url: String(o.url), authentication }),
  getLayer: (o) => getLayer({ url: String(o.url), authentication }),
  queryFeatures: (o) => queryFeatures({ url: String(o.url), ...(o.params as object), authentication }),
  // Any call at all, with the session (its token chosen by the URL, as the library does).
  request: (o) => request(String(o.url), { params: o.params as never, authentication }),
  // The token the session sends to a URL: a server-token for a federated server's URL.
  tokenFor: (o) => (session ? session.getToken(String(o.url)) : Promise.resolve(null)),
};

const results = await runCalls(input.calls, CALLS);
if (session)
  results.push({
    portalToken: session.token,
    federatedServers: Object.keys((session as unknown as { federatedServers: object }).federatedServers),
  });
process.stdout.write(`${JSON.stringify(results)}\n`);
