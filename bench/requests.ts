// DynamoDB requests sent so far by this process's shared client (every handler and task uses that client).
import { ddb } from "#shared/stores/dynamo.ts";

let count = 0;
ddb.middlewareStack.add(
  (next) => async (args) => {
    count++;
    return next(args);
  },
  { step: "initialize", name: "countBenchRequests" },
);

export const dynamoRequests = () => count;
