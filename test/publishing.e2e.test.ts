// Data stores, publishing jobs and getLayers through the real local engine over HTTPS: the ArcGIS client
// for the whole path, then key rules, validation, concurrency, failures and crashes, and large layer lists.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { adminCommand, demoOrganization, registerFolderStore } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { runningStore, withStoppedStore } from "./helpers/store.ts";
import { call, form } from "./helpers/http.ts";
import { runJson } from "./helpers/run.ts";

let engine: RunningEngine;
let datastoreId: string;
let serverId: string;
let portalId: string;
const tokens: Record<string, string> = {};
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const NS = "http://www.esri.com/schemas/ArcGIS/10.8";

const admin = (...args: string[]) => adminCommand(engine.dataDir, args, { MAPGATE_USER_PASSWORD: "other-user-pass-1" });

async function signIn(username: string, password: string) {
  const res = await call(`${rest()}/generateToken`, { ca: engine.ca, body: form({ f: "json", username, password }) });
  return res.json<{ token: string }>().token;
}

const post = (path: string, who: string, fields: Record<string, string>) =>
  call(`${rest()}/portals/self${path}`, {
    ca: engine.ca,
    body: form({ f: "json", token: tokens[who] ?? who, ...fields }),
  }).then((r) => r.json());
const get = (path: string, who: string, query = "") =>
  call(`${rest()}/portals/self${path}?f=json&token=${tokens[who] ?? who}${query}`, { ca: engine.ca }).then((r) =>
    r.json(),
  );

async function waitFor(jobId: string, key: string, who = "publisher", polls = 200): Promise<Record<string, unknown>> {
  for (let i = 0; i < polls; i++) {
    const job = await get(`/jobs/${jobId}`, who, `&key=${encodeURIComponent(key)}`);
    if (job.status !== "processing") return job;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`job ${jobId} still processing`);
}

const sceneConfig = (serviceName: string, path = "/caches/scene/Buildings3D", store = datastoreId) =>
  JSON.stringify({ type: "SceneServer", serviceName, properties: { cacheStoreId: store, pathInCachedStore: path } });

async function catalog(folder: string): Promise<string> {
  const body = `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><t:GetServiceDescriptionsEx xmlns:t="${NS}"><FolderName>${folder}</FolderName></t:GetServiceDescriptionsEx></s:Body></s:Envelope>`;
  const res = await call(`${engine.ready.https}/arcgis/services?token=${tokens.admin}`, {
    ca: engine.ca,
    body,
    headers: { "content-type": "text/xml" },
  });
  return res.text;
}

async function start(): Promise<void> {
  engine = await startEngine({ dataDir: engine?.dataDir });
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
}

beforeAll(async () => {
  await start();
  ({ portalId, serverId, folderStore: datastoreId } = demoOrganization(engine.dataDir));
});
afterAll(async () => {
  await engine?.stop();
});

describe("the whole path with the ArcGIS client", () => {
  it("describes, publishes a scene service into a folder, publishes layers and lists them; the service reaches the SOAP catalog", async () => {
    const out = await runJson(
      process.execPath,
      [
        join(ROOT, "test/clients/arcgis-publish.ts"),
        rest(),
        "publisher",
        PASSWORDS.publisher,
        datastoreId,
        serverId,
        "Scenes",
      ],
      { NODE_EXTRA_CA_CERTS: engine.ready.cert },
    );
    expect(out.failure).toBeUndefined();
    expect(out.describeStarted).toMatchObject({
      jobId: expect.stringMatching(/^[0-9a-f]{32}$/),
      key: expect.any(String),
      success: true,
    });
    expect(out.describe).toMatchObject({
      definition: { operation: "describe", datastoreId, serverId, path: "/caches/scene", type: "folder" },
      status: "completed",
      messages: [],
      result: {
        datastore: { name: "scene", type: "folder", path: "/caches/scene", datastoreId },
        children: [
          {
            name: "Buildings3D",
            displayName: "Buildings3D",
            type: "sceneLayerCache",
            datastoreId,
            path: "/caches/scene/Buildings3D",
          },
        ],
      },
    });
    const publish = out.publish as {
      status: string;
      result: { services: { serviceItemId: string; type: string; serviceUrl: string }[] };
    };
    expect(publish.status).toBe("completed");
    expect(publish.result.services).toEqual([
      {
        serviceItemId: expect.stringMatching(/^[0-9a-f]{32}$/),
        type: "Scene Service",
        serviceUrl: `${engine.ready.https}/arcgis/rest/services/Scenes/Buildings_From_Client/SceneServer`,
      },
    ]);
    const soap = await catalog("Scenes");
    expect(soap).toContain("<Name>Scenes/Buildings_From_Client</Name><Type>SceneServer</Type>");
    expect(soap).toContain("<Description>Published by the ArcGIS client</Description>");
    expect(out.publishLayers).toMatchObject({
      status: "completed",
      result: { datastoreId, published: 3, alreadyPublished: 0 },
    });
    const pairs = (
      out.getLayers as { layerAndDatasets: { layer: Record<string, unknown>; dataset: Record<string, unknown> }[] }
    ).layerAndDatasets;
    expect(pairs.map((p) => p.dataset.path).sort()).toEqual(
      ["attribution", "countries", "places"].map((t) => `${DEMO_GEOPACKAGE_PATH}/${t}`),
    );
    for (const p of pairs) {
      expect(Object.keys(p.layer).sort()).toEqual(["created", "id", "modified", "title", "type", "url"]);
      expect(p.layer).toMatchObject({
        type: "Feature Service",
        created: expect.any(Number),
        modified: expect.any(Number),
      });
      expect(String(p.layer.url)).toMatch(
        new RegExp(`^${engine.ready.https}/arcgis/rest/services/Scenes/\\w+/FeatureServer$`),
      );
      expect(Object.keys(p.dataset).sort()).toEqual(["datastoreId", "displayName", "name", "path", "type"]);
      expect(["table", "featureClass", "relationshipClass"]).toContain(p.dataset.type);
      expect(p.dataset.datastoreId).toBe(datastoreId);
    }
    expect(out.getLayersAll).toEqual(out.getLayers);
  });

  it("refuses a plain user every operation", async () => {
    const forbidden = { error: { code: 403, messageCode: "GWM_0003" } };
    expect(await post("/datastores/describe", "user", { datastoreId, serverId })).toMatchObject(forbidden);
    expect(
      await post("/datastores/publish", "user", { serverId, serviceConfiguration: sceneConfig("Nope") }),
    ).toMatchObject(forbidden);
    expect(await post("/datastores/allDatasets/publishLayers", "user", { datastoreId, serverId })).toMatchObject(
      forbidden,
    );
    expect(await get("/datastores/getLayers", "user", `&datastoreId=${datastoreId}`)).toMatchObject(forbidden);
  });

  it("publishes again only what is new: a second publishLayers duplicates nothing", async () => {
    const again = await post("/datastores/allDatasets/publishLayers", "publisher", {
      datastoreId,
      serverId,
      serverFolder: "Scenes",
    });
    const job = await waitFor(String(again.jobId), String(again.key));
    expect(job).toMatchObject({ status: "completed", result: { published: 0, alreadyPublished: 3 } });
    const layers = await get("/datastores/getLayers", "publisher", `&datastoreId=${datastoreId}`);
    expect((layers.layerAndDatasets as unknown[]).length).toBe(3);
  });
});

describe("job keys", () => {
  it("lets administrators read without a key and anyone else only with the job's own key, revealing nothing otherwise", async () => {
    const a = await post("/datastores/describe", "publisher", { datastoreId, serverId });
    const b = await post("/datastores/describe", "publisher", { datastoreId, serverId });
    await waitFor(String(a.jobId), String(a.key));
    expect(await get(`/jobs/${a.jobId}`, "admin")).toMatchObject({ id: a.jobId, status: "completed" });
    expect(await get(`/jobs/${a.jobId}`, "publisher", `&key=${a.key}`)).toMatchObject({ id: a.jobId });
    const hidden = {
      error: { code: 400, messageCode: "CONT_0001", message: "Item does not exist or is inaccessible.", details: [] },
    };
    expect(await get(`/jobs/${a.jobId}`, "publisher")).toEqual(hidden);
    expect(await get(`/jobs/${a.jobId}`, "publisher", `&key=${b.key}`)).toEqual(hidden);
    expect(await get(`/jobs/${a.jobId}`, "user", `&key=wrong`)).toEqual(hidden);
    expect(await get(`/jobs/${"0".repeat(32)}`, "publisher", `&key=${a.key}`)).toEqual(hidden);
    expect(await get(`/jobs/${"0".repeat(32)}`, "admin")).toEqual(hidden);
    expect(
      (await call(`${rest()}/portals/self/jobs/${a.jobId}?f=json&key=${a.key}`, { ca: engine.ca })).json(),
    ).toMatchObject({ error: { code: 499 } });
  });
});

describe("job expiry", () => {
  it("treats an expired job as gone, whatever DynamoDB's TTL has or has not deleted", async () => {
    const started = await post("/datastores/describe", "publisher", { datastoreId, serverId });
    await waitFor(String(started.jobId), String(started.key));
    const ddb = runningStore(engine.dataDir);
    try {
      await ddb.send(
        new UpdateCommand({
          TableName: "mapgate-jobs",
          Key: { jobId: started.jobId },
          UpdateExpression: "SET expiresAt = :past",
          ExpressionAttributeValues: { ":past": Math.floor(Date.now() / 1000) - 1 },
        }),
      );
    } finally {
      ddb.destroy();
    }
    const gone = {
      error: { code: 400, messageCode: "CONT_0001", message: "Item does not exist or is inaccessible.", details: [] },
    };
    expect(await get(`/jobs/${started.jobId}`, "publisher", `&key=${started.key}`)).toEqual(gone);
    expect(await get(`/jobs/${started.jobId}`, "admin")).toEqual(gone);
  });
});

/**
 * The publisher's publish job as publish leaves it before its execution runs (`processing`, its key unknown to
 * anyone), created at `created`, its record kept an hour from now: written straight into the store.
 */
const processingJob = (jobId: string, params: Record<string, unknown>, input: string, created: number) => ({
  jobId,
  portalId,
  owner: "publisher",
  keyHash: "0".repeat(64),
  operation: "publish",
  params,
  input,
  status: "processing",
  message: "",
  result: null,
  created,
  modified: created,
  expiresAt: Math.floor(Date.now() / 1000) + 3600,
});

describe("jobs whose execution ended elsewhere", () => {
  it("ends a job past its deadline as failed on read and gives its name back; takes over a dead job's reservation", async () => {
    const ddb = runningStore(engine.dataDir);
    const jobId = "d".repeat(32);
    const created = Date.now() - 2 * 3600_000;
    const params = {
      serviceConfiguration: sceneConfig("Timed_Out"),
      serverId,
      serverFolder: "Late",
      tags: "",
      description: "",
    };
    try {
      await ddb.send(
        new PutCommand({ TableName: "mapgate-services", Item: { serverId, entry: "pending#late#timed_out", jobId } }),
      );
      await ddb.send(
        new PutCommand({
          TableName: "mapgate-services",
          Item: { serverId, entry: "pending#late#orphaned", jobId: "e".repeat(32) },
        }),
      );
      await ddb.send(
        new PutCommand({
          TableName: "mapgate-jobs",
          Item: processingJob(jobId, params, "{}", created),
        }),
      );
    } finally {
      ddb.destroy();
    }
    expect(await get(`/jobs/${jobId}`, "admin")).toMatchObject({
      status: "failed",
      statusMessage: "The job did not finish in time and was stopped. Try again.",
    });
    // Its name is free again, and so is one reserved by a job that no longer exists.
    for (const name of ["Timed_Out", "Orphaned"]) {
      const again = await post("/datastores/publish", "publisher", {
        serverId,
        serverFolder: "Late",
        serviceConfiguration: sceneConfig(name),
      });
      expect(again.success, name).toBe(true);
      expect((await waitFor(String(again.jobId), String(again.key))).status).toBe("completed");
    }
  });
});

describe("publish validation", () => {
  it("answers every problem it can see now with a 400 and details", async () => {
    const other = JSON.parse(admin("register-server", "--portal", portalId, "--name", "unlinked")) as {
      serverId: string;
    };
    const cases: [Record<string, string>, string[]][] = [
      [{ serverId }, ["'serviceConfiguration' must be specified."]],
      [{ serverId, serviceConfiguration: "{not json" }, ["'serviceConfiguration' must be a JSON object."]],
      [
        { serverId, serviceConfiguration: "{}" },
        [
          "'serviceConfiguration.type' must be specified.",
          "'serviceConfiguration.serviceName' must be specified.",
          "'serviceConfiguration.properties.cacheStoreId' must be specified.",
          "'serviceConfiguration.properties.pathInCachedStore' must be specified.",
        ],
      ],
      [
        {
          serverId,
          serviceConfiguration: JSON.stringify({
            type: "GPServer",
            serviceName: "x",
            properties: { cacheStoreId: datastoreId, pathInCachedStore: "/a" },
          }),
        },
        [
          "Service type 'GPServer' cannot be published by reference; use one of SceneServer, MapServer, VectorTileServer, ImageServer.",
        ],
      ],
      [
        { serverId, serviceConfiguration: sceneConfig("Unknown", "/caches/scene/Buildings3D", "f".repeat(32)) },
        [`Data store '${"f".repeat(32)}' does not exist or is inaccessible.`],
      ],
      [
        { serverId: other.serverId, serviceConfiguration: sceneConfig("Unlinked") },
        [`Server '${other.serverId}' is not registered with data store '${datastoreId}'.`],
      ],
      [
        { serverId, serviceConfiguration: sceneConfig("Elsewhere", "/caches/scene/Nowhere") },
        [`Path '/caches/scene/Nowhere' is not a cached layer of data store '${datastoreId}'.`],
      ],
      [
        { serverId, serviceConfiguration: sceneConfig("Mismatch", "/caches/tiles/Basemap") },
        ["A SceneServer cannot be published from a tileCache (it needs a sceneLayerCache)."],
      ],
      [
        { serverId, serviceConfiguration: sceneConfig("FromImagery", "/caches/imagery/Ortho2024") },
        ["A SceneServer cannot be published from an imageCache (it needs a sceneLayerCache)."],
      ],
      [
        { serverId, serverFolder: "bad folder!", serviceConfiguration: sceneConfig("BadFolder") },
        ["'serverFolder' may hold only letters, digits and _ (at most 120)."],
      ],
      [
        { serverId, serverFolder: "hosted", serviceConfiguration: sceneConfig("InHosted") },
        [
          "'serverFolder' cannot be 'Hosted': that folder holds hosted services (published from files), not services published by reference.",
        ],
      ],
      [
        { serverId, serverFolder: "Scenes", serviceConfiguration: sceneConfig("BUILDINGS_FROM_CLIENT") },
        ["A service named 'Scenes/BUILDINGS_FROM_CLIENT' exists already."],
      ],
    ];
    for (const [fields, details] of cases) {
      expect(await post("/datastores/publish", "publisher", fields), JSON.stringify(fields).slice(0, 120)).toEqual({
        error: { code: 400, message: "Unable to publish the service.", details },
      });
    }
    const get_ = await call(`${rest()}/portals/self/datastores/publish?f=json&token=${tokens.publisher}`, {
      ca: engine.ca,
    });
    expect(get_.json()).toMatchObject({ error: { code: 405 } });
  });

  it("lets exactly one of concurrent same-name publishes through", async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        post("/datastores/publish", "publisher", {
          serverId,
          serverFolder: "Race",
          serviceConfiguration: sceneConfig("Same_Name"),
        }),
      ),
    );
    const started = answers.filter((a) => a.success === true);
    expect(started).toHaveLength(1);
    for (const a of answers.filter((x) => x.success !== true)) {
      expect(a).toEqual({
        error: {
          code: 400,
          message: "Unable to publish the service.",
          details: ["A service named 'Race/Same_Name' exists already."],
        },
      });
    }
    const job = await waitFor(String(started[0]?.jobId), String(started[0]?.key));
    expect(job.status).toBe("completed");
    expect((await catalog("Race")).match(/<Name>Race\/Same_Name<\/Name>/g)).toHaveLength(1);
  });
});

describe("failures and crashes", () => {
  /** Writes straight into the stopped engine's store: the state a crash leaves behind. */
  async function withStore(fn: (ddb: DynamoDBDocumentClient) => Promise<void>): Promise<void> {
    await engine.stop(); // a no-op when the engine was killed already
    await withStoppedStore(engine.dataDir, fn);
    await start();
  }

  it("never leaves a job processing after the engine is killed, and never publishes twice", async () => {
    const started = await post("/datastores/publish", "publisher", {
      serverId,
      serverFolder: "Crash",
      serviceConfiguration: sceneConfig("Killed_Mid_Job"),
    });
    expect(started.success).toBe(true);
    await engine.stop("SIGKILL");
    await start();
    const job = await waitFor(String(started.jobId), String(started.key));
    expect(["completed", "failed"]).toContain(job.status);
    expect((await catalog("Crash")).match(/<Name>Crash\/Killed_Mid_Job<\/Name>/g)?.length ?? 0).toBe(
      job.status === "completed" ? 1 : 0,
    );
  });

  it("publishes 5,000 datasets in a job killed midway and resumed, counting every layer it made as published", async () => {
    const N = 5_000;
    const spec = join(engine.dataDir, "bulk-store.json");
    writeFileSync(
      spec,
      JSON.stringify({
        title: "Bulk",
        owner: "publisher",
        kind: "database",
        serverIds: [serverId],
        datasets: Array.from({ length: N }, (_, i) => ({
          name: `bulk.Parcels_${String(i).padStart(5, "0")}`,
          displayName: `Parcel boundaries and ownership records ${i}`,
          type: ["table", "featureClass", "relationshipClass"][i % 3],
          path: `/bulk.gdb/Parcels_${String(i).padStart(5, "0")}`,
        })),
      }),
    );
    const bulk = (
      JSON.parse(admin("register-datastore", "--portal", portalId, "--file", spec)) as { datastoreId: string }
    ).datastoreId;
    const started = await post("/datastores/allDatasets/publishLayers", "publisher", {
      datastoreId: bulk,
      serverId,
      serverFolder: "Bulk",
    });
    expect(started.success).toBe(true);
    // Killed once the job has made some of its layers, and long before it made all of them.
    const ddb = runningStore(engine.dataDir);
    let paired = 0;
    try {
      for (let i = 0; i < 600 && paired === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        const out = await ddb.send(
          new QueryCommand({
            TableName: "mapgate-layers",
            KeyConditionExpression: "datastoreId = :d",
            ExpressionAttributeValues: { ":d": bulk },
            Select: "COUNT",
          }),
        );
        paired = out.Count ?? 0;
      }
    } finally {
      ddb.destroy();
    }
    await engine.stop("SIGKILL");
    expect(paired).toBeGreaterThan(0);
    expect(paired).toBeLessThan(N);
    await start();
    const job = await waitFor(String(started.jobId), String(started.key), "publisher", 2_000);
    expect(job).toMatchObject({
      status: "completed",
      result: { datastoreId: bulk, published: N, alreadyPublished: 0, layers: N },
    });
    const layers = await get("/datastores/getLayers", "publisher", `&datastoreId=${bulk}`);
    expect(new Set((layers.layerAndDatasets as { layer: { id: string } }[]).map((p) => p.layer.id)).size).toBe(N);
  }, 180_000);

  it("resumes a job whose execution died, and fails one whose data store vanished, with a message", async () => {
    const now = Date.now();
    const job = (jobId: string, store: string, name: string) => {
      const params = {
        serviceConfiguration: sceneConfig(name, "/caches/scene/Buildings3D", store),
        serverId,
        serverFolder: "Resumed",
        tags: "",
        description: "",
      };
      const input = { jobId, portalId, owner: "publisher", operation: "publish", params, origin: engine.ready.https };
      return processingJob(jobId, params, JSON.stringify(input), now);
    };
    const resumed = "a".repeat(32);
    const orphan = "b".repeat(32);
    const vanished = "c".repeat(32);
    await withStore(async (ddb) => {
      // Exactly what publish leaves before its execution runs: the name reservation and the job.
      for (const [id, store, name] of [
        [resumed, datastoreId, "Was_Running"],
        [orphan, vanished, "Store_Gone"],
      ] as const) {
        await ddb.send(
          new PutCommand({
            TableName: "mapgate-services",
            Item: { serverId, entry: `pending#resumed#${name.toLowerCase()}`, jobId: id },
          }),
        );
        await ddb.send(new PutCommand({ TableName: "mapgate-jobs", Item: job(id, store, name) }));
      }
    });
    expect(await waitFor(resumed, "", "admin")).toMatchObject({
      status: "completed",
      result: { services: [{ type: "Scene Service" }] },
    });
    expect(await waitFor(orphan, "", "admin")).toEqual(
      expect.objectContaining({
        status: "failed",
        statusMessage: `Data store '${vanished}' no longer exists; the service was not published.`,
        messages: [
          { type: "error", message: `Data store '${vanished}' no longer exists; the service was not published.` },
        ],
      }),
    );
    const soap = await catalog("Resumed");
    expect(soap.match(/<Name>Resumed\/Was_Running<\/Name>/g)).toHaveLength(1);
    expect(soap).not.toContain("Store_Gone");
    // The failed job gave its name back: publishing it now works.
    const retry = await post("/datastores/publish", "publisher", {
      serverId,
      serverFolder: "Resumed",
      serviceConfiguration: sceneConfig("Store_Gone"),
    });
    expect((await waitFor(String(retry.jobId), String(retry.key))).status).toBe("completed");
  }, 180_000);

  it("fails a job whose data store is removed between validation and creation", async () => {
    const started = await post("/datastores/publish", "publisher", {
      serverId,
      serverFolder: "Removed",
      serviceConfiguration: sceneConfig("Lost_Store"),
    });
    await engine.stop("SIGKILL");
    await withStore(async (ddb) => {
      // The job's execution died with the engine; meanwhile the data store is unregistered.
      const entries = await ddb.send(
        new QueryCommand({
          TableName: "mapgate-datastores",
          KeyConditionExpression: "datastoreId = :d",
          ExpressionAttributeValues: { ":d": datastoreId },
        }),
      );
      saved = entries.Items ?? [];
      await ddb.send(new DeleteCommand({ TableName: "mapgate-datastores", Key: { datastoreId, entry: "#" } }));
      await ddb.send(
        new PutCommand({
          TableName: "mapgate-jobs",
          Item: { ...(await jobItem(ddb, String(started.jobId))), status: "processing", result: null, message: "" },
        }),
      );
    });
    const job = await waitFor(String(started.jobId), String(started.key));
    expect(job).toMatchObject({
      status: "failed",
      statusMessage: `Data store '${datastoreId}' no longer exists; the service was not published.`,
    });
    await withStore(async (ddb) => {
      for (const Item of saved) await ddb.send(new PutCommand({ TableName: "mapgate-datastores", Item }));
    });
    // Two engine restarts over the store the 5,000-layer job filled: tens of seconds on a busy machine.
  }, 180_000);
});

let saved: Record<string, unknown>[] = [];

async function jobItem(ddb: DynamoDBDocumentClient, jobId: string): Promise<Record<string, unknown>> {
  const { GetCommand } = await import("@aws-sdk/lib-dynamodb");
  return (await ddb.send(new GetCommand({ TableName: "mapgate-jobs", Key: { jobId } }))).Item ?? {};
}

describe("getLayers", () => {
  it("answers owner and administrator on both paths (GET and POST), refuses others, and names an unknown data store", async () => {
    const owner = await get("/datastores/getLayers", "publisher", `&datastoreId=${datastoreId}`);
    expect(await get("/datastores/getLayers", "admin", `&datastoreId=${datastoreId}`)).toEqual(owner);
    expect(await post("/datastores/allDatasets/getLayers", "admin", { datastoreId })).toEqual(owner);
    expect(await get("/datastores/allDatasets/getLayers", "publisher", `&datastoreId=${datastoreId}`)).toEqual(owner);
    admin("add-user", "--portal", portalId, "--username", "publisher2", "--role", "org_publisher");
    tokens.publisher2 = await signIn("publisher2", "other-user-pass-1");
    expect(await get("/datastores/getLayers", "publisher2", `&datastoreId=${datastoreId}`)).toMatchObject({
      error: { code: 403, messageCode: "GWM_0003" },
    });
    expect(await get("/datastores/getLayers", "admin", `&datastoreId=${"e".repeat(32)}`)).toEqual({
      error: {
        code: 400,
        message: "Unable to get layers.",
        details: [`Data store '${"e".repeat(32)}' does not exist or is inaccessible.`],
      },
    });
    expect(await get("/datastores/getLayers", "admin")).toEqual({
      error: { code: 400, message: "Unable to get layers.", details: ["'datastoreId' must be specified."] },
    });
  });

  it("lists 10,000 pairs correctly, and pages them with start and num", async () => {
    const spec = join(engine.dataDir, "big-store.json");
    writeFileSync(
      spec,
      JSON.stringify({
        title: "Big",
        owner: "publisher",
        kind: "database",
        serverIds: [serverId],
        datasets: [],
      }),
    );
    const big = JSON.parse(admin("register-datastore", "--portal", portalId, "--file", spec)) as {
      datastoreId: string;
    };
    const ddb = runningStore(engine.dataDir);
    const path = (i: number) => `/big.gdb/T${String(i).padStart(5, "0")}`;
    // As large as real pairs are: 32-hex ids, full service URLs, descriptive names.
    const hex = (i: number) => createHash("sha256").update(String(i)).digest("hex").slice(0, 32);
    const title = (i: number) => `Parcel boundaries and ownership records, table ${i}`;
    const items = Array.from({ length: 10_000 }, (_, i) => ({
      datastoreId: big.datastoreId,
      entry: `pair#${path(i)}`,
      layer: {
        id: hex(i),
        title: title(i),
        created: 1_795_000_000_000 + i,
        modified: 1_795_000_000_000 + i,
        url: `https://gis.example.com/arcgis/rest/services/Layers/big_T${i}_${hex(i).slice(0, 6)}/FeatureServer`,
        type: "Feature Service",
      },
      dataset: {
        name: `big.T${i}`,
        displayName: title(i),
        type: ["table", "featureClass", "relationshipClass"][i % 3],
        datastoreId: big.datastoreId,
        path: path(i),
      },
    }));
    for (let i = 0; i < items.length; i += 25) {
      let pending: Record<string, unknown>[] = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      while (pending.length)
        pending = ((await ddb.send(new BatchWriteCommand({ RequestItems: { "mapgate-layers": pending } })))
          .UnprocessedItems?.["mapgate-layers"] ?? []) as Record<string, unknown>[];
    }
    ddb.destroy();
    const all = await get("/datastores/getLayers", "publisher", `&datastoreId=${big.datastoreId}`);
    const pairs = all.layerAndDatasets as { layer: { id: string }; dataset: { path: string; type: string } }[];
    expect(pairs).toHaveLength(10_000);
    expect(pairs.map((p) => p.dataset.path)).toEqual(Array.from({ length: 10_000 }, (_, i) => path(i)));
    expect(pairs[9_999]).toEqual({ layer: items[9_999]?.layer, dataset: items[9_999]?.dataset });
    const page = await get("/datastores/getLayers", "publisher", `&datastoreId=${big.datastoreId}&start=9001&num=500`);
    expect((page.layerAndDatasets as unknown[]).length).toBe(500);
    expect(page.nextStart).toBe(9501);
    const last = await get("/datastores/getLayers", "publisher", `&datastoreId=${big.datastoreId}&start=9501&num=500`);
    expect(last.nextStart).toBe(-1);
    expect((last.layerAndDatasets as { dataset: { path: string } }[])[499]?.dataset.path).toBe(path(9_999));
    // Rendered as pjson (indented) or as an HTML page, the whole list would pass Lambda's 6 MB: a clear 400 in
    // the format asked for, where AWS would answer a bare 500; a page of it is fine.
    const raw = (f: string, query = "") =>
      call(
        `${rest()}/portals/self/datastores/getLayers?f=${f}&token=${tokens.publisher}&datastoreId=${big.datastoreId}${query}`,
        {
          ca: engine.ca,
        },
      );
    const pretty = await raw("pjson");
    expect(pretty.json()).toMatchObject({ error: { code: 400, message: "The answer is too large." } });
    expect(pretty.text.length).toBeLessThan(1000);
    const html = await raw("html");
    expect(html.headers["content-type"]).toMatch(/^text\/html/);
    expect(html.text).toContain("The answer is too large.");
    expect((await raw("pjson", "&start=1&num=2000")).json()).toMatchObject({ nextStart: 2001 });
  });
});

describe("custom roles and publishing", () => {
  it("lets a custom role with the publish privilege publish, and refuses the next request once it is removed", async () => {
    const role = await post("/createRole", "admin", { name: "Scene Publishers" });
    const id = String(role.id);
    await post(`/roles/${id}/setPrivileges`, "admin", {
      privileges: JSON.stringify({ privileges: ["portal:user:createItem", "portal:publisher:publishScenes"] }),
    });
    expect(await post("/updateuserrole", "admin", { user: "user", role: id })).toEqual({
      success: true,
      username: "user",
    });
    // From a store of their own (a data store is used by its owner or an administrator only), which an operator
    // registered for them: the custom role does not register stores.
    const ownStore = registerFolderStore(
      engine.dataDir,
      demoOrganization(engine.dataDir),
      "User's caches",
      join(engine.dataDir, "demo-store"),
      "user",
    );
    expect(
      await post("/datastores/publish", "user", {
        serverId,
        serverFolder: "Custom",
        serviceConfiguration: sceneConfig("Not_Theirs"),
      }),
    ).toMatchObject({ error: { code: 403 } });
    const ok = await post("/datastores/publish", "user", {
      serverId,
      serverFolder: "Custom",
      serviceConfiguration: sceneConfig("By_Custom_Role", undefined, ownStore),
    });
    expect(ok).toMatchObject({ success: true });
    expect((await waitFor(String(ok.jobId), String(ok.key), "user")).status).toBe("completed");
    await post(`/roles/${id}/setPrivileges`, "admin", {
      privileges: JSON.stringify({ privileges: ["portal:user:createItem"] }),
    });
    expect(
      await post("/datastores/publish", "user", {
        serverId,
        serverFolder: "Custom",
        serviceConfiguration: sceneConfig("Not_Anymore", undefined, ownStore),
      }),
    ).toMatchObject({
      error: { code: 403, messageCode: "GWM_0003" },
    });
    await post("/updateuserrole", "admin", { user: "user", role: "org_user" });
  });
});

describe("deleteLayers", () => {
  it("deletes every layer of the store, one of them shared with a group (whose content it leaves)", async () => {
    const published = await post("/datastores/allDatasets/publishLayers", "publisher", {
      datastoreId,
      serverId,
      serverFolder: "Grouped",
    });
    expect(await waitFor(String(published.jobId), String(published.key))).toMatchObject({ status: "completed" });
    const listed = await get("/datastores/getLayers", "publisher", `&datastoreId=${datastoreId}`);
    const ids = (listed.layerAndDatasets as { layer: { id: string } }[]).map((p) => p.layer.id);
    expect(ids).toHaveLength(3);
    const community = (path: string, fields: Record<string, string>) =>
      call(`${rest()}/${path}`, {
        ca: engine.ca,
        body: form({ f: "json", token: tokens.publisher ?? "", ...fields }),
      }).then((r) => r.json<Record<string, unknown>>());
    const group = await community("community/createGroup", { title: "Layers of the demo store", access: "org" });
    const groupId = String((group.group as { id: string }).id);
    expect(await community(`content/items/${ids[1]}/share`, { groups: groupId })).toMatchObject({
      notSharedWith: [],
    });
    expect(await post("/datastores/allDatasets/deleteLayers", "publisher", { datastoreId })).toEqual({
      success: true,
      deleted: 3,
      more: false,
    });
    expect(await get("/datastores/getLayers", "publisher", `&datastoreId=${datastoreId}`)).toEqual({
      layerAndDatasets: [],
    });
    const content = await call(`${rest()}/content/groups/${groupId}?f=json&token=${tokens.publisher}`, {
      ca: engine.ca,
    }).then((r) => r.json<{ items: unknown[] }>());
    expect(content.items).toEqual([]);
    for (const id of ids) {
      expect(
        await call(`${rest()}/content/items/${id}?f=json&token=${tokens.publisher}`, { ca: engine.ca }).then((r) =>
          r.json(),
        ),
      ).toMatchObject({
        error: { code: 400 },
      });
    }
  });
});
