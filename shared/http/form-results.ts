// Post/redirect/get for the HTML forms: the page a form's POST produced is sealed into the address of a GET that
// shows it (`?formResult=…`), and the POST is answered 303 See Other to there. Reloading that page, or going back
// to it, then shows the result again instead of sending the form a second time. Nothing is stored: the page is
// compressed and encrypted (AES-256-GCM, a key derived from the token key) with the browser's CSRF cookie, the path
// and who sent it as associated data, so the address opens only in the browser that sent the form, at the form's
// path, for the same signed-in user (not after signing out or in as another), and only for a few minutes; it says
// nothing to whoever reads it in a log or a history.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { CSRF_COOKIE } from "#shared/auth/csrf.ts";
import { keyFor, tokenKeys } from "#shared/auth/keys.ts";
import { cookieValues } from "#shared/auth/cookies.ts";

/** The query parameter that carries a sealed result page. */
export const FORM_RESULT = "formResult";

/** How long a result page can be shown again after its form was sent. */
export const FORM_RESULT_TTL_MS = 10 * 60_000;

/**
 * The longest sealed page put in an address: with the path, well inside the 10 KB request line and headers an API
 * Gateway request may have. A page too large for that (rare for a form's result) is answered directly.
 */
const MAX_SEALED = 6000;

/** A page larger than this is not even compressed to try. */
const MAX_PAGE = 256 * 1024;

const COOKIE_VALUE = /^[A-Za-z0-9_-]{32,64}$/;

const keys = new Map<string, Buffer>();
function keyOf(kid: string, key: Uint8Array): Buffer {
  let k = keys.get(kid);
  if (!k) {
    k = Buffer.from(hkdfSync("sha256", key, "mapgate-form-result", "page", 32));
    keys.set(kid, k);
  }
  return k;
}

/** The browser's CSRF cookie, which a sealed page is bound to; undefined when it has none. */
export function formCookie(event: APIGatewayProxyEventV2): string | undefined {
  const value = cookieValues(event, CSRF_COOKIE)[0];
  return value && COOKIE_VALUE.test(value) ? value : undefined;
}

/** What a sealed page is bound to: the browser's cookie, the form's path, and who sent it (`who`). */
const aad = (cookie: string, path: string, who: string) => Buffer.from(`${cookie}\n${path}\n${who}`, "utf8");

/** The page sealed for the browser holding `cookie`, at `path`; undefined when it is too large for an address. */
export async function sealFormResult(
  html: string,
  cookie: string,
  path: string,
  who: string,
): Promise<string | undefined> {
  const page = Buffer.from(html, "utf8");
  if (page.length > MAX_PAGE) return undefined;
  const { current } = await tokenKeys();
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(current.kid, current.key), iv);
  cipher.setAAD(aad(cookie, path, who));
  const expires = Buffer.alloc(8);
  expires.writeBigUInt64BE(BigInt(Date.now() + FORM_RESULT_TTL_MS));
  const plain = Buffer.concat([expires, deflateRawSync(page)]);
  const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  const ticket = `${current.kid}.${sealed.toString("base64url")}`;
  return ticket.length <= MAX_SEALED ? ticket : undefined;
}

/** The page a ticket sealed, when it is this browser's, for this path, and not expired; else undefined. */
export async function openFormResult(
  ticket: string,
  cookie: string | undefined,
  path: string,
  who: string,
): Promise<string | undefined> {
  if (!cookie || ticket.length > MAX_SEALED) return undefined;
  const dot = ticket.lastIndexOf(".");
  const key = dot > 0 ? await keyFor(ticket.slice(0, dot)) : undefined;
  if (!key) return undefined;
  const sealed = Buffer.from(ticket.slice(dot + 1), "base64url");
  if (sealed.length < 12 + 16 + 8) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(ticket.slice(0, dot), key), sealed.subarray(0, 12));
    decipher.setAAD(aad(cookie, path, who));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const plain = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
    if (Number(plain.readBigUInt64BE(0)) < Date.now()) return undefined;
    // Sealed by us (the tag proves it), so at most MAX_PAGE once inflated; the limit is kept anyway.
    return inflateRawSync(plain.subarray(8), { maxOutputLength: MAX_PAGE }).toString("utf8");
  } catch {
    // Altered, another browser's, another path's, or sealed with a key no longer held.
    return undefined;
  }
}
