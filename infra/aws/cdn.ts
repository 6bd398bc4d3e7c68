// The CDN in front of the HTTP API. Everything passes through uncached except what mapgate says may be shared:
// `Cache-Control: public`, which it sets only on content of public services answered to a request that carries no
// credential (shared/http/pipeline.ts). Only the services' paths are cacheable at all, keyed on the path, every
// query parameter but `token`, the request's `Origin` and the gzip-normalized Accept-Encoding; never a token, a
// header's credential or a cookie. A request that carries any of those is marked by a viewer-request function, and the mark is part of
// the key: such requests never share an entry with anonymous ones, and their answers (private) are never stored.
import { Duration, Stack, Validations } from "aws-cdk-lib";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { EDGE_KEY_HEADER, VIEWER_ADDRESS_HEADER } from "#shared/http/edge.ts";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  AllowedMethods,
  CacheCookieBehavior,
  CachedMethods,
  CacheHeaderBehavior,
  CachePolicy,
  CacheQueryStringBehavior,
  Distribution,
  Function as CloudFrontFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestCookieBehavior,
  OriginRequestHeaderBehavior,
  OriginRequestPolicy,
  OriginRequestQueryStringBehavior,
  OriginSslPolicy,
  PriceClass,
  ViewerProtocolPolicy,
} from "aws-cdk-lib/aws-cloudfront";
import { HttpOrigin } from "aws-cdk-lib/aws-cloudfront-origins";
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from "aws-cdk-lib/aws-s3";
import type { RemovalPolicy } from "aws-cdk-lib";
import { Construct } from "constructs";

/**
 * The longest the CDN keeps an answer, whatever its max-age says: a service that stops being public (unshared,
 * deleted) is no longer served from the CDN at most this long after. Browsers keep their own copies for max-age.
 */
export const CDN_MAX_TTL_SECONDS = 300;

/** The paths whose answers may be cached: every published service and its content. */
export const CACHED_PATH = "/*/rest/services/*";

/** Set by the viewer-request function on a request carrying any credential; part of the cache key. */
export const CREDENTIALS_HEADER = "x-mapgate-credentials";

/**
 * The viewer-request function (CloudFront Functions, JavaScript 2.0 runtime), on every request. It passes the
 * viewer's address on (replacing any a viewer sent: the origin believes it only with the edge key CloudFront adds,
 * shared/http/edge.ts), marks credentialed requests (a `token` parameter in any case, either authorization header,
 * any cookie), drops a mark a viewer sent itself, and passes `Authorization` on as `X-Esri-Authorization` (the
 * same Bearer token, which mapgate reads too): CloudFront forwards `Authorization` to the origin of a cached path
 * only when it is in the cache key, where no token may be.
 */
export const VIEWER_REQUEST_CODE = `function handler(event) {
  var request = event.request;
  var headers = request.headers;
  headers['${VIEWER_ADDRESS_HEADER}'] = { value: event.viewer.ip };
  var credentialed = Boolean(headers.authorization || headers['x-esri-authorization']) ||
    Object.keys(request.cookies || {}).length > 0 ||
    Object.keys(request.querystring || {}).some(function (name) { return name.toLowerCase() === 'token'; });
  if (headers.authorization && !headers['x-esri-authorization']) {
    headers['x-esri-authorization'] = { value: headers.authorization.value };
  }
  delete headers['${CREDENTIALS_HEADER}'];
  if (credentialed) headers['${CREDENTIALS_HEADER}'] = { value: '1' };
  return request;
}`;

export interface CdnProps {
  readonly api: HttpApi;
  readonly removalPolicy: RemovalPolicy;
}

export class MapgateCdn extends Construct {
  readonly distribution: Distribution;
  readonly contentPolicy: CachePolicy;
  /** What CloudFront adds to every request it sends to the API, so the API may believe the viewer's address. */
  readonly edgeKey: Secret;

  constructor(scope: Construct, id: string, props: CdnProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.edgeKey = new Secret(this, "EdgeKey", {
      description: "Sent by mapgate's CloudFront distribution with every request to the API (viewer addresses)",
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.edgeKey).acknowledge({
      id: "AwsSolutions-SMG4",
      reason:
        "The distribution holds the edge key as an origin header set at deployment: a rotation outside a deployment would make the API disbelieve every viewer address until the next one.",
    });
    const origin = new HttpOrigin(`${props.api.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`, {
      protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [OriginSslPolicy.TLS_V1_2],
      // A dynamic reference, resolved by CloudFormation: the key is in no template.
      customHeaders: { [EDGE_KEY_HEADER]: this.edgeKey.secretValue.unsafeUnwrap() },
    });
    this.contentPolicy = new CachePolicy(this, "ContentCache", {
      comment: "mapgate: services' content marked Cache-Control: public; never keyed on a credential",
      // Nothing is kept unless the answer says so (max-age), and nothing longer than the promise.
      defaultTtl: Duration.seconds(0),
      minTtl: Duration.seconds(0),
      maxTtl: Duration.seconds(CDN_MAX_TTL_SECONDS),
      queryStringBehavior: CacheQueryStringBehavior.denyList("token"),
      // `Origin` is in the key because the answer's CORS headers depend on it (an allowed origin is echoed, a
      // request without one gets `*`, a refused one none): CloudFront honours no `Vary` but Accept-Encoding, so
      // without it the first origin to fetch a public tile would be the one every other page was answered for.
      // A key header is forwarded to the API too, which is why the origin request policy does not list it.
      headerBehavior: CacheHeaderBehavior.allowList(CREDENTIALS_HEADER, "origin"),
      cookieBehavior: CacheCookieBehavior.none(),
      // mapgate answers gzip to clients that take it (and nothing else): Brotli in the key would only split it.
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: false,
    });
    const forwarded = new OriginRequestPolicy(this, "ContentOrigin", {
      comment: "mapgate: what the origin needs besides the cache key (credentials, referer, cookies)",
      headerBehavior: OriginRequestHeaderBehavior.allowList("x-esri-authorization", "referer", VIEWER_ADDRESS_HEADER),
      queryStringBehavior: OriginRequestQueryStringBehavior.all(),
      cookieBehavior: OriginRequestCookieBehavior.all(),
    });
    const marker = new CloudFrontFunction(this, "MarkCredentials", {
      code: FunctionCode.fromInline(VIEWER_REQUEST_CODE),
      runtime: FunctionRuntime.JS_2_0,
      comment: "mapgate: the viewer's address; marks requests that carry a credential (they bypass the cache)",
    });
    const logs = new Bucket(this, "Logs", {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // CloudFront's standard logs are delivered with an ACL.
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(30) }],
      removalPolicy: props.removalPolicy,
    });
    Validations.of(logs).acknowledge({
      id: "AwsSolutions-S1",
      reason: "This bucket holds the CDN's access logs; logging access to the log bucket itself would recurse.",
    });
    this.distribution = new Distribution(this, "Distribution", {
      comment: `mapgate ${stack.stackName}`,
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket: logs,
      logFilePrefix: "cdn/",
      defaultBehavior: {
        origin,
        allowedMethods: AllowedMethods.ALLOW_ALL,
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
        cachePolicy: CachePolicy.CACHING_DISABLED,
        // API Gateway routes by its own host name: every viewer header but Host.
        originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        functionAssociations: [{ function: marker, eventType: FunctionEventType.VIEWER_REQUEST }],
        compress: false,
      },
      additionalBehaviors: {
        [CACHED_PATH]: {
          origin,
          allowedMethods: AllowedMethods.ALLOW_ALL,
          cachedMethods: CachedMethods.CACHE_GET_HEAD,
          viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
          cachePolicy: this.contentPolicy,
          originRequestPolicy: forwarded,
          functionAssociations: [{ function: marker, eventType: FunctionEventType.VIEWER_REQUEST }],
          compress: true,
        },
      },
    });
    Validations.of(this.distribution).acknowledge({
      id: "AwsSolutions-CFR4",
      reason:
        "The distribution's default *.cloudfront.net certificate takes no minimum TLS version; with a custom domain and its certificate, set TLSv1.2_2021.",
    });
    Validations.of(this.distribution).acknowledge({
      id: "AwsSolutions-CFR1",
      reason: "Public maps are read from anywhere; an organization that must restrict countries adds its own.",
    });
    Validations.of(this.distribution).acknowledge({
      id: "AwsSolutions-CFR2",
      reason:
        "The API's own throttling limits every request; a WAF web ACL (billed per rule and request) is the operator's choice and attaches to this distribution.",
    });
  }

  /** Lets a function read the edge key, and tells it where (EDGE_KEY_SECRET_ID): both or neither. */
  grantTo(fn: LambdaFunction): void {
    this.edgeKey.grantRead(fn);
    fn.addEnvironment("EDGE_KEY_SECRET_ID", this.edgeKey.secretArn);
  }
}
