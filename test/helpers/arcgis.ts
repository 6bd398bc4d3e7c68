import { spawn } from "node:child_process";
import { join } from "node:path";
import { PASSWORDS, ROOT, type RunningEngine } from "./engine.ts";

export interface Step {
  url: string;
  params?: Record<string, unknown>;
  httpMethod?: "GET" | "POST";
  rawText?: boolean;
}

/**
 * Runs a client script (test/clients/…) in its own Node process, which trusts the engine's certificate, signed
 * in as `username`; the script reads `{portal, username, password, …input}` and prints a JSON array.
 */
function runClient(
  script: string,
  engine: RunningEngine,
  username: string,
  password: string,
  input: Record<string, unknown>,
  nodeArgs: readonly string[] = [],
): Promise<unknown[]> {
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, "test/clients", script)], {
    cwd: ROOT,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: engine.ready.cert },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (c: Buffer) => out.push(c));
  child.stderr.on("data", (c: Buffer) => err.push(c));
  child.stdin.end(
    JSON.stringify({ portal: `${engine.ready.https}/portal/sharing/rest`, username, password, ...input }),
  );
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`client exited ${code}: ${Buffer.concat(err).toString()}`));
      else resolve(JSON.parse(Buffer.concat(out).toString("utf8")) as unknown[]);
    });
  });
}

/** Runs steps through the real ArcGIS REST JS client (see test/clients/arcgis-steps.ts). */
export function arcgisSteps(
  engine: RunningEngine,
  username: string,
  password: string,
  steps: Step[],
): Promise<unknown[]> {
  return runClient("arcgis-steps.ts", engine, username, password, { steps });
}

/** Calls @esri/arcgis-rest-portal's helpers (see test/clients/arcgis-portal.ts). */
export function portalCalls(
  engine: RunningEngine,
  username: string,
  password: string,
  calls: { fn: string; options: Record<string, unknown> }[],
  { asInBrowser = false }: { asInBrowser?: boolean } = {},
): Promise<unknown[]> {
  // REST JS sends files as FormData. Under Node its form-data package resolves to a Node ponyfill whose FormData
  // this Node's fetch does not encode (it sends "[object FormData]" as text/plain); a browser app gets the
  // platform's own FormData, which the `browser` export condition gives here too.
  return runClient(
    "arcgis-portal.ts",
    engine,
    username,
    password,
    { calls },
    asInBrowser ? ["--conditions=browser"] : [],
  );
}

/** Calls @esri/arcgis-rest-feature-service's service definition helpers (see test/clients/arcgis-define.ts). */
export function defineCalls(
  engine: RunningEngine,
  username: string,
  password: string,
  calls: { fn: string; options: Record<string, unknown> }[],
): Promise<unknown[]> {
  return runClient("arcgis-define.ts", engine, username, password, { calls });
}

/**
 * Calls @esri/arcgis-rest-feature-service's attachment helpers (see test/clients/arcgis-attachments.ts), with the
 * platform's FormData as a browser app has it (the `browser` export condition, as portalCalls' files).
 */
export function attachmentCalls(
  engine: RunningEngine,
  username: string,
  password: string,
  calls: { fn: string; options: Record<string, unknown> }[],
): Promise<unknown[]> {
  return runClient("arcgis-attachments.ts", engine, username, password, { calls }, ["--conditions=browser"]);
}

/**
 * A hosted service `name` of one point layer, Sites (OBJECTID and a Name of up to 20 characters), created and
 * defined by the publisher through REST JS as a client does: its item id.
 */
export async function definePointService(engine: RunningEngine, name: string): Promise<string> {
  const [created] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
    { fn: "createFeatureService", options: { item: { name, capabilities: "Query" } } },
  ])) as [Record<string, unknown>];
  await defineCalls(engine, "publisher", PASSWORDS.publisher, [
    {
      fn: "addToServiceDefinition",
      options: {
        url: `${engine.ready.https}/arcgis/rest/services/Hosted/${name}/FeatureServer`,
        layers: [
          {
            name: "Sites",
            type: "Feature Layer",
            geometryType: "esriGeometryPoint",
            objectIdField: "OBJECTID",
            fields: [
              { name: "OBJECTID", type: "esriFieldTypeOID" },
              { name: "Name", type: "esriFieldTypeString", length: 20 },
            ],
          },
        ],
      },
    },
  ]);
  return String(created.itemId);
}
