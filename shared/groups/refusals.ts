// The store's refusals of a group change, in ArcGIS's words: shared by every group use case.
import { badRequest } from "#shared/errors.ts";
import { GroupGoneError, MembershipError, TitleTakenError, TooManyGroupsError } from "#shared/stores/groups.ts";
import { MAX_USER_GROUPS } from "#shared/stores/users.ts";

/**
 * Joining and leaving are idempotent: a concurrent request of the same member that already joined (or left)
 * leaves the state this one asked for.
 */
export async function settled(change: () => Promise<void>): Promise<void> {
  try {
    await change();
  } catch (err) {
    if (!(err instanceof MembershipError)) throw err;
  }
}

/**
 * Turns the store's refusals into the envelope (a concurrent delete, the 512-group limit, membership, a title
 * another group of the organization has: ArcGIS's words).
 */
export async function membership<T>(what: string, change: () => Promise<T>, title = ""): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof TitleTakenError) {
      throw badRequest(what, [`You already have a group named '${title}'. Try a different name.`]);
    }
    if (err instanceof GroupGoneError) throw badRequest(what, ["The group does not exist or is being deleted."]);
    if (err instanceof TooManyGroupsError) {
      throw badRequest(what, [`A member may belong to at most ${MAX_USER_GROUPS} groups.`]);
    }
    if (err instanceof MembershipError) throw badRequest(what, ["The membership is not what this change needs."]);
    throw err;
  }
}

/** The group a `groups/{groupId}/…` path names. */
export const groupIdOf = (req: { readonly pathParameters: Readonly<Record<string, string | undefined>> }) =>
  req.pathParameters.groupId ?? "";
