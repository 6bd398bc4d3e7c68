// Route families: a route whose greedy `{name+}` serves several operations declares them in the description, in
// API Gateway's `{name}` notation. Every declared operation is served by the family's handler (one matcher,
// shared/http/router.ts), reaches that family's route in the synthesized API (no other route takes its path), and
// anything else under the route is the one 404.
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MapgateStack } from "#infra/aws/stack.ts";
import {
  INVOCATION,
  invokedRoute,
  type InvokedOperation,
  routeKeys as keysOf,
  ROUTES,
  type RouteSpec,
  SERVICE_DEFINITION,
} from "#shared/system.ts";
import { compileTemplates, fillTemplate, type Matcher } from "#shared/http/router.ts";
import { type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call } from "./helpers/http.ts";

const FAMILIES = ROUTES.filter((r): r is RouteSpec & { operations: readonly string[] } => r.operations !== undefined);

/** "accept" fits every parameter's shape: an id (letters and digits), a user name, a decision. */
const SAMPLE = "accept";

/** The greedy parameter's name: `path` of `{path+}`. */
const greedyOf = (route: RouteSpec) => /\{(\w+)\+\}$/.exec(route.path)?.[1];

/** A request path the operation's template describes, under its family's route. */
const samplePath = (route: RouteSpec, template: string) =>
  fillTemplate(route.path.replace(/\{\w+\+\}$/, template), (name) => (name === "portalId" ? "self" : SAMPLE));

/**
 * The route API Gateway picks for a path among the API's route keys: the most specific match, segment by
 * segment a literal before a `{name}` before a greedy `{name+}`.
 */
function selectRoute(keys: readonly string[], path: string): string | undefined {
  const parts = path.split("/");
  const ranked = keys.flatMap((key) => {
    const segments = (key.split(" ")[1] ?? "").split("/");
    const rank: number[] = [];
    for (const [i, s] of segments.entries()) {
      const part = parts[i];
      if (part === undefined) return [];
      if (s.endsWith("+}")) {
        rank.push(0);
        return i < parts.length ? [{ key, rank }] : [];
      }
      if (s.startsWith("{")) rank.push(1);
      else if (s === part) rank.push(2);
      else return [];
    }
    return segments.length === parts.length ? [{ key, rank }] : [];
  });
  const better = (a: number[], b: number[]) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return (a[i] ?? 0) > (b[i] ?? 0);
    return a.length > b.length;
  };
  return ranked.reduce<(typeof ranked)[number] | undefined>(
    (best, r) => (!best || better(r.rank, best.rank) ? r : best),
    undefined,
  )?.key;
}

let routeKeys: string[];
const routesOf = (stack: MapgateStack) => {
  if (!stack.routes) throw new Error("the stack made no routes' stack");
  return stack.routes;
};
beforeAll(() => {
  // Bundling is skipped (the synth command bundles for real); the API's routes are what CloudFormation gets.
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new MapgateStack(app, "mapgate-families", { cloudStoreBuckets: ["mapgate-caches-test"] });
  // The routes are in their nested stack (infra/aws/api.ts).
  const resources = Template.fromStack(routesOf(stack)).toJSON().Resources as Record<
    string,
    { Type: string; Properties: Record<string, unknown> }
  >;
  routeKeys = Object.values(resources)
    .filter((r) => r.Type === "AWS::ApiGatewayV2::Route")
    .map((r) => String(r.Properties.RouteKey));
  // Synthesizing the stack takes ~15 s alone, minutes on cores other suites share.
}, 300_000);

describe("route families", () => {
  it("are the routes with a greedy parameter: community, content and data store operations", () => {
    expect(FAMILIES.map((r) => r.id).sort()).toEqual(["community-groups", "content-groups", "datastore-manage"]);
    for (const route of FAMILIES) expect(greedyOf(route), route.id).toBeDefined();
  });

  it("serve exactly the operations the description declares, each template matched as itself", async () => {
    for (const route of FAMILIES) {
      const mod = (await import(`../functions/${route.handler ?? route.id}.ts`)) as {
        handler: { matcher: Matcher<unknown> };
      };
      expect(mod.handler.matcher.templates, route.id).toEqual(route.operations);
      for (const template of route.operations) {
        const sub = fillTemplate(template, () => SAMPLE);
        expect(mod.handler.matcher.match(sub)?.template, `${route.id} ${sub}`).toBe(template);
      }
    }
  });

  it("reach their family's route in the synthesized API, which no other route shadows", () => {
    for (const route of FAMILIES) {
      expect(routeKeys, route.id).toContain(`ANY ${route.path}`);
      for (const template of route.operations) {
        expect(selectRoute(routeKeys, samplePath(route, template)), `${route.id} ${template}`).toBe(
          `ANY ${route.path}`,
        );
      }
    }
  });

  it("send a feature service's updateDefinition to the function that can make it: Hosted to the uploads function, any other folder and the root to the service function (it reaches data stores' databases)", () => {
    const servedBy = (path: string) => {
      const key = selectRoute(routeKeys, path);
      return ROUTES.find((r) => key !== undefined && keysOf(r).includes(key))?.id;
    };
    const admin = "/arcgis/rest/admin/services";
    expect(servedBy(`${admin}/Hosted/Sites/FeatureServer/updateDefinition`)).toBe("item-add");
    expect(servedBy(`${admin}/World/places_1a2b3c/FeatureServer/updateDefinition`)).toBe("service");
    expect(servedBy(`${admin}/places_1a2b3c/FeatureServer/updateDefinition`)).toBe("service");
    // Every other admin operation stays on the uploads function's greedy route, whatever the folder.
    for (const path of [
      `${admin}/World/places_1a2b3c/FeatureServer/addToDefinition`,
      `${admin}/World/places_1a2b3c/FeatureServer/0/updateDefinition`,
      `${admin}/Hosted/Sites/FeatureServer/0/updateDefinition`,
      `${admin}/Hosted/Sites/FeatureServer/addToDefinition`,
    ])
      expect(servedBy(path), path).toBe("item-add");
    // The service function holds what asking a database takes (its password; on AWS its network).
    const service = ROUTES.find((r) => r.id === "service");
    expect(service?.readsStorage).toBe(true);
    expect(keysOf(service as RouteSpec)).toEqual(
      expect.arrayContaining([`POST ${SERVICE_DEFINITION.inFolder}`, `POST ${SERVICE_DEFINITION.atRoot}`]),
    );
  });

  it("invoke only declared operations from the operations function", () => {
    for (const operation of Object.keys(INVOCATION.operations) as InvokedOperation[]) {
      const { route: id, path } = invokedRoute(operation);
      const route = ROUTES.find((r) => r.id === id);
      if (path !== undefined) expect(route?.operations, operation).toContain(path);
    }
  });

  it("match a path in time linear in its length, and only whole segments of the declared shapes", () => {
    const m = compileTemplates({ "groups/{groupId}": 1, "groups/{groupId}/users": 2 }, { groupId: /^[a-z]{1,4}$/ });
    expect(m.match("groups/abc")?.params).toEqual({ groupId: "abc" });
    expect(m.match("groups/abc/users")?.value).toBe(2);
    for (const miss of ["groups/abcde", "groups/abc/", "groups//users", "groups", "/groups/abc", "groups/ab/c"]) {
      expect(m.match(miss), miss).toBeUndefined();
    }
    const long = `groups/${"a/".repeat(200_000)}users`;
    const started = performance.now();
    expect(m.match(long)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe("a path no operation of a family serves", () => {
  let engine: RunningEngine;
  beforeAll(async () => {
    engine = await startEngine();
  });
  afterAll(() => engine.stop());

  it("gets the one 404 envelope, whatever the family", async () => {
    const rest = `${engine.ready.https}/portal/sharing/rest`;
    for (const path of [
      "/community/groups/abc/nothing",
      "/community/groups/abc/applications/u/maybe",
      `/community/groups/${"a".repeat(65)}`,
      "/community/users/u/invitations/abc/maybe",
      "/content/groups",
      "/content/items/abc/groups/more",
      "/portals/self/datastores/nothing",
      "/portals/self/datastores/allDatasets/nothing",
    ]) {
      const res = await call(`${rest}${path}?f=json`, { ca: engine.ca });
      expect(res.json(), path).toEqual({
        error: {
          code: 404,
          message: "Resource does not exist or is inaccessible.",
          details: [`Nothing is served at GET /portal/sharing/rest${path}.`],
        },
      });
    }
  });
});
