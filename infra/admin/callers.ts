// Registering IAM callers: the record (organization, member) and, on AWS, the alias whose resource policy lets
// the principal invoke the operations function. Written record first and removed alias first, so there is never
// an alias that answers for a caller mapgate does not know.
import { AdminInputError } from "./operations.ts";
import { type Caller, callerIdOf, deleteCaller, getCaller, principalOf, putCaller } from "#shared/stores/callers.ts";
import { getUser } from "#shared/stores/users.ts";

interface AliasTarget {
  readonly operationsFunction: string;
  alias(callerId: string, principalArn: string, present: boolean): Promise<void>;
}

export async function registerCaller(
  spec: { portalId: string; principalArn: string; username: string },
  target: AliasTarget,
): Promise<Caller & { invoke: string }> {
  const principal = principalOf(spec.principalArn);
  // A session's ARN would let one session in, not the role's: the resource policy must name the role.
  if (/^arn:aws[a-z-]*:sts::/.test(spec.principalArn)) {
    throw new AdminInputError(
      "--principal must be the role's ARN (arn:aws:iam::<account>:role/<name>), not a session's",
    );
  }
  if (!principal) {
    throw new AdminInputError(
      "--principal must be an IAM role or user ARN (arn:aws:iam::<account>:role/<name>); a role's sessions act as the role",
    );
  }
  const user = await getUser(spec.username);
  if (!user || user.portalId !== spec.portalId) throw new AdminInputError("--username must be a member of --portal");
  const callerId = callerIdOf(principal);
  const caller: Caller = {
    callerId,
    principalArn: spec.principalArn,
    portalId: spec.portalId,
    username: user.username,
    created: Date.now(),
  };
  if (!(await putCaller(caller))) {
    const existing = await getCaller(callerId);
    throw new AdminInputError(
      `${principal} is registered already (as ${existing?.username ?? "?"} of ${existing?.portalId ?? "?"}): remove-caller first`,
    );
  }
  try {
    await target.alias(callerId, spec.principalArn, true);
  } catch (err) {
    await deleteCaller(callerId);
    throw err;
  }
  return { ...caller, invoke: `${target.operationsFunction}:${callerId}` };
}

export async function removeCaller(principalArn: string, target: AliasTarget): Promise<{ removed: string }> {
  const principal = principalOf(principalArn);
  if (!principal) throw new AdminInputError("--principal must be an IAM role or user ARN");
  const callerId = callerIdOf(principal);
  await target.alias(callerId, principalArn, false);
  const removed = await deleteCaller(callerId);
  if (!removed) throw new AdminInputError(`${principal} is not a registered caller`);
  return { removed: removed.principalArn };
}
