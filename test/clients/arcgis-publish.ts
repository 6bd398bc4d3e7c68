// The publishing path with the real ArcGIS REST JS client (`request()`), as a GIS user would script it:
// sign in, describe the data store, publish a scene service from a described path, publish one layer per
// dataset, and list the layers. Prints what it saw as JSON. Needs NODE_EXTRA_CA_CERTS.
import { ArcGISIdentityManager, request } from "@esri/arcgis-rest-request";

const [portal, username, password, datastoreId, serverId, folder] = process.argv.slice(2) as string[] as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const session = await ArcGISIdentityManager.signIn({ username, password, portal });
const base = `${portal}/portals/self`;
type Body = Record<string, unknown>;
const describeError = (err: unknown) => ({
  error: { name: (err as Error).name, code: (err as { code?: unknown }).code, message: (err as Error).message },
});

async function poll(started: Body): Promise<{ final: Body; polls: number }> {
  for (let polls = 1; polls <= 100; polls++) {
    const job = (await request(`${base}/jobs/${started.jobId}`, {
      authentication: session,
      httpMethod: "GET",
      params: { key: started.key },
    })) as Body;
    if (job.status !== "processing") return { final: job, polls };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("job still processing after 100 polls");
}

const out: Record<string, unknown> = {};
try {
  const describe = (await request(`${base}/datastores/describe`, {
    authentication: session,
    params: { datastoreId, serverId, path: "/caches/scene", type: "folder" },
  })) as Body;
  out.describeStarted = describe;
  out.describe = (await poll(describe)).final;
  const children = ((out.describe as Body).result as { children: { path: string; type: string }[] }).children;
  const scene = children.find((c) => c.type === "sceneLayerCache");
  const publish = (await request(`${base}/datastores/publish`, {
    authentication: session,
    params: {
      serviceConfiguration: {
        type: "SceneServer",
        serviceName: "Buildings_From_Client",
        properties: { cacheStoreId: datastoreId, pathInCachedStore: scene?.path },
      },
      serverId,
      serverFolder: folder,
      tags: ["3d", "buildings"],
      description: "Published by the ArcGIS client",
    },
  })) as Body;
  out.publishStarted = publish;
  out.publish = (await poll(publish)).final;
  const layers = (await request(`${base}/datastores/allDatasets/publishLayers`, {
    authentication: session,
    params: { datastoreId, serverId, serverFolder: folder },
  })) as Body;
  out.publishLayers = (await poll(layers)).final;
  out.getLayers = await request(`${base}/datastores/getLayers`, {
    authentication: session,
    httpMethod: "GET",
    params: { datastoreId },
  });
  out.getLayersAll = await request(`${base}/datastores/allDatasets/getLayers`, {
    authentication: session,
    params: { datastoreId },
  });
} catch (err) {
  out.failure = describeError(err);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
