// The hosted server a server route (`/<server>/rest/...`) addresses. The handlers serving those routes hand it to
// the pipeline as their operation's `at`, so only their functions reach the servers table through the pipeline:
// what a function may reach is what its bundle holds, and test/grants.test.ts checks it is what it is granted.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { noSuchResource } from "#shared/errors.ts";
import { hostedServer, type Server } from "#shared/stores/servers.ts";

/** The server the path names; an unknown name is a 404 before any credential is read. */
export async function addressedServer(event: APIGatewayProxyEventV2): Promise<Server> {
  const name = event.pathParameters?.server ?? "";
  const server = await hostedServer(name);
  if (!server) throw noSuchResource([`No server is hosted at /${name.slice(0, 64)}.`]);
  return server;
}
