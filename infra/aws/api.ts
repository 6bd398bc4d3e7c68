// The API's routes, each with its integration and its function's invoke permission, in a nested stack of their own.
// CloudFormation refuses a stack of more than 500 resources: each route and alias is one resource, each function's
// integration and permission one more each, and they grow with every operation mapgate learns. The API itself, its
// stage and the functions stay in the parent: the CDN in front of the API is named in the functions' variables, so
// a nested stack holding the API and the routes together would depend on itself through them.
import { NestedStack, Validations } from "aws-cdk-lib";
import { type HttpApi, HttpMethod, HttpRoute, HttpRouteKey } from "aws-cdk-lib/aws-apigatewayv2";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Construct } from "constructs";
import { type RouteSpec, routeAddresses } from "#shared/system.ts";

export interface MapgateRoutesProps {
  readonly api: HttpApi;
}

const pascal = (id: string) => id.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

export class MapgateRoutes extends NestedStack {
  private readonly api: HttpApi;

  constructor(scope: Construct, id: string, props: MapgateRoutesProps) {
    super(scope, id);
    this.api = props.api;
  }

  /** A declared route's paths and methods (its aliases too), all reaching `fn` through one integration. */
  route(route: RouteSpec, fn: IFunction): void {
    const name = pascal(route.id);
    // One invoke permission per function (for this API), not one per route and method: GET+POST routes would
    // otherwise spend two permissions on every function.
    // The $default route's function keeps a route-scoped permission (`<api>/*/*`): API Gateway invokes it as
    // `<api>/<stage>/$default`, which the API-wide `<api>/*/*/*` does not match.
    const integration = new HttpLambdaIntegration(`${name}Integration`, fn, {
      scopePermissionToRoute: route.methods === "$default",
    });
    const httpApi = this.api;
    const routes =
      route.methods === "$default"
        ? [new HttpRoute(this, `${name}Route`, { httpApi, routeKey: HttpRouteKey.DEFAULT, integration })]
        : // An alias (`alsoAt`) is one more route on the same integration and function: one resource, not seven.
          // An alias may take fewer methods than its route (a POST-only operation): one route per method it takes.
          routeAddresses(route).flatMap(({ path, methods, any }) => {
            const scope = new Construct(this, `${name}${path}`);
            return (any ? [HttpMethod.ANY] : methods.map((m) => HttpMethod[m])).map(
              (method) =>
                new HttpRoute(scope, method, { httpApi, routeKey: HttpRouteKey.with(path, method), integration }),
            );
          });
    for (const r of routes) {
      Validations.of(r).acknowledge({
        id: "AwsSolutions-APIG4",
        reason:
          "ArcGIS clients send tokens as form fields, query parameters, headers or a cookie; each function verifies them in the shared pipeline, which an API Gateway authorizer cannot do for form bodies.",
      });
    }
  }
}
