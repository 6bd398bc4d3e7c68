// HTML pages for `f=html`: escaped, UTF-8, no scripts, one hashed stylesheet so the
// Content-Security-Policy can forbid everything else. The map viewer's page alone loads scripts, this site's own.
import { createHash } from "node:crypto";

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `body{font-family:system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{background:#20364f;color:#fff;padding:.6rem 1.2rem}header a{color:#fff}
main{padding:1rem 1.2rem;max-width:70rem;overflow-wrap:anywhere}table{border-collapse:collapse;margin:.2rem 0}
th,td{border:1px solid #d0d5da;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}ul{margin:.2rem 0;padding-left:1.2rem}
.error{border-left:4px solid #b3261e;background:#fdecea;padding:.5rem 1rem}
form{display:grid;grid-template-columns:fit-content(16rem) minmax(0,40rem);gap:.4rem .8rem;align-items:center}
label{font-weight:600}button{grid-column:2;justify-self:start;padding:.3rem 1.2rem}
input,select,textarea{max-width:100%;box-sizing:border-box}
textarea{min-height:6rem}.muted{color:#5a6470}.hint{white-space:pre-wrap;font-size:.9em;margin:0}
fieldset{border:1px solid #d0d5da;display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.1rem .5rem;min-width:0}
@media (max-width:40rem){form{grid-template-columns:minmax(0,1fr)}button{grid-column:1}}`;

const STYLE_HASH = `'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`;

/**
 * The policy of every page: nothing but the one hashed stylesheet; forms post only here, plus (for the OAuth
 * consent page) the one checked redirect URI a form's answer sends the browser to, since Chromium and Safari
 * apply form-action to the redirect after a form POST too.
 */
export function contentSecurityPolicy(formActions: readonly string[] = [], { scripts = false } = {}): string {
  return [
    "default-src 'none'",
    // A map viewer's page runs this site's own scripts (no inline script, no eval: the map library's CSP build),
    // its map worker, and reads this site's services; maps draw data: and blob: images of their own.
    ...(scripts
      ? [
          "script-src 'self'",
          `style-src 'self' ${STYLE_HASH}`,
          "img-src 'self' data: blob:",
          "connect-src 'self'",
          "worker-src 'self'",
        ]
      : [`style-src ${STYLE_HASH}`, "img-src 'self'"]),
    `form-action ${["'self'", ...formActions].join(" ")}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** A page plus what its forms' answers may redirect to (see contentSecurityPolicy). */
export interface HtmlPage {
  readonly body: string;
  readonly formActions: readonly string[];
  /** Whether the page loads this site's scripts and stylesheets (a map viewer's): see contentSecurityPolicy. */
  readonly scripts?: boolean;
}

/** A page; `head` adds elements to its head (a viewer's scripts and stylesheets, allowed by its policy). */
export function page(title: string, body: string, head = ""): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)} · mapgate</title><style>${STYLE}</style>${head}</head>
<body><header><strong>mapgate</strong> · ${escapeHtml(title)}</header><main>
${body}
</main></body></html>
`;
}

/**
 * How deep renderValue nests tables and lists: deeper than a person reads, and a bound on its recursion
 * whatever a result holds.
 */
export const MAX_RENDER_DEPTH = 32;

/** Members that hold an instant in epoch milliseconds: a page shows them as UTC ISO dates. */
const DATE_KEYS = new Set([
  "created",
  "modified",
  "expires",
  "expiration",
  "lastLogin",
  "submitted",
  "updated",
  "joined",
  "lockedUntil",
]);

/** An instant in epoch milliseconds as a person reads it: `2026-11-24T07:12:31Z`, with the number kept. */
export function renderDate(ms: number): string {
  const iso = new Date(ms).toISOString().replace(/\.000Z$/, "Z");
  return `<time datetime="${iso}" title="${ms}">${iso}</time>`;
}

/** Whether a member's value is shown as a date: a date key with a plausible epoch-milliseconds number. */
const isDate = (key: string, value: unknown): value is number =>
  DATE_KEYS.has(key) && typeof value === "number" && Number.isSafeInteger(value) && value > 1e11 && value < 1e14;

/** Any JSON value as nested tables and lists, readable by a person (instants under date keys as UTC ISO dates). */
export function renderValue(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return '<span class="muted">null</span>';
  if (typeof value === "string") {
    return /^https?:\/\/[^\s"'<>]+$/.test(value)
      ? `<a href="${escapeHtml(value)}">${escapeHtml(value)}</a>`
      : escapeHtml(value);
  }
  if (typeof value === "number" || typeof value === "boolean") return escapeHtml(String(value));
  if (depth >= MAX_RENDER_DEPTH) return '<span class="muted">(nested too deep to show here)</span>';
  if (Array.isArray(value)) {
    if (value.length === 0) return '<span class="muted">(none)</span>';
    return `<ul>${value.map((v) => `<li>${renderValue(v, depth + 1)}</li>`).join("")}</ul>`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return '<span class="muted">(empty)</span>';
  return `<table>${entries.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${isDate(k, v) ? renderDate(v) : renderValue(v, depth + 1)}</td></tr>`).join("")}</table>`;
}

export interface FormField {
  readonly name: string;
  readonly label?: string;
  readonly type?: "text" | "password" | "textarea" | "number" | "checkbox" | "hidden";
  readonly required?: boolean;
  /** A select's choices: a value alone, or a value with the words shown for it. */
  readonly options?: readonly (string | { readonly value: string; readonly label: string })[];
  /**
   * Checkboxes, one per choice, each named `<name>:<value>` and sent as `true` when checked (the request's
   * parameters take one value per name); checked are those in the field's value, a comma-separated list.
   */
  readonly checkboxes?: readonly string[];
  /** A note shown under the field (an example, what an empty value means); kept as written, line breaks too. */
  readonly hint?: string;
  /**
   * A select's first option, with an empty value and this text: what leaving the field unset means. A form sent
   * by GET sends every field, so "not given" must be a value the operation reads as absent.
   */
  readonly blank?: string;
}

/** A form that performs the operation: POSTs to the same URL, asking for an HTML answer by default. */
export function renderForm(
  fields: readonly FormField[],
  values: ReadonlyMap<string, string>,
  csrf: string | undefined,
  options: { action?: string; method?: "get" | "post"; submit?: string; formats?: boolean } = {},
): string {
  const rows = fields.map((f) => {
    const hint = f.hint ? `<span></span><p class="muted hint">${escapeHtml(f.hint)}</p>` : "";
    return field(f) + hint;
  });
  function field(f: FormField): string {
    const id = `field-${escapeHtml(f.name)}`;
    const label = `<label for="${id}">${escapeHtml(f.label ?? f.name)}</label>`;
    const value = values.get(f.name) ?? "";
    const required = f.required ? " required" : "";
    if (f.checkboxes) {
      const checked = new Set(value.split(","));
      const boxes = f.checkboxes
        .map((c, i) => {
          const boxId = `${id}-${i}`;
          return `<input id="${boxId}" type="checkbox" name="${escapeHtml(`${f.name}:${c}`)}" value="true"${checked.has(c) ? " checked" : ""}><label for="${boxId}">${escapeHtml(c)}</label>`;
        })
        .join("");
      return `<span id="${id}">${escapeHtml(f.label ?? f.name)}</span><fieldset aria-labelledby="${id}">${boxes}</fieldset>`;
    }
    if (f.options) {
      const blank =
        f.blank === undefined
          ? ""
          : `<option value=""${value === "" ? " selected" : ""}>${escapeHtml(f.blank)}</option>`;
      const opts = f.options
        .map((o) => {
          if (typeof o === "string") return `<option${o === value ? " selected" : ""}>${escapeHtml(o)}</option>`;
          return `<option value="${escapeHtml(o.value)}"${o.value === value ? " selected" : ""}>${escapeHtml(o.label)}</option>`;
        })
        .join("");
      return `${label}<select id="${id}" name="${escapeHtml(f.name)}">${blank}${opts}</select>`;
    }
    if (f.type === "textarea") {
      return `${label}<textarea id="${id}" name="${escapeHtml(f.name)}"${required}>${escapeHtml(value)}</textarea>`;
    }
    if (f.type === "checkbox") {
      return `${label}<input id="${id}" type="checkbox" name="${escapeHtml(f.name)}" value="true"${value === "true" ? " checked" : ""}${required}>`;
    }
    if (f.type === "hidden") return `<input type="hidden" name="${escapeHtml(f.name)}" value="${escapeHtml(value)}">`;
    const type = f.type ?? "text";
    const shown = type === "password" ? "" : value;
    return `${label}<input id="${id}" type="${type}" name="${escapeHtml(f.name)}" value="${escapeHtml(shown)}"${required}>`;
  }
  if (options.formats !== false) {
    rows.push(
      '<label for="field-f">Format</label><select id="field-f" name="f"><option selected>html</option><option>json</option><option>pjson</option></select>',
    );
  }
  const hidden = csrf ? `<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">` : "";
  const action = options.action ? ` action="${escapeHtml(options.action)}"` : "";
  const submit = escapeHtml(options.submit ?? "Submit");
  // A GET form never carries the CSRF field: it would land in URLs, logs and Referer headers.
  const method = options.method ?? "post";
  const guard = method === "post" ? hidden : "";
  return `<form method="${method}"${action}>${guard}${rows.join("\n")}<button type="submit">${submit}</button></form>`;
}

/** The values of a checkbox group (FormField.checkboxes) the request checked, in the offered order. */
export function checkedBoxes(name: string, offered: readonly string[], get: (name: string) => string | undefined) {
  return offered.filter((c) => get(`${name}:${c}`) === "true");
}

/** A result page: what happened, in words, and the ways back and on. */
export function resultPage(
  title: string,
  said: string,
  links: readonly (readonly [href: string, label: string])[],
  more = "",
): string {
  const nav = links.map(([href, label]) => `<a href="${escapeHtml(href)}">${escapeHtml(label)}</a>`).join(" · ");
  return page(title, `<h1>${escapeHtml(title)}</h1><p role="status">${escapeHtml(said)}</p>${more}<p>${nav}</p>`);
}
