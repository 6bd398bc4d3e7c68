// The CloudWatch Embedded Metric Format, checked as its specification says: the JSON schema it gives, and what
// the schema cannot say (every dimension and metric a directive names is a root member of the right type).
import { Ajv } from "ajv";
import { expect } from "vitest";

/**
 * The JSON schema the Embedded Metric Format specification gives for validating documents (CloudWatch user
 * guide, "Specification: Embedded metric format"), without its `$id`s and titles.
 */
const EMF_SCHEMA = {
  type: "object",
  required: ["_aws"],
  properties: {
    _aws: {
      type: "object",
      required: ["Timestamp", "CloudWatchMetrics"],
      properties: {
        Timestamp: { type: "integer" },
        CloudWatchMetrics: {
          type: "array",
          items: {
            type: "object",
            required: ["Namespace", "Dimensions", "Metrics"],
            properties: {
              Namespace: { type: "string", pattern: "^(.*)$", minLength: 1, maxLength: 255 },
              Dimensions: {
                type: "array",
                minItems: 1,
                items: {
                  type: "array",
                  minItems: 0,
                  maxItems: 9,
                  items: { type: "string", pattern: "^(.*)$", minLength: 1, maxLength: 255 },
                },
              },
              Metrics: {
                type: "array",
                items: {
                  type: "object",
                  required: ["Name"],
                  properties: {
                    Name: { type: "string", pattern: "^(.*)$", minLength: 1, maxLength: 255 },
                    Unit: {
                      type: "string",
                      pattern:
                        "^(Seconds|Microseconds|Milliseconds|Bytes|Kilobytes|Megabytes|Gigabytes|Terabytes|Bits|Kilobits|Megabits|Gigabits|Terabits|Percent|Count|Bytes\\/Second|Kilobytes\\/Second|Megabytes\\/Second|Gigabytes\\/Second|Terabytes\\/Second|Bits\\/Second|Kilobits\\/Second|Megabits\\/Second|Gigabits\\/Second|Terabits\\/Second|Count\\/Second|None)$",
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ strict: false }).compile(EMF_SCHEMA);

/** What the schema cannot say: every dimension and metric a directive names is a root member of the right type. */
export function checkEmf(doc: Record<string, unknown>): void {
  expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  const directives = (doc._aws as { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] })
    .CloudWatchMetrics;
  for (const d of directives) {
    for (const key of d.Dimensions.flat()) expect(typeof doc[key], key).toBe("string");
    for (const m of d.Metrics) expect(typeof doc[m.Name], m.Name).toBe("number");
  }
}

/** The EMF documents among log lines (each a line of its own, as mapgate writes them). */
export const emfLines = (lines: readonly string[]) =>
  lines.filter((l) => l.startsWith('{"_aws"')).map((l) => JSON.parse(l) as Record<string, unknown>);
