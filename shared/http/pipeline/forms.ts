// The pages a browser's form gets from the pipeline itself, whatever the operation: the form that performs it,
// the confirmation an irreversible one asks for, and post/redirect/get's sealed result page.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { CSRF_FIELD } from "#shared/auth/csrf.ts";
import { FORM_RESULT, formCookie, sealFormResult } from "#shared/http/form-results.ts";
import { escapeHtml, type FormField, type HtmlPage, page, renderForm } from "#shared/http/html.ts";
import type { Operation, RestRequest } from "#shared/http/pipeline/request.ts";
import { renderHtml } from "#shared/http/render.ts";
import { formPageOf } from "#shared/urls.ts";

/** The box an operation that cannot be undone asks to be checked (Operation.confirm). */
export const CONFIRM = "confirm";
const confirmField = (op: Operation): FormField => ({
  name: CONFIRM,
  label: `I understand: ${op.confirm ?? ""}`,
  type: "checkbox",
  required: true,
});

/** A page the pipeline answers itself, whatever the operation: a sealed form result, or a confirmation. */
export class ShownPage {
  readonly html: string;

  constructor(html: string) {
    this.html = html;
  }
}

/**
 * A POST-only operation's form, shown to a browser's GET: its starting values (Operation.formValues) and its
 * fields as this caller sees them (Operation.formFields; undefined: the operation's `form`).
 */
export class FormStart {
  readonly values: Readonly<Record<string, string>>;
  readonly fields: readonly FormField[] | undefined;

  constructor(values: Readonly<Record<string, string>>, fields: readonly FormField[] | undefined) {
    this.values = values;
    this.fields = fields;
  }
}

export function formPage(op: Operation, req: RestRequest, start: FormStart): APIGatewayProxyStructuredResultV2 {
  const signedIn =
    req.identity.kind === "user" ? `<p class="muted">Signed in as ${escapeHtml(req.identity.user.username)}</p>` : "";
  const values = new Map([...Object.entries(start.values), ...req.params.asMap()]);
  const fields = start.fields ?? op.form ?? [];
  const form = renderForm(op.confirm ? [...fields, confirmField(op)] : fields, values, req.csrf, { action: req.path });
  return renderHtml(page(op.name, `<h1>${escapeHtml(op.name)}</h1>${signedIn}${form}`), req.https);
}

/**
 * The second step of a form whose operation cannot be undone, sent without its box checked (a Delete button on
 * an item's page): what it will do, the same form again with its values kept and the box to check, and a way
 * back. It works without any script; nothing has been done yet.
 */
export function confirmationPage(op: Operation, req: RestRequest): ShownPage {
  const carried = [...req.params.asMap()].filter(([name]) => name !== CSRF_FIELD && name !== CONFIRM);
  const form = renderForm(
    [...carried.map(([name]): FormField => ({ name, type: "hidden" })), confirmField(op)],
    new Map(carried),
    req.csrf,
    { action: req.path, submit: op.name, formats: false },
  );
  const back = formPageOf(req.event) ?? `${PORTAL_ROOT}?f=html`;
  return new ShownPage(
    page(
      `Confirm: ${op.name}`,
      `<h1>${escapeHtml(op.name)}?</h1><p role="status">Nothing has been done yet. This cannot be undone: ${escapeHtml(op.confirm ?? "")}</p>` +
        `${form}<p><a href="${escapeHtml(back)}">Cancel</a></p>`,
    ),
  );
}

/** Who a sealed form result belongs to: the signed-in user (of their organization), an app, or nobody. */
export function whoSent(req: RestRequest): string {
  const id = req.identity;
  if (id.kind === "user") return `user:${id.portal.portalId}:${id.user.username}`;
  if (id.kind === "app") return `app:${id.app.clientId}`;
  return "anonymous";
}

/**
 * Post/redirect/get: where a browser is sent after an HTML form's POST, so that reloading the result never sends
 * the form again. A started job's own page (Operation.seeOther), else the page itself sealed into a GET of the
 * same path (shared/http/form-results.ts). Undefined (the page is answered as it is) over plain HTTP or without
 * the CSRF cookie a form's browser holds, for a page of its own rules (scripts, OAuth redirects), or for a page
 * too large for an address.
 */
export async function formResultRedirect(
  op: Operation,
  req: RestRequest,
  data: object,
  html: string | HtmlPage,
): Promise<string | undefined> {
  if (req.method !== "POST" || op.answersPostInPlace || !req.https) return undefined;
  const cookie = formCookie(req.event);
  if (!cookie) return undefined;
  const there = op.seeOther?.(data, req);
  if (there) return there;
  if (typeof html !== "string" && (html.formActions.length > 0 || html.scripts === true)) return undefined;
  const ticket = await sealFormResult(typeof html === "string" ? html : html.body, cookie, req.path, whoSent(req));
  return ticket ? `${req.path}?${new URLSearchParams({ f: "html", [FORM_RESULT]: ticket })}` : undefined;
}
