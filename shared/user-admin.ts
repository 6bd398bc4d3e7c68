// People on the web: an administrator adds members (a generated password shown once), disables, enables and deletes
// them and resets their passwords; every member changes their own full name, description and password. Served by
// the community family (functions/community-groups.ts) under …/sharing/rest/community/:
//   POST createUser                       an administrator adds a member (mapgate's: ArcGIS Enterprise adds built-in
//                                         accounts on its portaladmin API)
//   POST users/<u>/update                 the user or their administrator: fullName, description; the user alone:
//                                         password, giving oldPassword (ArcGIS's Update User)
//   POST users/<u>/disable | enable       an administrator (ArcGIS's Disable User, Enable User)
//   POST users/<u>/delete                 an administrator, once the user owns no item and no group (ArcGIS's rule)
//   POST users/<u>/resetPassword          an administrator: a new generated password, shown once (mapgate's)
// Passwords are hashed as everywhere (shared/auth/passwords.ts), come in the request body only, and are never
// logged; a generated one is in the answer alone (a page shows it from the sealed result, never stored).
import { checkCredentials, SignInRefused } from "#shared/auth/credentials.ts";
import { generatePassword, hashPassword } from "#shared/auth/passwords.ts";
import { ApiError, badRequest, forbidden } from "#shared/errors.ts";
import { escapeHtml, type FormField, renderForm, resultPage } from "#shared/http/html.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import { isConditionFailure } from "#shared/stores/dynamo.ts";
import { foldersKey } from "#shared/stores/folders.ts";
import { groupsOf, removeMember } from "#shared/stores/groups.ts";
import { queryItems } from "#shared/stores/items.ts";
import { clearAttempts } from "#shared/stores/signin.ts";
import {
  BUILT_IN_ROLES,
  createUser as putUser,
  getUser,
  removeUser,
  resetPassword,
  setDisabled,
  updateProfile,
  type User,
  UserChangedError,
} from "#shared/stores/users.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";

/** Usernames as the operator's command takes them: letters, digits and `_.@-`, safe in a path unencoded. */
const USERNAME = /^[A-Za-z0-9_.@-]{1,128}$/;
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;
/** ArcGIS's limits: a full name of 250 characters (first and last name fields of 125 each), a description of 32,000. */
const FULL_NAME_MAX = 250;
const DESCRIPTION_MAX = 32_000;
const EMAIL_MAX = 254;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** As the operator's command asks of a password it is given. */
const PASSWORD_MIN = 8;
const PASSWORD_MAX = 256;

const USERS_PAGE = `${PORTAL_ROOT}/portals/self/users?f=html`;
const userPath = (username: string) => `${PORTAL_ROOT}/community/users/${encodeURIComponent(username)}`;

/** The parameters that carry passwords: refused in a query string (shared/http/pipeline/request.ts `bodyOnly`). */
export const PASSWORD_PARAMS = ["password", "oldPassword"] as const;

/** The caller, an administrator of an organization (community routes name no portal: the caller's own). */
function requireAdmin(req: RestRequest) {
  const identity = requireUser(req);
  if (identity.user.role !== "org_admin") throw forbidden();
  return identity;
}

/** The user the path names, in the caller's organization; anyone else's answer is that there is none. */
async function pathUser(req: RestRequest, failed: string): Promise<User> {
  const identity = requireUser(req);
  const username = req.pathParameters.username ?? "";
  const user = USERNAME.test(username) ? await getUser(username) : undefined;
  if (!user || user.portalId !== identity.portal.portalId) {
    throw new ApiError(400, failed, [`User '${username.slice(0, 128)}' does not exist or is inaccessible.`]);
  }
  return user;
}

/** A target that is not the administrator themselves: nobody disables, deletes or resets their own account here. */
async function otherMember(req: RestRequest, failed: string, verb: string) {
  const admin = requireAdmin(req);
  const user = await pathUser(req, failed);
  if (user.username === admin.user.username) throw badRequest(failed, [`Administrators cannot ${verb} themselves.`]);
  return { admin, user };
}

function text(
  req: RestRequest,
  name: string,
  max: number,
  problems: string[],
  { required = false, allowEmpty = true } = {},
): string | undefined {
  const raw = req.params.get(name);
  if (raw === undefined) {
    if (required) problems.push(`'${name}' is required.`);
    return undefined;
  }
  const value = raw.trim();
  if (value === "" && !allowEmpty) problems.push(`'${name}' must not be empty.`);
  else if ([...value].length > max) problems.push(`'${name}' may have at most ${max} characters.`);
  else if (CONTROL.test(name === "description" ? value.replace(/[\r\n\t]/g, "") : value)) {
    problems.push(`'${name}' may not contain control characters.`);
  } else return value;
  return undefined;
}

const changed = () => new ApiError(409, "The user was changed by another request.", ["Try again."]);

// ---- createUser ----

export const CREATE_USER_FAILED = "Unable to create user.";

export const CREATE_USER_FORM: readonly FormField[] = [
  { name: "username", label: "Username", required: true, hint: "1–128 letters, digits or _ . @ -" },
  { name: "fullName", label: "Full name" },
  { name: "email", label: "Email" },
  { name: "role", label: "Role", options: [...BUILT_IN_ROLES] },
];

/** Adds a member with a generated password, answered once (the JSON answer and its page) and never kept in clear. */
export async function createUserOp(req: RestRequest) {
  const admin = requireAdmin(req);
  const problems: string[] = [];
  const username = req.params.get("username")?.trim() ?? "";
  if (!USERNAME.test(username)) problems.push("'username' must be 1–128 letters, digits or _.@-");
  const fullName = text(req, "fullName", FULL_NAME_MAX, problems) || username;
  const email = text(req, "email", EMAIL_MAX, problems) ?? "";
  if (email !== "" && !EMAIL.test(email)) problems.push("'email' is not an email address.");
  const role = req.params.get("role")?.trim() || "org_user";
  if (!(BUILT_IN_ROLES as readonly string[]).includes(role)) {
    problems.push(`'role' must be one of ${BUILT_IN_ROLES.join(", ")} (a custom role is given afterwards).`);
  }
  if (problems.length > 0) throw badRequest(CREATE_USER_FAILED, problems);
  const password = generatePassword();
  const now = Date.now();
  try {
    await putUser({
      username,
      portalId: admin.portal.portalId,
      role,
      fullName,
      email,
      passwordHash: await hashPassword(password),
      created: now,
      modified: now,
    });
  } catch (err) {
    if (isConditionFailure(err)) throw badRequest(CREATE_USER_FAILED, [`The username '${username}' is taken.`]);
    throw err;
  }
  return { success: true, username, role, password };
}

/** The one page that shows a new password: said to be shown this once. */
function passwordPage(title: string, said: string, data: object): string {
  const { password, username } = data as { password?: string; username?: string };
  const more =
    `<p>Password: <code id="new-password">${escapeHtml(password ?? "")}</code></p>` +
    `<p class="muted">It is shown this once and kept nowhere in clear: give it to ${escapeHtml(username ?? "the user")} now.</p>`;
  return resultPage(title, said, [[USERS_PAGE, "Users"]], more);
}

export const createdUserPage = (data: object) =>
  passwordPage("User added", `${(data as { username?: string }).username ?? "The user"} can sign in now.`, data);

// ---- users/<u>/resetPassword ----

export const RESET_FAILED = "Unable to reset password.";

export async function resetPasswordOp(req: RestRequest) {
  const { user } = await otherMember(req, RESET_FAILED, "reset the password of");
  const password = generatePassword();
  // The hash and a new token generation in one write: every earlier token and session of the user stops working.
  const done = await resetPassword(user.username, await hashPassword(password));
  if (!done) throw changed();
  await clearAttempts(user.username);
  return { success: true, username: user.username, password };
}

export const resetPasswordPage = (data: object) =>
  passwordPage(
    "Password reset",
    `${(data as { username?: string }).username ?? "The user"}'s earlier password and sessions no longer work.`,
    data,
  );

// ---- users/<u>/disable | enable ----

export const DISABLE_FAILED = "Unable to disable user.";
export const ENABLE_FAILED = "Unable to enable user.";

export async function disableOp(req: RestRequest) {
  const { user } = await otherMember(req, DISABLE_FAILED, "disable");
  await setDisabledOrRetry(user, true);
  return { success: true, username: user.username };
}

export async function enableOp(req: RestRequest) {
  const { user } = await otherMember(req, ENABLE_FAILED, "enable");
  await setDisabledOrRetry(user, false);
  return { success: true, username: user.username };
}

async function setDisabledOrRetry(user: User, disabled: boolean) {
  try {
    await setDisabled(user, disabled);
  } catch (err) {
    if (err instanceof UserChangedError) throw changed();
    throw err;
  }
}

export const disabledPage = (data: object) =>
  resultPage(
    "User disabled",
    `${(data as { username?: string }).username ?? "The user"} can no longer sign in; their sessions have ended.`,
    [[USERS_PAGE, "Users"]],
  );
export const enabledPage = (data: object) =>
  resultPage("User enabled", `${(data as { username?: string }).username ?? "The user"} can sign in again.`, [
    [USERS_PAGE, "Users"],
  ]);

// ---- users/<u>/delete ----

export const DELETE_FAILED = "Unable to delete user.";
/** How many of a member's items, and of their groups, a refused delete names. */
const NAMED_AT_MOST = 10;

/** Deletes a member who owns nothing: their memberships go with them; their items and groups must go first. */
export async function deleteUserOp(req: RestRequest) {
  const { admin, user } = await otherMember(req, DELETE_FAILED, "delete");
  const [owned, groups] = await Promise.all([queryItems("byOwner", user.username, NAMED_AT_MOST + 1), groupsOf(user)]);
  const ownedGroups = groups.filter((g) => g.owner === user.username);
  if (owned.items.length > 0 || ownedGroups.length > 0) {
    // Named, so the administrator knows what to reassign or delete (the first few of each; "…" says there are more).
    const named = (list: readonly string[], more: boolean) =>
      list.slice(0, NAMED_AT_MOST).join(", ") + (more || list.length > NAMED_AT_MOST ? ", …" : "");
    const problems: string[] = [];
    if (owned.items.length > 0)
      problems.push(
        `User '${user.username}' owns items: ${named(
          owned.items.map((i) => `'${i.title}' (${i.itemId})`),
          owned.next !== undefined,
        )}. Reassign or delete them first.`,
      );
    if (ownedGroups.length > 0)
      problems.push(
        `User '${user.username}' owns groups: ${named(
          ownedGroups.map((g) => `'${g.title}' (${g.groupId})`),
          false,
        )}. Reassign or delete them first.`,
      );
    throw badRequest(DELETE_FAILED, problems);
  }
  for (const g of groups) {
    // Already gone from one (a concurrent leave) is no matter.
    await removeMember(g.groupId, user.username).catch(() => undefined);
  }
  try {
    await removeUser(user, foldersKey(admin.portal.portalId, user.username));
  } catch (err) {
    if (err instanceof UserChangedError) throw changed();
    throw err;
  }
  await clearAttempts(user.username);
  return { success: true, username: user.username };
}

export const deletedPage = (data: object) =>
  resultPage("User deleted", `${(data as { username?: string }).username ?? "The user"} is no longer a member.`, [
    [USERS_PAGE, "Users"],
  ]);

// ---- users/<u>/update ----

export const UPDATE_FAILED = "Unable to update user.";

export const UPDATE_USER_FORM: readonly FormField[] = [
  { name: "fullName", label: "Full name" },
  { name: "description", label: "Description", type: "textarea" },
  {
    name: "oldPassword",
    label: "Current password",
    type: "password",
    hint: "To change your password: your current one, then the new one. Leave both empty to keep it.",
  },
  { name: "password", label: "New password", type: "password", hint: "8 to 256 characters." },
];

/** The update form starts from the profile as it is (passwords never). */
export async function updateFormValues(req: RestRequest): Promise<Record<string, string>> {
  const user = await pathUser(req, UPDATE_FAILED);
  const identity = requireUser(req);
  if (identity.user.username !== user.username && identity.user.role !== "org_admin") throw forbidden();
  return { fullName: user.fullName, description: user.description };
}

/**
 * The user's own profile change (or their administrator's, but for the password). An empty `password` field is no
 * change (a form sends the field empty); a password change needs the current one, checked as a sign-in is (the
 * same lockout), and ends every session of the user, this one too.
 */
export async function updateUserOp(req: RestRequest) {
  const identity = requireUser(req);
  const user = await pathUser(req, UPDATE_FAILED);
  const self = identity.user.username === user.username;
  if (!self && identity.user.role !== "org_admin") throw forbidden();
  const problems: string[] = [];
  const fullName = text(req, "fullName", FULL_NAME_MAX, problems, { allowEmpty: false });
  const description = text(req, "description", DESCRIPTION_MAX, problems);
  const password = req.params.get("password") || undefined;
  const oldPassword = req.params.get("oldPassword") || undefined;
  if (password !== undefined) {
    if (!self) {
      problems.push("Only the user changes their password here; an administrator resets it (resetPassword).");
    } else if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
      problems.push(`'password' must have between ${PASSWORD_MIN} and ${PASSWORD_MAX} characters.`);
    } else if (password === user.username) {
      problems.push("'password' must not be the username.");
    } else if (oldPassword === undefined) {
      problems.push("'oldPassword' (the current password) is required to change the password.");
    }
  } else if (oldPassword !== undefined) {
    problems.push("'password' (the new password) is required with 'oldPassword'.");
  }
  if (problems.length > 0) throw badRequest(UPDATE_FAILED, problems);
  if (password !== undefined && oldPassword !== undefined) {
    try {
      await checkCredentials(user.username, oldPassword);
    } catch (err) {
      if (err instanceof SignInRefused) {
        throw badRequest(UPDATE_FAILED, [
          err.reason === "invalid" ? "The current password is not correct." : err.message,
        ]);
      }
      throw err;
    }
  }
  let updated = user;
  try {
    if (fullName !== undefined || description !== undefined) {
      updated = await updateProfile(user, {
        ...(fullName !== undefined ? { fullName } : {}),
        ...(description !== undefined ? { description } : {}),
      });
    }
  } catch (err) {
    if (err instanceof UserChangedError) throw changed();
    throw err;
  }
  if (password !== undefined) {
    const done = await resetPassword(user.username, await hashPassword(password));
    if (!done) throw changed();
  }
  return {
    success: true,
    username: updated.username,
    ...(password !== undefined ? { passwordChanged: true } : {}),
  };
}

export function updatedUserPage(data: object): string {
  const { username, passwordChanged } = data as { username?: string; passwordChanged?: boolean };
  const name = username ?? "";
  return passwordChanged
    ? resultPage(
        "Password changed",
        "Your password is changed. Every session of yours has ended, this one too: sign in with the new password.",
        [[`${PORTAL_ROOT}/oauth2/signin`, "Sign in"]],
      )
    : resultPage("Profile updated", `${name}'s profile is updated.`, [
        [`${userPath(name)}?f=html`, "Profile"],
        [`${userPath(name)}/update?f=html`, "Edit again"],
      ]);
}

// ---- the Users page ----

/** A form of one button (and its hidden fields) posting to `action`: a row's action on the Users page. */
function buttonForm(action: string, label: string, csrf: string, hidden: Record<string, string> = {}, extra = "") {
  const fields = Object.entries({ ...hidden, csrf })
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join("");
  return `<form method="post" action="${escapeHtml(action)}" class="inline">${fields}${extra}<button type="submit">${escapeHtml(label)}</button></form>`;
}

/**
 * The organization's members for their administrator: each with their role (changed in place), status, and the
 * actions on them (disable or enable, reset the password, delete); and adding a member.
 */
export function usersPage(data: object, req: RestRequest): string {
  const { users = [], nextStart = -1 } = data as { users?: Record<string, unknown>[]; nextStart?: number };
  const me = req.identity.kind === "user" ? req.identity.user.username : "";
  const csrf = req.csrf;
  const portal = `${PORTAL_ROOT}/portals/${encodeURIComponent(req.pathParameters.portalId ?? "self")}`;
  const rows = users
    .map((u) => {
      const username = String(u.username);
      const role = String(u.roleId ?? u.role);
      const disabled = u.disabled === true;
      const base = userPath(username);
      let actions = '<span class="muted">(you)</span>';
      if (csrf && username !== me) {
        const options = [...BUILT_IN_ROLES, ...(BUILT_IN_ROLES.includes(role as never) ? [] : [role])]
          .map((r) => `<option${r === role ? " selected" : ""}>${escapeHtml(r)}</option>`)
          .join("");
        const select = `<select name="role" aria-label="Role of ${escapeHtml(username)}">${options}</select>`;
        actions = [
          buttonForm(`${portal}/updateuserrole`, "Change role", csrf, { user: username }, select),
          buttonForm(`${base}/${disabled ? "enable" : "disable"}`, disabled ? "Enable" : "Disable", csrf),
          buttonForm(`${base}/resetPassword`, "Reset password", csrf),
          buttonForm(`${base}/delete`, "Delete", csrf),
        ].join(" ");
      }
      return (
        `<tr data-username="${escapeHtml(username)}"><td><a href="${escapeHtml(`${base}?f=html`)}">${escapeHtml(username)}</a></td>` +
        `<td>${escapeHtml(String(u.fullName ?? ""))}</td><td>${escapeHtml(String(u.email ?? ""))}</td>` +
        `<td>${escapeHtml(role)}</td><td>${disabled ? "Disabled" : "Active"}</td><td>${actions}</td></tr>`
      );
    })
    .join("");
  const table =
    `<table><tr><th>Username</th><th>Full name</th><th>Email</th><th>Role</th><th>Status</th><th>Actions</th></tr>${rows}</table>` +
    (typeof nextStart === "number" && nextStart > 0
      ? `<p><a href="${escapeHtml(`${portal}/users?f=html&start=${nextStart}`)}">Next page</a></p>`
      : "");
  const add = csrf
    ? `<h2>Add a user</h2>${renderForm(CREATE_USER_FORM, new Map([["role", "org_user"]]), csrf, {
        action: `${PORTAL_ROOT}/community/createUser`,
        submit: "Add user",
        formats: false,
      })}<p class="muted">A password is generated and shown once, on the next page.</p>`
    : '<p class="muted">Adding and changing users is done over HTTPS.</p>';
  const note =
    '<p class="muted">Deleting a user is refused while they own items or groups: reassign or delete their content first (the refusal names it).</p>';
  return resultPage("Users", `${users.length} shown.`, [[`${PORTAL_ROOT}?f=html`, "Directory"]], table + note + add);
}
