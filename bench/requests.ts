// DynamoDB requests sent so far by this process's shared client (every handler and task uses that client).
import { storeClients } from "#shared/stores/dynamo.ts";

let count = 0;
// Added before any request: a client that caches its middleware (see dynamo.ts) sees only what it had then.
for (const client of storeClients)
  client.middlewareStack.add(
    (next) => async (args) => {
      count++;
      return next(args);
    },
    { step: "initialize", name: "countBenchRequests" },
  );

export const dynamoRequests = () => count;
