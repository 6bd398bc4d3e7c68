// The operations function: other AWS services (a Step Functions workflow, a Lambda function, an EventBridge
// target) call mapgate here with IAM as the authority. The event names an operation; the route's own handler
// runs it as the member the registered caller acts as, and its JSON answer is returned as is, errors included
// (`{error:{code,message,details}}`). A job operation given a task token answers it when the job ends; if the
// operation is refused before a job starts, the token is failed at once, so no workflow waits for nothing.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import type { InvokedOperation } from "#shared/system.ts";
import { config } from "#shared/config.ts";
import { ApiError, errorBody, INTERNAL_ERROR } from "#shared/errors.ts";
import type { Invocation, RestContext } from "#shared/http/pipeline.ts";
import { apiEvent } from "#shared/invocation/api-event.ts";
import { identifyCaller } from "#shared/invocation/caller.ts";
import { MAX_TASK_TOKEN, readInvokedEvent } from "#shared/invocation/event.ts";
import { sendTaskFailure, TASK_ERRORS } from "#shared/invocation/task-tokens.ts";
import { inRequest, logger } from "#shared/log.ts";

type RouteHandler = (event: APIGatewayProxyEventV2, context: RestContext) => Promise<APIGatewayProxyStructuredResultV2>;

// Loaded on first use, so a warm function pays only for the operations it is asked for.
export const MODULES = {
  describe: () => import("#functions/datastore-describe.ts"),
  publish: () => import("#functions/datastore-publish.ts"),
  publishLayers: () => import("#functions/datastore-publish-layers.ts"),
  getLayers: () => import("#functions/datastore-get-layers.ts"),
  getJob: () => import("#functions/job-get.ts"),
  self: () => import("#functions/portal-self.ts"),
  getItem: () => import("#functions/item-get.ts"),
  search: () => import("#functions/item-search.ts"),
  shareItem: () => import("#functions/item-share.ts"),
  unshareItem: () => import("#functions/item-share.ts"),
  listRoles: () => import("#functions/role-list.ts"),
  createRole: () => import("#functions/role-create.ts"),
  searchGroups: () => import("#functions/community-groups.ts"),
  createGroup: () => import("#functions/community-groups.ts"),
  getGroup: () => import("#functions/community-groups.ts"),
  updateGroup: () => import("#functions/community-groups.ts"),
  deleteGroup: () => import("#functions/community-groups.ts"),
  getGroupUsers: () => import("#functions/community-groups.ts"),
  addGroupUsers: () => import("#functions/community-groups.ts"),
  removeGroupUsers: () => import("#functions/community-groups.ts"),
  getGroupContent: () => import("#functions/content-groups.ts"),
} satisfies Record<InvokedOperation, () => Promise<{ handler: unknown }>>;

config();

/**
 * The task token an event carries, before the event is validated: a registered caller's waiting workflow is told
 * of any refusal (a bad field included), never left waiting for a job that will not run.
 */
function rawTaskToken(event: unknown): string | undefined {
  const t = (event as { taskToken?: unknown } | null)?.taskToken;
  return typeof t === "string" && t.length > 0 && t.length <= MAX_TASK_TOKEN ? t : undefined;
}

async function run(event: unknown, context: Context): Promise<{ answer: object; taskToken?: string | undefined }> {
  let taskToken: string | undefined;
  try {
    // Who calls first (from what Lambda says, never the event): only a registered caller's token is answered.
    const caller = await identifyCaller(context);
    taskToken = rawTaskToken(event);
    const e = readInvokedEvent(event);
    const invocation: Invocation = { ...caller, ...(e.taskToken ? { taskToken: e.taskToken } : {}) };
    const mod = (await MODULES[e.operation]()) as { handler: RouteHandler };
    const restContext: RestContext = Object.assign(Object.create(context) as Context, { mapgate: { invocation } });
    const response = await mod.handler(apiEvent(e, context.awsRequestId), restContext);
    return { answer: JSON.parse(response.body ?? "null") as object, taskToken };
  } catch (err) {
    if (err instanceof ApiError) return { answer: errorBody(err), taskToken };
    logger.error("internal error", {
      requestId: context.awsRequestId,
      operation: "operations",
      error: err instanceof Error ? err : new Error(String(err)),
    });
    return { answer: INTERNAL_ERROR, taskToken };
  }
}

function operationName(event: unknown): string | undefined {
  const op = (event as { operation?: unknown } | null)?.operation;
  return typeof op === "string" && Object.hasOwn(MODULES, op) ? op : undefined;
}

export const handler = (event: unknown, context: Context): Promise<object> =>
  inRequest(context.awsRequestId, () => invoked(event, context));

async function invoked(event: unknown, context: Context): Promise<object> {
  const started = performance.now();
  const { answer, taskToken } = await run(event, context);
  const error = (answer as { error?: { code?: number } }).error;
  if (error && taskToken) await sendTaskFailure(taskToken, TASK_ERRORS.refused, error);
  logger.info("invocation", {
    requestId: context.awsRequestId,
    // The caller's own words are logged only when they name an operation.
    operation: operationName(event),
    errorCode: error?.code,
    ms: Math.round(performance.now() - started),
  });
  return answer;
}
