// Who invoked the operations function. Lambda tells a function which ARN it was invoked through, never who
// invoked it; so each registered caller gets its own alias whose resource policy allows that principal alone,
// and the alias in `invokedFunctionArn` (set by Lambda, out of the caller's reach) names the caller.
import type { Context } from "aws-lambda";
import type { Identity } from "#shared/auth/identity.ts";
import { privilegesOf } from "#shared/auth/identity.ts";
import { tableName } from "#shared/config.ts";
import { ApiError, forbidden } from "#shared/errors.ts";
import type { Invocation } from "#shared/http/pipeline.ts";
import { getCaller } from "#shared/stores/callers.ts";
import { batchGet } from "#shared/stores/dynamo.ts";
import { toPortal } from "#shared/stores/portals.ts";
import { toUser } from "#shared/stores/users.ts";

/** How long the synthetic claims of an invoked call last: one invocation (Lambda's 15 minutes at most). */
const INVOCATION_MS = 15 * 60_000;

/** The qualifier of the ARN Lambda says the function was invoked through (an alias), if any. */
export function aliasOf(context: Pick<Context, "invokedFunctionArn">): string | undefined {
  // arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]
  const parts = (context.invokedFunctionArn ?? "").split(":");
  return parts.length === 8 ? parts[7] : undefined;
}

const notRegistered = () =>
  forbidden([
    "This function answers registered callers only, each through its own alias: invoke the alias ARN that " +
      "`npm run admin -- register-caller` printed for your principal.",
  ]);

/** The registered caller this invocation came through, as the member it acts as; 403 otherwise. */
export async function identifyCaller(
  context: Pick<Context, "invokedFunctionArn" | "awsRequestId">,
): Promise<Omit<Invocation, "taskToken">> {
  const alias = aliasOf(context);
  const caller = alias ? await getCaller(alias) : undefined;
  if (!caller) throw notRegistered();
  const users = tableName("users");
  const portals = tableName("portals");
  const found = await batchGet({
    [users]: { Keys: [{ username: caller.username }], ConsistentRead: true },
    [portals]: { Keys: [{ portalId: caller.portalId }] },
  });
  const userItem = found[users]?.[0];
  const portalItem = found[portals]?.[0];
  const user = userItem ? toUser(userItem) : undefined;
  if (!user || !portalItem || user.portalId !== caller.portalId) {
    throw new ApiError(403, "The member this caller acts as no longer exists.", [
      "An administrator registers the caller again with an existing member.",
    ]);
  }
  const now = Date.now();
  const identity: Extract<Identity, { kind: "user" }> = {
    kind: "user",
    user,
    portal: toPortal(portalItem),
    // What a token would say, for the operations that key things by it (a paged list's cursor is per caller).
    claims: {
      kind: "user",
      username: user.username,
      portalId: user.portalId,
      audience: { kind: "portal" },
      client: "none",
      bound: "",
      expires: now + INVOCATION_MS,
      issued: now,
      id: `iam.${caller.callerId}`,
    },
    credential: { token: "", source: "iam" },
    privileges: await privilegesOf(user),
  };
  return { identity, callerId: caller.callerId };
}
