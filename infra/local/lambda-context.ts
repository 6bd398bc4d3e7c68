// The context object Lambda hands a handler, as the local engine builds it for a route's function (the gateway)
// and for an invoked one (the Lambda endpoint).
import type { Context } from "aws-lambda";

export function lambdaContext(
  functionName: string,
  invokedFunctionArn: string,
  awsRequestId: string,
  timeoutMs: number,
): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn,
    memoryLimitInMB: "1024",
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "local",
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
