// What an operator watches: the alarms (to one SNS topic), a composite "mapgate unhealthy" over them, and the
// dashboard. They live in a nested stack: CloudFormation allows 500 resources per stack and mapgate's own
// resources use most of the parent's; the nested stack counts as one there and has its own 500.
// Lambda errors and throttles are watched by metric math over groups of at most ten functions (an alarm takes
// at most ten metrics), so every function is covered by name, whoever else shares the account and region.
import { Duration, NestedStack, type RemovalPolicy } from "aws-cdk-lib";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  Alarm,
  AlarmRule,
  AlarmStatusWidget,
  ComparisonOperator,
  CompositeAlarm,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  SingleValueWidget,
  TextWidget,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import { ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Key } from "aws-cdk-lib/aws-kms";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import type { IStateMachine } from "aws-cdk-lib/aws-stepfunctions";
import type { Construct } from "constructs";
import { METRIC, NAMESPACE, OUTCOMES, SERVED_RESOURCES, STACK_DIMENSION } from "#shared/metrics.ts";

/** Alarm thresholds: each can be set with `-c <name>=<value>` (infra/aws/app.ts). */
export const DEFAULT_THRESHOLDS = {
  /** Percent of API requests answered 5xx by API Gateway or as an internal error by mapgate, over 5 minutes. */
  alarmApiErrorPercent: 1,
  /** Below this many requests in 5 minutes the error rate is not judged (one error in three requests is noise). */
  alarmApiMinRequests: 20,
  /** p99 latency (ms) of the read routes, three 5-minute periods in a row. */
  alarmReadP99Ms: 1500,
  /** Function errors (uncaught: crashes, timeouts, out of memory) in a group of functions, in 5 minutes. */
  alarmLambdaErrors: 1,
  /** Throttled invocations in a group of functions, in 5 minutes (the account's concurrency is used up). */
  alarmLambdaThrottles: 1,
  /** Throttled reads and writes of one table, in 5 minutes. */
  alarmDynamoThrottles: 1,
  /** DynamoDB's own errors (HTTP 500) on one table, in 5 minutes. */
  alarmDynamoSystemErrors: 1,
  /** Job executions failed or timed out in 5 minutes (a job's own failure is caught: this is the machinery). */
  alarmWorkflowFailures: 1,
  /** How long (s) the oldest event may wait in the outbox. */
  alarmOutboxAgeSeconds: 900,
  /** Consecutive 5-minute periods in which redelivery was refused before it alarms. */
  alarmRedeliveryPeriods: 3,
} as const;

export type Thresholds = { -readonly [K in keyof typeof DEFAULT_THRESHOLDS]: number };

/** DynamoDB operations mapgate calls: a table's system errors are summed over those its access allows. */
const READ_OPERATIONS = ["GetItem", "BatchGetItem", "Query", "Scan"] as const;
const WRITE_OPERATIONS = ["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"] as const;

export interface MonitoredTable {
  readonly name: string;
  readonly tableName: string;
  readonly written: boolean;
}

export interface MonitoringProps {
  /** The parent stack's name: every mapgate metric carries it as the `Stack` dimension. */
  readonly stackName: string;
  readonly api: HttpApi;
  readonly functions: readonly { readonly id: string; readonly fn: IFunction }[];
  readonly tables: readonly MonitoredTable[];
  readonly stateMachine: IStateMachine;
  /** The CloudFront distribution's id, when there is one (its metrics are in us-east-1). */
  readonly distributionId?: string;
  readonly thresholds?: Partial<Thresholds>;
  /** An address the topic mails (it confirms the subscription first). */
  readonly alarmEmail?: string;
  readonly removalPolicy: RemovalPolicy;
}

const FIVE_MINUTES = Duration.minutes(5);

export class Monitoring extends NestedStack {
  readonly topic: Topic;
  readonly alarms: Alarm[] = [];
  readonly unhealthy: CompositeAlarm;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const t: Thresholds = { ...DEFAULT_THRESHOLDS, ...props.thresholds };
    const stack = props.stackName;
    const prefix = `${stack}-`;

    // Alarm notifications are encrypted at rest with a key CloudWatch may use (it cannot use SNS's AWS-managed
    // key): without this grant alarms would fail to notify, silently.
    const key = new Key(this, "AlarmTopicKey", {
      description: `Encrypts ${stack}'s alarm notifications`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });
    key.grant(new ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*");
    this.topic = new Topic(this, "Alarms", { displayName: `${stack} alarms`, masterKey: key, enforceSSL: true });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    const action = new SnsAction(this.topic);

    const mapgate = (metricName: string, dimensions: Record<string, string>, statistic = "Sum") =>
      new Metric({
        namespace: NAMESPACE,
        metricName,
        dimensionsMap: { [STACK_DIMENSION]: stack, ...dimensions },
        statistic,
        period: FIVE_MINUTES,
      });
    const alarm = (
      name: string,
      description: string,
      metric: IMetric,
      threshold: number,
      options: { periods?: number; missing?: TreatMissingData } = {},
    ) => {
      const a = new Alarm(
        this,
        name.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase()),
        {
          alarmName: `${prefix}${name}`,
          alarmDescription: description,
          metric,
          threshold,
          evaluationPeriods: options.periods ?? 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: options.missing ?? TreatMissingData.NOT_BREACHING,
        },
      );
      a.addAlarmAction(action);
      this.alarms.push(a);
      return a;
    };

    // The API: what API Gateway answered 5xx (a function crashed, timed out, was throttled) and what mapgate
    // answered as an internal error (HTTP 200 with a 500 envelope, as ArcGIS clients expect), per request.
    const count = props.api.metricCount({ period: FIVE_MINUTES, statistic: "Sum" });
    const gateway5xx = props.api.metricServerError({ period: FIVE_MINUTES, statistic: "Sum" });
    const internal = mapgate(METRIC.requests, { Outcome: "server-error" });
    alarm(
      "api-error-rate",
      `More than ${t.alarmApiErrorPercent}% of API requests failed on the server side in 5 minutes (API Gateway 5xx, or mapgate's internal-error envelope). Read the functions' ERROR log lines (Logs Insights: filter level = "ERROR") and the traces of the failing operation.`,
      new MathExpression({
        expression: `IF(FILL(requests, 0) >= ${t.alarmApiMinRequests}, 100 * (FILL(gateway, 0) + FILL(internal, 0)) / requests, 0)`,
        usingMetrics: { requests: count, gateway: gateway5xx, internal },
        period: FIVE_MINUTES,
        label: "server-side error %",
      }),
      t.alarmApiErrorPercent,
    );
    alarm(
      "read-latency-p99",
      `The read routes' p99 latency was above ${t.alarmReadP99Ms} ms for 15 minutes. Compare the Latency p99 by operation on the dashboard; traces show whether DynamoDB, storage or cold starts take the time.`,
      mapgate(METRIC.latency, { Kind: "read" }, "p99"),
      t.alarmReadP99Ms,
      { periods: 3 },
    );

    // Functions, ten to an alarm (the most metrics one alarm takes).
    const groups: { id: string; fn: IFunction }[][] = [];
    const groupSums: { errors: MathExpression; throttles: MathExpression }[] = [];
    for (let i = 0; i < props.functions.length; i += 10) groups.push(props.functions.slice(i, i + 10));
    groups.forEach((group, g) => {
      const names = group.map((f) => f.id).join(", ");
      const sum = (metricName: "Errors" | "Throttles") => {
        const usingMetrics = Object.fromEntries(
          group.map((f, i) => [
            `${metricName.toLowerCase()}${g + 1}f${i}`,
            f.fn.metric(metricName, { period: FIVE_MINUTES, statistic: "Sum" }) as IMetric,
          ]),
        );
        return new MathExpression({
          expression: Object.keys(usingMetrics)
            .map((k) => `FILL(${k}, 0)`)
            .join(" + "),
          usingMetrics,
          period: FIVE_MINUTES,
          label: `${metricName} (group ${g + 1})`,
        });
      };
      const errors = sum("Errors");
      const throttles = sum("Throttles");
      groupSums.push({ errors, throttles });
      alarm(
        `lambda-errors-${g + 1}`,
        `A function of ${names} failed (uncaught error, timeout or out of memory). Its log group's ERROR lines and the X-Ray traces of its failed invocations say which and why.`,
        errors,
        t.alarmLambdaErrors,
      );
      alarm(
        `lambda-throttles-${g + 1}`,
        `A function of ${names} was throttled: the account's Lambda concurrency is used up. Raise the account's concurrency quota, or find the function whose traffic rose.`,
        throttles,
        t.alarmLambdaThrottles,
      );
    });

    // Tables: throttled reads and writes, and DynamoDB's own errors over the operations mapgate calls on it.
    for (const table of props.tables) {
      const dynamo = (metricName: string, extra: Record<string, string> = {}) =>
        new Metric({
          namespace: "AWS/DynamoDB",
          metricName,
          dimensionsMap: { TableName: table.tableName, ...extra },
          statistic: "Sum",
          period: FIVE_MINUTES,
        });
      alarm(
        `dynamodb-${table.name}-throttled`,
        `Reads or writes of the ${table.name} table were throttled (on-demand tables throttle past twice their previous peak, or on one hot partition). Look for a burst on the dashboard; AWS raises the peak by itself within 30 minutes.`,
        new MathExpression({
          expression: "FILL(reads, 0) + FILL(writes, 0)",
          usingMetrics: { reads: dynamo("ReadThrottleEvents"), writes: dynamo("WriteThrottleEvents") },
          period: FIVE_MINUTES,
          label: `${table.name} throttle events`,
        }),
        t.alarmDynamoThrottles,
      );
      const operations = [...READ_OPERATIONS, ...(table.written ? WRITE_OPERATIONS : [])];
      const usingMetrics = Object.fromEntries(
        operations.map((op) => [op.toLowerCase(), dynamo("SystemErrors", { Operation: op }) as IMetric]),
      );
      alarm(
        `dynamodb-${table.name}-system-errors`,
        `DynamoDB answered internal errors on the ${table.name} table. The SDK retries them; if they persist, check the AWS Health Dashboard for DynamoDB in this region.`,
        new MathExpression({
          expression: Object.keys(usingMetrics)
            .map((k) => `FILL(${k}, 0)`)
            .join(" + "),
          usingMetrics,
          period: FIVE_MINUTES,
          label: `${table.name} system errors`,
        }),
        t.alarmDynamoSystemErrors,
      );
    }

    alarm(
      "workflow-failures",
      "A job execution failed or timed out in the state machine itself (a job's own failure is caught and recorded as failed). The execution's history in the Step Functions console names the state; its trace shows the task.",
      new MathExpression({
        expression: "FILL(failed, 0) + FILL(timedOut, 0)",
        usingMetrics: {
          failed: props.stateMachine.metricFailed({ period: FIVE_MINUTES }),
          timedOut: props.stateMachine.metricTimedOut({ period: FIVE_MINUTES }),
        },
        period: FIVE_MINUTES,
        label: "executions failed or timed out",
      }),
      t.alarmWorkflowFailures,
    );
    alarm(
      "outbox-age",
      `An event has waited in the outbox for more than ${t.alarmOutboxAgeSeconds} s: the bus refuses it, or events-redeliver does not run. See events-redeliver's log ("redelivery stopped") and the bus's PutEvents metrics.`,
      mapgate(METRIC.outboxOldestAge, {}, "Maximum"),
      t.alarmOutboxAgeSeconds,
    );
    alarm(
      "redelivery-failing",
      `Redelivery of outboxed events was refused for ${t.alarmRedeliveryPeriods} periods of 5 minutes in a row. Check the bus (its PutEvents throttling and failed invocations) and the events-redeliver log.`,
      mapgate(METRIC.redeliveryRefused, {}),
      1,
      { periods: t.alarmRedeliveryPeriods },
    );
    alarm(
      "events-lost",
      'An event was given up after its retention in the outbox, or neither the bus nor the outbox took it: its detail is in the log ("event given up", "event lost"). Consumers missed it: send it again by hand if it matters.',
      new MathExpression({
        expression: "FILL(lost, 0) + FILL(givenUp, 0)",
        usingMetrics: { lost: mapgate(METRIC.eventsLost, {}), givenUp: mapgate(METRIC.eventsGivenUp, {}) },
        period: FIVE_MINUTES,
        label: "events lost",
      }),
      1,
    );

    this.unhealthy = new CompositeAlarm(this, "Unhealthy", {
      compositeAlarmName: `${prefix}unhealthy`,
      alarmDescription: `mapgate (${stack}) is unhealthy: one of its alarms is in ALARM. The dashboard shows which.`,
      alarmRule: AlarmRule.anyOf(...this.alarms),
    });
    this.unhealthy.addAlarmAction(action);

    this.dashboard = new Dashboard(this, "Dashboard", {
      dashboardName: stack,
      defaultInterval: Duration.hours(3),
    });
    const search = (metricName: string, dims: string[], stat: string, label: string) =>
      new MathExpression({
        expression: `SEARCH('{${NAMESPACE},${[STACK_DIMENSION, ...dims].join(",")}} ${STACK_DIMENSION}="${stack}" MetricName="${metricName}"', '${stat}', 300)`,
        usingMetrics: {},
        label,
        period: FIVE_MINUTES,
      });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# mapgate — ${stack}\nRequests, errors and latency by operation; content served; jobs; throttles; the alarms. Metrics: namespace \`${NAMESPACE}\`, dimension \`${STACK_DIMENSION}=${stack}\`.`,
        width: 24,
        height: 2,
      }),
      new AlarmStatusWidget({ title: "Alarms", alarms: [this.unhealthy, ...this.alarms], width: 24, height: 6 }),
      new GraphWidget({
        title: "Requests by operation and outcome",
        left: [search(METRIC.requests, ["Operation", "Outcome"], "Sum", "")],
        width: 12,
      }),
      new GraphWidget({
        title: "Requests by outcome",
        left: OUTCOMES.map((o) => mapgate(METRIC.requests, { Outcome: o }).with({ label: o })),
        right: [gateway5xx.with({ label: "API Gateway 5xx" })],
        width: 12,
      }),
      new GraphWidget({
        title: "Latency (ms): reads and others, p50 and p99",
        left: (["read", "other"] as const).flatMap((kind) =>
          ["p50", "p99"].map((stat) =>
            mapgate(METRIC.latency, { Kind: kind }, stat).with({ label: `${kind} ${stat}` }),
          ),
        ),
        width: 12,
      }),
      new GraphWidget({
        title: "Latency p99 by operation (ms)",
        left: [search(METRIC.latency, ["Operation"], "p99", "")],
        width: 12,
      }),
      new GraphWidget({
        title: "Content served: tiles, scene, styles, queries",
        left: SERVED_RESOURCES.map((r) => mapgate(METRIC.served, { Resource: r }).with({ label: r })),
        width: 12,
      }),
      new GraphWidget({
        title: "Response bytes by operation",
        left: [search(METRIC.responseBytes, ["Operation"], "Sum", "")],
        width: 12,
      }),
      new GraphWidget({
        title: "Jobs by operation and outcome",
        left: [search(METRIC.jobs, ["Operation", "Outcome"], "Sum", "")],
        right: [
          props.stateMachine.metricFailed({ period: FIVE_MINUTES, label: "executions failed" }),
          props.stateMachine.metricTimedOut({ period: FIVE_MINUTES, label: "executions timed out" }),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: "Events: outboxed, redelivered, refused, lost; sign-in lockouts",
        left: [
          mapgate(METRIC.eventsOutboxed, {}).with({ label: "outboxed" }),
          mapgate(METRIC.eventsRedelivered, {}).with({ label: "redelivered" }),
          mapgate(METRIC.redeliveryRefused, {}).with({ label: "refused" }),
          mapgate(METRIC.eventsLost, {}).with({ label: "lost" }),
          mapgate(METRIC.eventsGivenUp, {}).with({ label: "given up" }),
          mapgate(METRIC.signInLockouts, {}).with({ label: "sign-in lockouts" }),
        ],
        right: [mapgate(METRIC.outboxOldestAge, {}, "Maximum").with({ label: "oldest outbox entry (s)" })],
        width: 12,
      }),
      new GraphWidget({
        title: "Lambda errors and throttles (by group of functions), DynamoDB throttle events (by table)",
        left: groupSums.flatMap((g) => [g.errors, g.throttles]),
        right: props.tables.map(
          (table) =>
            new MathExpression({
              expression: `FILL(r_${table.name}, 0) + FILL(w_${table.name}, 0)`,
              usingMetrics: {
                [`r_${table.name}`]: new Metric({
                  namespace: "AWS/DynamoDB",
                  metricName: "ReadThrottleEvents",
                  dimensionsMap: { TableName: table.tableName },
                  statistic: "Sum",
                  period: FIVE_MINUTES,
                }),
                [`w_${table.name}`]: new Metric({
                  namespace: "AWS/DynamoDB",
                  metricName: "WriteThrottleEvents",
                  dimensionsMap: { TableName: table.tableName },
                  statistic: "Sum",
                  period: FIVE_MINUTES,
                }),
              },
              label: table.name,
              period: FIVE_MINUTES,
            }),
        ),
        width: 12,
      }),
    );
    if (props.distributionId) {
      // CloudFront publishes its metrics in us-east-1 only, whatever the stack's region.
      const cdn = (metricName: string, statistic: string) =>
        new Metric({
          namespace: "AWS/CloudFront",
          metricName,
          dimensionsMap: { DistributionId: props.distributionId as string, Region: "Global" },
          statistic,
          period: FIVE_MINUTES,
          region: "us-east-1",
        });
      this.dashboard.addWidgets(
        new GraphWidget({
          title: "CDN: requests and error rates",
          left: [cdn("Requests", "Sum").with({ label: "requests" })],
          right: [
            cdn("4xxErrorRate", "Average").with({ label: "4xx %" }),
            cdn("5xxErrorRate", "Average").with({ label: "5xx %" }),
          ],
          width: 12,
        }),
        new SingleValueWidget({
          title: "CDN bytes downloaded",
          metrics: [cdn("BytesDownloaded", "Sum")],
          width: 12,
        }),
      );
    }
  }
}
