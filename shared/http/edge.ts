// The caller's address when mapgate's CDN fronts the API: API Gateway then sees one of CloudFront's addresses, a
// different one from request to request, so a token bound to the request's address (`client=requestip`) would
// never match again. The CDN's viewer-request function passes the viewer's own address on, and CloudFront adds the
// stack's edge key (a secret the API's direct callers do not know) to every request it sends: an address is
// believed only with that key. Anything else, and every deployment without a CDN, keeps API Gateway's address.
import { timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
// Imported as the token key's reader imports it (shared/auth/keys.ts), so every bundle holds the client once and
// only the commands it uses: a dynamic import would carry the whole package into every route.
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { config } from "#shared/config.ts";

/** Set by the CDN's viewer-request function: the viewer's address, as CloudFront saw it. */
export const VIEWER_ADDRESS_HEADER = "x-mapgate-viewer-address";
/** Set by CloudFront on every request to the origin: the edge key. */
export const EDGE_KEY_HEADER = "x-mapgate-edge-key";

let edgeKey: Promise<Buffer | undefined> | undefined;

/** The edge key, read once per warm function, and only when a request claims to come through the CDN. */
function loadEdgeKey(): Promise<Buffer | undefined> {
  const secretId = config().edgeKeySecretId;
  if (!secretId) return Promise.resolve(undefined);
  edgeKey ??= new SecretsManagerClient({})
    .send(new GetSecretValueCommand({ SecretId: secretId }))
    .then((out) => (out.SecretString ? Buffer.from(out.SecretString) : undefined));
  // A failed read is not kept: the next request tries again (and meanwhile the API's address is used).
  edgeKey.catch(() => {
    edgeKey = undefined;
  });
  return edgeKey;
}

/**
 * The address the request came from: the viewer's when CloudFront vouches for it, API Gateway's otherwise. Answered
 * at once (no promise) when the request makes no such claim, as nearly every request on a warm read's path does.
 */
export function clientAddress(event: APIGatewayProxyEventV2): string | Promise<string> {
  const own = event.requestContext.http.sourceIp;
  const viewer = event.headers?.[VIEWER_ADDRESS_HEADER];
  const presented = event.headers?.[EDGE_KEY_HEADER];
  if (!viewer || !presented || isIP(viewer) === 0) return own;
  return vouchedAddress(own, viewer, presented);
}

async function vouchedAddress(own: string, viewer: string, presented: string): Promise<string> {
  const key = await loadEdgeKey().catch(() => undefined);
  const given = Buffer.from(presented);
  return key && key.length === given.length && timingSafeEqual(key, given) ? viewer : own;
}
