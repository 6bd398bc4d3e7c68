// The local bus's event patterns, case by case as EventBridge documents them: what a rule matches locally is what
// it would match on AWS.
import { describe, expect, it } from "vitest";
import { matchesPattern, patternProblem } from "#infra/local/event-patterns.ts";

const event = {
  source: "mapgate",
  "detail-type": "Job Completed",
  detail: {
    operation: "publish",
    portalId: "p1",
    size: 42,
    file: "map.png",
    result: { services: [{ type: "Map Service" }, { type: "Scene Service" }] },
    tags: ["a", ["b", "c"]],
  },
};

describe("event patterns", () => {
  it.each([
    [{ source: ["mapgate"] }, true],
    [{ source: ["other"] }, false],
    [{ source: ["mapgate"], detail: { operation: ["publish", "describe"] } }, true],
    [{ detail: { operation: [{ prefix: "pub" }] } }, true],
    [{ detail: { file: [{ suffix: ".png" }] } }, true],
    [{ detail: { file: [{ "anything-but": { suffix: ".png" } }] } }, false],
    [{ detail: { operation: [{ "anything-but": { prefix: "pub" } }] } }, false],
    [{ detail: { operation: [{ "anything-but": { "equals-ignore-case": "PUBLISH" } }] } }, false],
    [{ detail: { operation: [{ "anything-but": ["describe"] }] } }, true],
    [{ detail: { operation: [{ "equals-ignore-case": "PUBLISH" }] } }, true],
    [{ detail: { size: [{ numeric: [">", 40, "<=", 42] }] } }, true],
    [{ detail: { size: [{ numeric: [">", 42] }] } }, false],
    [{ detail: { missing: [{ exists: false }] } }, true],
    [{ detail: { operation: [{ exists: false }] } }, false],
    [{ detail: { result: { services: { type: ["Scene Service"] } } } }, true],
    [{ detail: { result: { services: { type: ["Vector Tile Service"] } } } }, false],
    [{ detail: { tags: ["c"] } }, true],
  ])("%j matches: %s", (pattern, expected) => {
    expect(patternProblem(pattern)).toBeUndefined();
    expect(matchesPattern(pattern, event)).toBe(expected);
  });

  it("refuses what PutRule refuses", () => {
    expect(patternProblem({})).toMatch(/must not be empty/);
    expect(patternProblem({ source: "mapgate" })).toMatch(/array or an object/);
    expect(patternProblem({ source: [{ wildcard: "*" }] })).toMatch(/Unrecognized match type/);
    expect(patternProblem({ source: [{ "anything-but": { numeric: [">", 1] } }] })).toMatch(/anything-but/);
  });
});
