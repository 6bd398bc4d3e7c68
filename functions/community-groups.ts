// Everything under …/sharing/rest/community/ that no other route serves: groups and their members, as ArcGIS
// has them. One function (the stack's resource budget counts functions), its operations declared in the `{name}`
// templates of its route (shared/system.ts), each with the shared pipeline's steps; the use cases are in
// shared/groups/ (lifecycle, membership, requests, search):
//   POST createGroup                                   a new group, its owner its first member
//   GET  groups?q=…                                    group search (the item search's query language)
//   GET  groups/<id>                                   the group, with the caller's membership
//   GET  groups/<id>/users                             owner, managers and members
//   POST groups/<id>/update | delete | reassign        the group's owner and managers (delete, reassign: owner)
//   POST groups/<id>/join | leave                      the caller (join asks the managers unless autoJoin)
//   POST groups/<id>/createApplication                 the caller asks to join (invitation-only groups too)
//   POST groups/<id>/addUsers | removeUsers | invite   the group's owner and managers
//   GET  groups/<id>/applications[/<u>]                join requests, to the owner and managers
//   POST groups/<id>/applications/<u>/accept | decline
//   GET  users/<u>/invitations                         the user's invitations
//   POST users/<u>/invitations/<groupId>/accept | decline
//   POST createUser, users/<u>/update | disable | enable | delete | resetPassword   people (shared/user-admin.ts)
// Administrators of the group's organization act with portal:admin:viewGroups, updateGroups, deleteGroups,
// reassignGroups and assignToGroups.
import { groupsPage, thenPage } from "#shared/group-pages.ts";
import {
  create,
  CREATE_FORM,
  read,
  readPage,
  reassign,
  remove,
  update,
  UPDATE_FORM,
  updateFormValues,
} from "#shared/groups/lifecycle.ts";
import { addUsers, invite, join, leave, removeUsers, users } from "#shared/groups/membership.ts";
import {
  answerApplication,
  answerInvitation,
  application,
  applications,
  createApplication,
  invitations,
} from "#shared/groups/requests.ts";
import { searchGroups } from "#shared/groups/search.ts";
import type { Compute } from "#shared/http/pipeline.ts";
import { type FamilyOperation, familyHandler } from "#shared/http/router.ts";
import {
  CREATE_USER_FORM,
  createdUserPage,
  createUserOp,
  deletedPage,
  deleteUserOp,
  disabledPage,
  disableOp,
  enabledPage,
  enableOp,
  PASSWORD_PARAMS,
  resetPasswordOp,
  resetPasswordPage,
  UPDATE_USER_FORM,
  updatedUserPage,
  updateFormValues as updateUserFormValues,
  updateUserOp,
} from "#shared/user-admin.ts";

/** A change a group's page (or the create form) posts: a browser is sent back to the group's page. */
const change = (name: string, compute: Compute, more: Partial<FamilyOperation["op"]> = {}): FamilyOperation => ({
  op: { name, postOnly: true, ...more },
  compute: thenPage(compute),
});

export const handler = familyHandler({
  greedy: "path",
  notFound: "Not Found",
  shapes: { groupId: /^[0-9A-Za-z]{1,64}$/, decision: /^(?:accept|decline)$/ },
  operations: {
    createGroup: change("Create Group", create, { form: CREATE_FORM }),
    groups: { op: { name: "Groups", html: (data, req) => groupsPage("Groups", data, req) }, compute: searchGroups },
    "groups/{groupId}": { op: { name: "Group", html: readPage }, compute: read },
    "groups/{groupId}/users": { op: { name: "Group Users" }, compute: users },
    "groups/{groupId}/update": change("Update Group", update, { form: UPDATE_FORM, formValues: updateFormValues }),
    "groups/{groupId}/delete": change("Delete Group", remove, {
      confirm: "the group goes for good (its items stay).",
    }),
    "groups/{groupId}/reassign": change("Reassign Group", reassign),
    "groups/{groupId}/join": change("Join Group", join),
    "groups/{groupId}/leave": change("Leave Group", leave),
    "groups/{groupId}/createApplication": change("Create Group Application", createApplication),
    "groups/{groupId}/addUsers": change("Add Users", addUsers),
    "groups/{groupId}/removeUsers": change("Remove Users", removeUsers),
    "groups/{groupId}/invite": change("Invite Users", invite),
    "groups/{groupId}/applications": { op: { name: "Group Applications" }, compute: applications },
    "groups/{groupId}/applications/{username}": { op: { name: "Group Application" }, compute: application },
    "groups/{groupId}/applications/{username}/{decision}": change("Answer Group Application", answerApplication),
    "users/{username}/invitations": { op: { name: "Invitations" }, compute: invitations },
    // Answered by the invited user, who has no group page to go back to yet.
    "users/{username}/invitations/{groupId}/{decision}": {
      op: { name: "Invitation", postOnly: true },
      compute: answerInvitation,
    },
    createUser: {
      op: { name: "Create User", postOnly: true, httpsOnly: true, form: CREATE_USER_FORM, html: createdUserPage },
      compute: createUserOp,
    },
    "users/{username}/update": {
      op: {
        name: "Update User",
        postOnly: true,
        form: UPDATE_USER_FORM,
        formValues: updateUserFormValues,
        html: updatedUserPage,
        bodyOnly: PASSWORD_PARAMS,
        // Passwords, and the answers that carry them, never travel in clear.
        httpsOnly: true,
        // A password change ends every session, this one too: its page is answered at once, as no redirect to a
        // result sealed for this session could show it.
        answersPostInPlace: true,
      },
      compute: updateUserOp,
    },
    "users/{username}/disable": {
      op: { name: "Disable User", postOnly: true, html: disabledPage },
      compute: disableOp,
    },
    "users/{username}/enable": { op: { name: "Enable User", postOnly: true, html: enabledPage }, compute: enableOp },
    "users/{username}/delete": {
      op: { name: "Delete User", postOnly: true, html: deletedPage, confirm: "the user is deleted for good." },
      compute: deleteUserOp,
    },
    "users/{username}/resetPassword": {
      op: {
        name: "Reset Password",
        postOnly: true,
        httpsOnly: true,
        html: resetPasswordPage,
        confirm: "the user's current password and every session of theirs stop working.",
      },
      compute: resetPasswordOp,
    },
  },
});
