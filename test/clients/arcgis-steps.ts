// Runs a list of `request()` calls with the real ArcGIS REST JS client, signed in with
// ArcGISIdentityManager, and prints each answer (or error) as JSON. Input: JSON on stdin
// {portal, username, password, steps: [{url, params?, httpMethod?, rawText?}]}. Step URLs may use
// {roleId} (the id returned by the last call that answered an `id`). Needs NODE_EXTRA_CA_CERTS.
import { request } from "@esri/arcgis-rest-request";
import { signedIn } from "./signed-in.ts";

interface Step {
  url: string;
  params?: Record<string, unknown>;
  httpMethod?: "GET" | "POST";
  rawText?: boolean;
}

const { input, session } = await signedIn<{ steps: Step[] }>();
const results: unknown[] = [];
let lastId = "";
for (const step of input.steps) {
  const url = step.url.replace("{roleId}", lastId);
  try {
    if (step.rawText) {
      const res = (await request(url, {
        authentication: session,
        params: step.params ?? {},
        httpMethod: step.httpMethod ?? "POST",
        rawResponse: true,
      })) as unknown as Response;
      results.push({ contentType: res.headers.get("content-type"), text: await res.text() });
    } else {
      const body = (await request(url, {
        authentication: session,
        params: step.params ?? {},
        httpMethod: step.httpMethod ?? "POST",
      })) as Record<string, unknown>;
      if (typeof body.id === "string") lastId = body.id;
      results.push(body);
    }
  } catch (err) {
    results.push({
      error: { name: (err as Error).name, code: (err as { code?: unknown }).code, message: (err as Error).message },
    });
  }
}
process.stdout.write(`${JSON.stringify(results)}\n`);
