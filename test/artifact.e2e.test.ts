// What deploys is what is tested: the stack is synthesized with real bundling, and every request below runs
// the bundles from the cloud assembly, each in its own Lambda-like process with exactly the environment the
// template gives its function, every AWS call checked against that function's IAM policy from the template
// (DynamoDB, Secrets Manager, Step Functions, S3), jobs run by the template's own state machine definition.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { CreateSecretCommand, GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import {
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  SFNClient,
  StartExecutionCommand,
} from "@aws-sdk/client-sfn";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTables, type LocalDynamo, localTableName, startDynamo } from "#infra/local/dynamo.ts";
import { localEnvironment } from "#infra/local/engine.ts";
import { type LocalS3, startS3 } from "#infra/local/s3.ts";
import { bootstrapDemo, DEMO_CACHE_PATHS, WORLD_DATASETS } from "#infra/admin/demo.ts";
import { registerCaller } from "#infra/admin/callers.ts";
import { registerDataStore } from "#infra/admin/operations.ts";
import { ensureDemoCaches, filesOf } from "#infra/local/demo/write.ts";
import { WORKFLOW } from "#shared/system.ts";
import { createJob, newJob } from "#shared/stores/jobs.ts";
import { REGION, synthesize } from "./helpers/artifact.ts";
import { type ArtifactSystem, startArtifactSystem } from "./helpers/artifact-system.ts";
import { EDGE_KEY_HEADER, VIEWER_ADDRESS_HEADER } from "#shared/http/edge.ts";
import { checkEmf, emfLines } from "./helpers/emf.ts";
import { PASSWORDS } from "./helpers/engine.ts";
import { call, form, multipartBody } from "./helpers/http.ts";

const STACK = "mapgate-artifact";
/** The bucket the stack is told cloud stores live in, and one it is not. */
const BUCKET = "mapgate-artifact-caches";
const ELSEWHERE = "mapgate-elsewhere";
const NS = "http://www.esri.com/schemas/ArcGIS/10.8";

let work: string;
let system: ArtifactSystem;
let dynamo: LocalDynamo;
let s3: LocalS3;
let org: { portalId: string; serverId: string; folderStore: string; cloudStore: string; elsewhereStore: string };
const tokens: Record<string, string> = {};

const rest = () => `${system.url}/portal/sharing/rest`;
const json = async (url: string, fields?: Record<string, string>) => {
  const answer = await call(url, fields ? { body: form({ f: "json", ...fields }) } : {});
  return answer.json();
};
const post = (path: string, who: string, fields: Record<string, string> = {}) =>
  json(`${rest()}/portals/self${path}`, { token: tokens[who] ?? "", ...fields });
const get = (path: string, who: string, query = "") =>
  json(`${rest()}/portals/self${path}?f=json&token=${tokens[who] ?? ""}${query}`);

async function finished(started: Record<string, unknown>, who: string): Promise<Record<string, unknown>> {
  if (started.error || typeof started.jobId !== "string") throw new Error(JSON.stringify(started));
  const key = encodeURIComponent(String(started.key));
  for (let i = 0; i < 400; i++) {
    const job = await get(`/jobs/${started.jobId}`, who, `&key=${key}`);
    if (job.status !== "processing") return job;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${started.jobId} still processing`);
}

/** The publisher publishes the demo's tile cache in `cacheStoreId` as a map service, and the job is waited for. */
const publishTiles = async (serverFolder: string, serviceName: string, cacheStoreId: string) =>
  finished(
    await post("/datastores/publish", "publisher", {
      serverId: org.serverId,
      serverFolder,
      serviceConfiguration: JSON.stringify({
        type: "MapServer",
        serviceName,
        properties: { cacheStoreId, pathInCachedStore: DEMO_CACHE_PATHS.tiles },
      }),
    }),
    "publisher",
  );

const denied = () => system.standIn.decisions.filter((d) => !d.allowed);
const errorLogs = () =>
  [...system.hosts.values()].flatMap((h) =>
    h.logs.filter((l) => l.includes('"level":"ERROR"')).map((l) => `${h.fn.id}: ${l}`),
  );

async function upload(bucket: string, folder: string | undefined): Promise<void> {
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: REGION,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    credentials: { accessKeyId: "operator", secretAccessKey: "operator" },
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    for await (const file of folder === undefined ? [] : filesOf(folder)) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: `demo-store/${file.key}`, Body: file.body }));
    }
  } finally {
    client.destroy();
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "mapgate-artifact-"));
  // The synth (esbuild for every function) runs in its own process while the store is prepared here. About a
  // minute and a half of CPU: minutes of wall time when another test file shares the cores (the bound is for that).
  const assembly = synthesize(join(work, "cdk.out"), STACK, [BUCKET]);
  dynamo = await startDynamo(undefined);
  await createTables(dynamo.endpoint);
  s3 = await startS3(undefined);

  // The operator's side, as `npm run admin -- … --stack` acts on a stack's tables: this process, straight to
  // the store (it signs no token, so it needs no token key). The stores read the environment at first use.
  Object.assign(process.env, localEnvironment(dynamo.endpoint, join(work, "no-token-key"), "https://artifact.invalid"));
  const storeFolder = join(work, "store");
  await ensureDemoCaches(storeFolder);
  await upload(BUCKET, storeFolder);
  await upload(ELSEWHERE, storeFolder);
  const demo = await bootstrapDemo({
    passwords: PASSWORDS,
    storeFolder,
    origin: "https://artifact.invalid",
    cloud: { bucket: BUCKET, prefix: "demo-store" },
  });
  if (!demo?.cloudDatastoreId) throw new Error("no demo organization");
  const elsewhere = await registerDataStore(demo.portalId, {
    title: "A bucket the stack was not told about",
    owner: "publisher",
    kind: "cloudStore",
    serverIds: [demo.serverId],
    datasets: [],
    location: { bucket: ELSEWHERE, prefix: "demo-store" },
  });
  org = {
    portalId: demo.portalId,
    serverId: demo.serverId,
    folderStore: demo.datastoreId,
    cloudStore: demo.cloudDatastoreId,
    elsewhereStore: elsewhere.datastoreId,
  };
  const built = await assembly;
  // The stack's bucket of uploaded files (and hosted layers' data, under `hosted/`), as the template names it.
  const itemFiles = built.ofType("AWS::S3::Bucket").find(([id]) => id.startsWith("ItemFiles"))?.[0];
  if (!itemFiles) throw new Error("the template holds no item-files bucket");
  await upload(built.ref(itemFiles), undefined);
  system = await startArtifactSystem(built, { dynamodb: dynamo.endpoint, s3: s3.endpoint });
}, 480_000);

afterAll(async () => {
  await system?.stop();
  await s3?.close();
  await dynamo?.close();
  // The assembly holds every bundle and its source map (over 100 MB).
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the synthesized bundles, each with its template environment and IAM policy", () => {
  it("every function's bundle starts (imports, reads its configuration) with what its template gives it", async () => {
    const hosts = [...system.hosts.values()];
    const failures: string[] = [];
    // Two at a time: the machine running the suite has two cores.
    for (let i = 0; i < hosts.length; i += 2) {
      await Promise.all(
        hosts.slice(i, i + 2).map((h) => h.warm().catch((err: unknown) => failures.push(`${h.fn.id}: ${String(err)}`))),
      );
    }
    expect(failures).toEqual([]);
    expect(hosts.length).toBe(system.functions.length);
  }, 120_000);

  it("signs in with the token key from Secrets Manager, and every function opens the tokens another issued", async () => {
    for (const who of ["admin", "publisher", "user"] as const) {
      const answer = await json(`${rest()}/generateToken`, { username: who, password: PASSWORDS[who] });
      expect(answer, who).toMatchObject({ token: expect.any(String), ssl: false });
      tokens[who] = String(answer.token);
    }
    // The key came from GetSecretValue, allowed by generate-token's own grant.
    expect(system.standIn.decisions).toContainEqual({
      caller: "generate-token",
      action: "secretsmanager:GetSecretValue",
      resource: expect.stringMatching(/^arn:aws:secretsmanager:us-east-1:123456789012:secret:/),
      allowed: true,
    });
    expect(await get("", "admin")).toMatchObject({ id: org.portalId, name: "mapgate Demo" });
    expect(await json(`${rest()}/community/self?f=json&token=${tokens.publisher}`)).toMatchObject({
      username: "publisher",
      role: "org_publisher",
      orgId: org.portalId,
    });
    expect(await json(`${rest()}/portals/self?f=json`)).toMatchObject({ id: org.portalId });
  });

  it("believes a viewer's address only with the CDN's edge key: tokens bound to it work through the CDN", async () => {
    const edge = system.edgeKey ?? "";
    expect(edge).toMatch(/^[A-Za-z0-9]{48}$/);
    // What CloudFront adds: the viewer's address (its function) and the edge key (an origin header).
    const through = (key: string) => ({ [VIEWER_ADDRESS_HEADER]: "203.0.113.7", [EDGE_KEY_HEADER]: key });
    const token = async (headers: Record<string, string>) => {
      const fields = { f: "json", username: "user", password: PASSWORDS.user, client: "requestip" };
      const answer = await call(`${rest()}/generateToken`, { body: form(fields), headers });
      return String(answer.json().token);
    };
    const self = async (t: string, headers: Record<string, string>) =>
      (await call(`${rest()}/community/self?f=json&token=${t}`, { headers })).json();
    const viaCdn = await token(through(edge));
    expect(await self(viaCdn, through(edge))).toMatchObject({ username: "user" });
    // The same token straight to the API (its own view of the caller: this machine) is bound elsewhere.
    expect(await self(viaCdn, {})).toMatchObject({ error: { code: 498 } });
    // A claimed address without the right key is ignored: the token binds to the API's own view of the caller.
    const forged = await token(through("x".repeat(edge.length)));
    expect(await self(forged, {})).toMatchObject({ username: "user" });
    expect(await self(forged, through("x".repeat(edge.length)))).toMatchObject({ username: "user" });
    // The key was read with the route's own grant.
    expect(system.standIn.decisions).toContainEqual(
      expect.objectContaining({ caller: "generate-token", action: "secretsmanager:GetSecretValue", allowed: true }),
    );
  });

  it("creates and updates a custom role (DynamoDB transactions)", async () => {
    const created = await post("/createRole", "admin", { name: "Field Crew", description: "Works outside" });
    expect(created).toMatchObject({ success: true, id: expect.any(String) });
    expect(await post(`/roles/${String(created.id)}/update`, "admin", { name: "Field Crews" })).toEqual({
      success: true,
    });
    expect(await get(`/roles/${String(created.id)}`, "user")).toMatchObject({ id: created.id, name: "Field Crews" });
  });

  let basemap: { serviceUrl: string; serviceItemId: string };
  it("describes and publishes a cache of a folder store through the template's state machine, then serves it", async () => {
    const described = await finished(
      await post("/datastores/describe", "publisher", {
        datastoreId: org.folderStore,
        serverId: org.serverId,
        path: "/caches/tiles",
        type: "folder",
      }),
      "publisher",
    );
    expect(described).toMatchObject({
      status: "completed",
      result: { children: [{ name: "Basemap", type: "tileCache", path: DEMO_CACHE_PATHS.tiles }] },
    });
    const published = await publishTiles("", "Artifact_Basemap", org.folderStore);
    expect(published).toMatchObject({ status: "completed" });
    const [service] = (published.result as { services: { serviceUrl: string; serviceItemId: string }[] }).services;
    if (!service) throw new Error("no service published");
    basemap = service;
    const path = new URL(service.serviceUrl).pathname;
    expect(path).toBe("/arcgis/rest/services/Artifact_Basemap/MapServer");
    expect(await json(`${system.url}${path}?f=json&token=${tokens.publisher}`)).toMatchObject({
      tileInfo: expect.objectContaining({ lods: expect.any(Array) }),
    });
    const tile = await call(`${system.url}${path}/tile/1/0/1?token=${tokens.publisher}`);
    expect(tile.status).toBe(200);
    expect(tile.headers["content-type"]).toBe("image/png");
  });

  it("publishes from a cloud store in the stack's bucket and serves its tiles from S3", async () => {
    const published = await publishTiles("Cloud", "Cloud_Basemap", org.cloudStore);
    expect(published).toMatchObject({ status: "completed" });
    const [service] = (published.result as { services: { serviceUrl: string }[] }).services;
    const path = new URL(service?.serviceUrl ?? "").pathname;
    const tile = await call(`${system.url}${path}/tile/1/0/1?token=${tokens.publisher}`);
    expect(tile.status).toBe(200);
    expect(system.standIn.decisions).toContainEqual(
      expect.objectContaining({ caller: "service", action: "s3:GetObject", allowed: true }),
    );
  });

  it("finds the published item, shares it, and lists the service in the SOAP catalog", async () => {
    const search = (who?: string) =>
      json(
        `${rest()}/search?f=json&q=${encodeURIComponent(`id:${basemap.serviceItemId}`)}${who ? `&token=${tokens[who]}` : ""}`,
      );
    expect(await search("publisher")).toMatchObject({ total: 1, results: [{ id: basemap.serviceItemId }] });
    expect(await search()).toMatchObject({ total: 0 });
    expect(
      await json(`${rest()}/content/items/${basemap.serviceItemId}/share`, {
        token: tokens.publisher ?? "",
        everyone: "true",
      }),
    ).toMatchObject({ itemId: basemap.serviceItemId, notSharedWith: [] });
    expect(await search()).toMatchObject({ total: 1 });

    const envelope = `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><GetServiceDescriptions xmlns="${NS}"/></s:Body></s:Envelope>`;
    const soap = await call(`${system.url}/arcgis/services`, {
      body: envelope,
      headers: { "content-type": "text/xml" },
    });
    expect(soap.status).toBe(200);
    expect(soap.text).toContain("<Name>Artifact_Basemap</Name>");
  });

  it("publishes every dataset as a layer (the workflow's page loop) and lists the pairs", async () => {
    const job = await finished(
      await post("/datastores/allDatasets/publishLayers", "publisher", {
        datastoreId: org.folderStore,
        serverId: org.serverId,
        serverFolder: "Layers",
      }),
      "publisher",
    );
    expect(job).toMatchObject({ status: "completed", result: { published: WORLD_DATASETS.length } });
    const layers = await get("/datastores/getLayers", "publisher", `&datastoreId=${org.folderStore}`);
    expect((layers.layerAndDatasets as unknown[]).length).toBe(WORLD_DATASETS.length);
  });

  it("ends a job whose task fails in the template's FailJob, with the task's own message from AWS's JSON Cause", async () => {
    // A job whose data store is gone by the time its task runs: the task's JobError is final.
    const jobId = "a".repeat(32);
    const key = "artifact-job-key";
    const params = { datastoreId: "f".repeat(32), serverId: org.serverId, path: "/", type: "datastore" };
    const job = newJob(
      { jobId, portalId: org.portalId, owner: "publisher", operation: "describe", params, origin: system.url },
      key,
    );
    const input = job.input;
    await createJob(job);
    system.startExecution(jobId, input);
    expect(await finished({ jobId, key }, "publisher")).toMatchObject({
      status: "failed",
      statusMessage: `Data store '${params.datastoreId}' no longer exists.`,
    });
  });

  it("lets an IAM caller's workflow publish through the operations function and wait on its task token", async () => {
    const operations = system.functions.find((f) => f.id === "operations");
    if (!operations) throw new Error("no operations function in the template");
    // register-caller's record; its alias and resource policy are made at run time on AWS, not by the template.
    const caller = await registerCaller(
      { portalId: org.portalId, principalArn: "arn:aws:iam::123456789012:role/pipeline", username: "publisher" },
      { operationsFunction: operations.arn, alias: async () => undefined },
    );
    const sfn = new SFNClient({
      endpoint: system.stepFunctions,
      region: REGION,
      credentials: { accessKeyId: "caller", secretAccessKey: "caller" },
    });
    const Payload = {
      operation: "publish",
      params: {
        serverId: org.serverId,
        serviceConfiguration: {
          type: "MapServer",
          serviceName: "Artifact_Invoked",
          properties: { cacheStoreId: org.folderStore, pathInCachedStore: DEMO_CACHE_PATHS.tiles },
        },
      },
      "taskToken.$": "$$.Task.Token",
    };
    const { stateMachineArn } = await sfn.send(
      new CreateStateMachineCommand({
        name: "pipeline",
        roleArn: "arn:aws:iam::123456789012:role/pipeline",
        definition: JSON.stringify({
          StartAt: "Publish",
          States: {
            Publish: {
              Type: "Task",
              Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
              Parameters: { FunctionName: caller.invoke, Payload },
              End: true,
            },
          },
        }),
      }),
    );
    const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn, input: "{}" }));
    let execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    for (let i = 0; i < 600 && execution.status === "RUNNING"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    }
    expect(execution.status).toBe("SUCCEEDED");
    expect(JSON.parse(execution.output ?? "{}")).toMatchObject({
      status: "completed",
      result: { services: [{ serviceUrl: expect.stringMatching(/\/Artifact_Invoked\/MapServer$/) }] },
    });
  });

  it("publishes an uploaded CSV as a job: the upload kept in the item-files bucket, the publishing task reading it and keeping the layer", async () => {
    const { body, type } = await multipartBody(
      { f: "json", token: tokens.publisher ?? "", type: "CSV", title: "Artifact sites" },
      { file: { name: "sites.csv", bytes: "name,latitude,longitude\nNorth,48.9,2.3\nSouth,43.3,5.4\n" } },
    );
    const added = (
      await call(`${rest()}/content/users/publisher/addItem`, { body, headers: { "content-type": type } })
    ).json<{ success: boolean; id: string }>();
    expect(added).toMatchObject({ success: true, id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const published = await json(`${rest()}/content/users/publisher/publish`, {
      token: tokens.publisher ?? "",
      itemId: added.id,
      filetype: "csv",
      publishParameters: JSON.stringify({ name: "Artifact_sites" }),
    });
    const [service] = published.services as { serviceurl: string; serviceItemId: string; jobId: string }[];
    expect(service?.serviceurl).toMatch(/\/Hosted\/Artifact_sites\/FeatureServer$/);
    const status = `${rest()}/content/users/publisher/items/${service?.serviceItemId}/status?f=json&jobId=${service?.jobId}&token=${tokens.publisher ?? ""}`;
    let state = await json(status);
    for (let i = 0; i < 600 && state.status === "processing"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = await json(status);
    }
    expect(state).toMatchObject({ status: "completed" });
    const layer = `${system.url}${new URL(service?.serviceurl ?? "").pathname}/0/query`;
    expect(
      await json(layer, { token: tokens.publisher ?? "", where: "1=1", returnCountOnly: "true", f: "json" }),
    ).toEqual({
      count: 2,
    });
    expect(system.standIn.decisions).toContainEqual(
      expect.objectContaining({ caller: "task-publish-hosted", action: "s3:GetObject", allowed: true }),
    );
  });

  it("registers a database through the portal: its password a secret under the stack's prefix, TLS required, the functions' own addresses refused", async () => {
    const add = (connectionString: string, type = "egdb") =>
      json(`${rest()}/content/users/publisher/addItem`, {
        token: tokens.publisher ?? "",
        type: "Data Store",
        title: "Parcels",
        text: JSON.stringify({
          type,
          path: type === "folder" ? "/fileShares/parcels" : "/enterpriseDatabases/parcels",
          info: type === "folder" ? { path: work } : { connectionString },
        }),
      });
    const password = "Artifact-Secret-9";
    // A documentation address (never connected to here): the registration connects to nothing.
    const added = await add(`postgresql://reader:${password}@192.0.2.10:5432/gis`);
    expect(added).toMatchObject({ success: true, id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const id = String(added.id);
    expect(system.standIn.secretNames()).toContain(`${STACK}/datastores/${id}`);
    const data = await json(`${rest()}/content/items/${id}/data?f=json&token=${tokens.publisher ?? ""}`);
    // `prefer` would fall back to plain text: on AWS it is held to `require`.
    expect((data.info as { connectionString: string }).connectionString).toBe(
      "postgresql://reader:********@192.0.2.10:5432/gis?sslmode=require",
    );
    for (const [text, why] of [
      [`postgresql://reader:${password}@127.0.0.1:5432/gis`, /loopback or link-local/],
      [`postgresql://reader:${password}@169.254.169.254:5432/gis`, /loopback or link-local/],
      [`postgresql://reader:${password}@[::ffff:127.0.0.1]:5432/gis`, /loopback or link-local/],
      [`postgresql://reader:${password}@localhost:5432/gis`, /loopback or link-local/],
      [`postgresql://reader:${password}@192.0.2.10:5432/gis?sslmode=disable`, /TLS only/],
    ] as const) {
      const refused = await add(text);
      expect(refused, text).toMatchObject({ error: { code: 400, details: [expect.stringMatching(why)] } });
      expect(JSON.stringify(refused)).not.toContain(password);
    }
    expect(await add("", "folder")).toMatchObject({
      error: { details: [expect.stringMatching(/cannot be registered on this deployment/)] },
    });
    // A store whose host became a local address behind mapgate's back (its record changed in the table) is
    // refused where it is connected to: the secret is read, and it was entered for another host, so no connection
    // is made and no password goes there (a name that re-resolves to a local address is refused by the address
    // rule at connection, as test/datastore-registration.test.ts shows).
    const ddb = new DynamoDBClient({ endpoint: dynamo.endpoint, region: REGION });
    await ddb.send(
      new UpdateItemCommand({
        TableName: localTableName("datastores"),
        Key: { datastoreId: { S: id }, entry: { S: "#" } },
        UpdateExpression: "SET #c.host = :h",
        ExpressionAttributeNames: { "#c": "connection" },
        ExpressionAttributeValues: { ":h": { S: "127.0.0.1" } },
      }),
    );
    ddb.destroy();
    const validated = await post("/datastores/validate", "publisher", { datastoreId: id, serverId: org.serverId });
    expect(validated).toEqual({ status: expect.stringMatching(/entered for another host, port, database or user/) });
    expect(system.standIn.decisions).toContainEqual({
      caller: "datastore-manage",
      action: "secretsmanager:GetSecretValue",
      resource: expect.stringContaining(`:secret:${STACK}/datastores/${id}-`),
      allowed: true,
    });
    const deleted = await json(`${rest()}/content/users/publisher/items/${id}/delete`, {
      token: tokens.publisher ?? "",
    });
    expect(deleted).toMatchObject({ success: true });
    expect(system.standIn.secretNames()).not.toContain(`${STACK}/datastores/${id}`);
    for (const h of system.hosts.values()) expect(h.logs.join("\n"), h.fn.id).not.toContain(password);
  });

  it("wrote one EMF metric line per request from the bundles, by the specification's schema", () => {
    const service = [...system.hosts.values()].find((h) => h.fn.id === "service");
    const docs = emfLines(service?.logs ?? []);
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) checkEmf(doc);
    // The template's MAPGATE_STACK names the deployment; the route key names the operation.
    expect(new Set(docs.map((d) => `${String(d.Stack)} ${String(d.Operation)} ${String(d.Kind)}`))).toEqual(
      new Set([`${STACK} service read`]),
    );
    expect(docs.some((d) => d.Served === 1 && d.Resource === "tile")).toBe(true);
    const jobs = emfLines([...system.hosts.values()].flatMap((h) => h.logs)).filter((d) => "Jobs" in d);
    expect(jobs.map((d) => d.Outcome)).toEqual(expect.arrayContaining(["completed", "failed"]));
  });

  it("made no call the template's policies refuse, and logged no error, on all of the above", () => {
    expect(denied()).toEqual([]);
    expect(system.invokeDenials).toEqual([]);
    expect(system.standIn.unknown).toEqual([]);
    expect(errorLogs()).toEqual([]);
    // Every kind of call the functions make went through the policy check, from routes and workflow tasks.
    expect([...new Set(system.standIn.decisions.map((d) => d.action))]).toEqual(
      expect.arrayContaining([
        "secretsmanager:GetSecretValue",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:ConditionCheckItem",
        "dynamodb:PutItem",
        "states:StartExecution",
        "s3:ListBucket",
        "s3:GetObject",
        "events:PutEvents",
        "states:SendTaskSuccess",
        "secretsmanager:CreateSecret",
        "secretsmanager:DeleteSecret",
      ]),
    );
    expect([...new Set(system.standIn.decisions.map((d) => d.caller))]).toEqual(
      expect.arrayContaining(WORKFLOW.tasks.map((t) => t.id)),
    );
  });
});

describe("what the template does not allow is refused", () => {
  it("refuses a function reading a bucket the stack was not told about, as S3 would", async () => {
    const answer = await post("/datastores/describe", "publisher", {
      datastoreId: org.elsewhereStore,
      serverId: org.serverId,
      path: "/caches/tiles",
      type: "folder",
    });
    expect(answer).toMatchObject({ error: { code: 500 } });
    expect(denied()).toEqual([
      { caller: "datastore-describe", action: "s3:ListBucket", resource: `arn:aws:s3:::${ELSEWHERE}`, allowed: false },
    ]);
  });

  it("answers each service's AccessDenied to calls outside a function's grants", async () => {
    const as = (id: string) => {
      const fn = system.functions.find((f) => f.id === id);
      if (!fn) throw new Error(id);
      return { endpoint: system.standIn.endpoint, region: REGION, credentials: system.standIn.credentialsOf(fn) };
    };
    const env = (name: string) => system.functions.find((f) => f.environment[name])?.environment[name] ?? "";
    const before = denied().length;
    // community-self reads tokens (the pipeline does) but may not write them, and may not read jobs at all.
    const ddb = new DynamoDBClient(as("community-self"));
    const key = { pk: { S: "x" }, sk: { S: "y" } };
    await expect(
      ddb.send(new PutItemCommand({ TableName: localTableName("tokens"), Item: key })),
    ).rejects.toMatchObject({
      name: "AccessDeniedException",
      message: expect.stringMatching(
        /assumed-role\/.+ is not authorized to perform: dynamodb:PutItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table\/mapgate-tokens /,
      ),
    });
    await ddb.send(new GetItemCommand({ TableName: localTableName("tokens"), Key: key }));
    await expect(
      ddb.send(new GetItemCommand({ TableName: localTableName("jobs"), Key: { jobId: { S: "x" } } })),
    ).rejects.toMatchObject({ name: "AccessDeniedException" });
    ddb.destroy();
    // Workflow tasks hold no grant on the token key; a route that starts no job may not start executions.
    const secrets = new SecretsManagerClient(as("task-complete-job"));
    await expect(
      secrets.send(new GetSecretValueCommand({ SecretId: env("TOKEN_KEY_SECRET_ID") })),
    ).rejects.toMatchObject({ name: "AccessDeniedException" });
    secrets.destroy();
    // Registering writes data stores' secrets and never reads one; connecting reads them and never writes.
    const writer = new SecretsManagerClient(as("item-add"));
    await expect(
      writer.send(new GetSecretValueCommand({ SecretId: `${STACK}/datastores/${"0".repeat(32)}` })),
    ).rejects.toMatchObject({ name: "AccessDeniedException" });
    writer.destroy();
    const reader = new SecretsManagerClient(as("datastore-manage"));
    await expect(
      reader.send(new CreateSecretCommand({ Name: `${STACK}/datastores/${"0".repeat(32)}`, SecretString: "{}" })),
    ).rejects.toMatchObject({ name: "AccessDeniedException" });
    reader.destroy();
    const sfn = new SFNClient(as("item-search"));
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: env("STATE_MACHINE_ARN"), name: "x" })),
    ).rejects.toMatchObject({ name: "AccessDeniedException" });
    sfn.destroy();
    expect(
      denied()
        .slice(before)
        .map((d) => `${d.caller} ${d.action}`),
    ).toEqual([
      "community-self dynamodb:PutItem",
      "community-self dynamodb:GetItem",
      "task-complete-job secretsmanager:GetSecretValue",
      "item-add secretsmanager:GetSecretValue",
      "datastore-manage secretsmanager:CreateSecret",
      "item-search states:StartExecution",
    ]);
  });

  it("serves the home page, the health check and the map viewer with its files, copied beside its bundle by the synth", async () => {
    expect(await json(`${system.url}/health?f=json`)).toMatchObject({ status: "ok", store: "answering" });
    expect(await json(`${system.url}/?f=json`)).toMatchObject({ servers: [{ name: "arcgis" }] });
    const lib = await call(`${system.url}/viewer/maplibre-gl.js`);
    expect([lib.status, lib.headers["content-type"]]).toEqual([200, "text/javascript; charset=utf-8"]);
    expect(lib.body.length).toBeGreaterThan(100_000);
    const page = await call(
      `${system.url}/viewer/map?url=${encodeURIComponent("/arcgis/rest/services/World_Basemap/MapServer")}`,
    );
    expect(page.text).toContain('<script src="/viewer/viewer.js" defer></script>');
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
  });

  it("lets API Gateway invoke every route's function, the $default route's included (unmatched paths: the 404 envelope)", async () => {
    // API Gateway invokes a route's function as `<api>/<stage>/<METHOD>/<path>` and the $default route's as
    // `<api>/<stage>/$default`: an API-wide `<api>/*/*/*` permission alone would leave the latter a bare 500.
    expect(system.uninvokableRoutes()).toEqual([]);
    const answer = await call(`${system.url}/no/such/path?f=json`);
    expect(answer.json()).toMatchObject({ error: { code: 404 } });
    expect(system.invokeDenials).toEqual([]);
  });
});
