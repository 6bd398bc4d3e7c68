// The pipeline's state, carried in middy's `request.internal` (a fresh object per request): each middleware adds
// what it learned as one whole, typed value, so a later step reads a complete value or knows the earlier step did
// not run. Error and log steps run whatever happened before them, which is why every slot may be absent.
import type { MiddlewareObj, Request } from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import type { Params } from "#shared/http/params.ts";
import type { Invocation, RestRequest } from "#shared/http/pipeline/request.ts";
import type { Rendering } from "#shared/http/render.ts";

/** What normalize() read from the request, once its parameters and format were valid. */
export interface Normalized {
  readonly params: Params;
  /** One of the operation's contentFormats when `f` asked for it (the rendering is then json, for errors). */
  readonly contentFormat: string | undefined;
  readonly origin: string;
  readonly httpsOrigin: string;
}

export type PipelineState = {
  /** accessLog(): when the request arrived (performance.now()). */
  started?: number;
  /**
   * normalize(): how answers are rendered. Set as soon as the format is known, before normalize() may still refuse
   * the request, so that its error is rendered in that format.
   */
  rendering?: Rendering;
  /** normalize(): the request's parameters and origins. */
  normalized?: Normalized;
  /** caller(): Set-Cookie values every answer carries (a stale sign-in cookie's clearing, a first form's CSRF). */
  cookies?: string[];
  /**
   * caller(), or errorEnvelope() for a request refused before its organization was known: the CORS headers every
   * answer to it carries (shared/http/cors.ts).
   */
  cors?: Record<string, string>;
  /** caller(): the request as the compute step sees it. */
  request?: RestRequest;
  /** caller(): a browser's GET of a POST-only operation, answered with its form instead of running it. */
  showForm?: true;
  /** compute(): what the operation answered, rendered by respond(). */
  answer?: object;
  /** errorEnvelope(): the error code answered, for the access log. */
  errorCode?: number;
};

/**
 * The Lambda context as the pipeline accepts it: the operations function passes the caller IAM identified
 * (functions/operations.ts), which replaces any credential in the request.
 */
export type RestContext = Context & { mapgate?: { invocation?: Invocation } };

export type RestMiddyRequest = Request<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  RestContext,
  PipelineState
>;
export type RestMiddleware = MiddlewareObj<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  RestContext,
  PipelineState
>;

/**
 * A slot a step relies on: the chain's order puts it there before the step runs, so its absence is a fault in
 * how the chain was assembled (an internal error), never the caller's.
 */
export function ran<T>(slot: T | undefined, step: string): T {
  if (slot === undefined) throw new Error(`pipeline state missing: ${step}() did not run`);
  return slot;
}
