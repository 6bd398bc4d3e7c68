// The local store path without sockets. Loading this module (the engine loads it before any handler or store
// module) registers, process-wide, the SDK client options shared/stores/dynamo.ts builds its one client with:
//   - a request handler that answers a request addressed to a store this process runs (by the host and port of
//     its endpoint, AWS_ENDPOINT_URL_DYNAMODB) by calling that store's transaction layer directly, and sends any
//     other request over HTTP exactly as the SDK's own handler would;
//   - a SigV4 signer that skips signing for those same requests (nothing in-process checks a signature) and
//     signs all others as the SDK's own signer does.
// The SDK still serialises each command to DynamoDB's JSON and parses DynamoDB's JSON answer (dynalite's own
// bytes), so validation errors, condition failures and their exception classes are the same as over HTTP.
// On AWS nothing loads this module and the client is the SDK's default.
import { AwsSdkSigV4Signer } from "@aws-sdk/core/httpAuthSchemes";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { HttpHandlerOptions, HttpRequest, HttpResponse } from "@smithy/types";
import type { StoreCall } from "./store-call.ts";
import { OWN_HEADERS } from "./transactions.ts";

/** Read by shared/stores/dynamo.ts: options merged into its client's configuration when present. */
const CLIENT_CONFIG = Symbol.for("mapgate.dynamodb.clientConfig");
/** The stores this process runs, by `host:port` of their endpoint; shared by every copy of this module. */
const STORES = Symbol.for("mapgate.dynamodb.inProcessStores");

type Global = { [CLIENT_CONFIG]?: object; [STORES]?: Map<string, StoreCall> };
const global = globalThis as Global;
const stores = (global[STORES] ??= new Map<string, StoreCall>());

const keyOf = (hostname: string, port: number | string | undefined) => `${hostname}:${port ?? ""}`;
const storeFor = (request: HttpRequest) => stores.get(keyOf(request.hostname, request.port));

/** Makes the store at `endpoint` answer this process's clients in-process; returns its unregistration. */
export function registerInProcessStore(endpoint: string, handle: StoreCall): () => void {
  const url = new URL(endpoint);
  const key = keyOf(url.hostname, url.port);
  stores.set(key, handle);
  return () => {
    if (stores.get(key) === handle) stores.delete(key);
  };
}

/** The store registered at `endpoint` in this thread, if any (the engine answers its worker threads' calls with it). */
export function inProcessStore(endpoint: string): StoreCall | undefined {
  const url = new URL(endpoint);
  return stores.get(keyOf(url.hostname, url.port));
}

const header = (request: HttpRequest, name: string): string | undefined => {
  for (const [k, v] of Object.entries(request.headers)) if (k.toLowerCase() === name) return v;
  return undefined;
};

const bodyOf = (body: unknown): Buffer => {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new Error("an in-process DynamoDB request must have a string or byte body");
};

class InProcessHandler {
  #http: NodeHttpHandler | undefined;

  get #fallback(): NodeHttpHandler {
    return (this.#http ??= new NodeHttpHandler());
  }

  async handle(request: HttpRequest, options: HttpHandlerOptions = {}): Promise<{ response: HttpResponse }> {
    const store = storeFor(request);
    if (!store) return this.#fallback.handle(request as Parameters<NodeHttpHandler["handle"]>[0], options);
    if (options.abortSignal?.aborted) {
      throw Object.assign(new Error("Request aborted"), { name: "AbortError" });
    }
    // What dynalite needs to accept the request; the content type is the client's own, as over HTTP.
    const headers = {
      ...OWN_HEADERS,
      "content-type": header(request, "content-type") ?? "",
    };
    const answer = await store(header(request, "x-amz-target") ?? "", headers, bodyOf(request.body));
    return { response: { statusCode: answer.status, headers: answer.headers, body: answer.body } };
  }

  updateHttpClientConfig(key: never, value: never): void {
    this.#fallback.updateHttpClientConfig(key, value);
  }

  httpHandlerConfigs() {
    return this.#fallback.httpHandlerConfigs();
  }

  destroy(): void {
    this.#http?.destroy();
    this.#http = undefined;
  }
}

type Signer = AwsSdkSigV4Signer;
const sigv4 = new AwsSdkSigV4Signer();
const signer: Pick<Signer, "sign" | "errorHandler" | "successHandler"> = {
  sign: (request, identity, properties) =>
    storeFor(request as HttpRequest) ? Promise.resolve(request) : sigv4.sign(request, identity, properties),
  errorHandler: (properties) => sigv4.errorHandler(properties),
  successHandler: (response, properties) => sigv4.successHandler(response, properties),
};

global[CLIENT_CONFIG] ??= {
  requestHandler: new InProcessHandler(),
  httpAuthSchemes: [
    {
      schemeId: "aws.auth#sigv4",
      identityProvider: (config: { getIdentityProvider(id: string): unknown }) =>
        config.getIdentityProvider("aws.auth#sigv4"),
      signer,
    },
  ],
};

/** The options every SDK client of this process gets to reach its stores in-process (for tests). */
export const inProcessClientOptions = global[CLIENT_CONFIG];
