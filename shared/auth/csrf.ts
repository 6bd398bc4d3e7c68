// CSRF protection for the HTML forms (signed double submit). A browser holds a random value in a host-only
// cookie (`__Host-` prefix: Secure, Path=/, no Domain, so no sibling site can plant one); every form carries
// HMAC(key, value). A cross-site page can neither read the cookie nor compute the HMAC, and a same-site
// attacker cannot plant a cookie whose HMAC it knows. The key is derived from the token key, so forms stay
// valid across functions and fail closed after a key rotation (the user reloads the form).
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { keyFor, tokenKeys } from "#shared/auth/keys.ts";
import { cookieValues } from "#shared/auth/cookies.ts";

export const CSRF_COOKIE = "__Host-mapgate_csrf";
export const CSRF_FIELD = "csrf";

const macKeys = new Map<string, Buffer>();
function macKey(kid: string, key: Uint8Array): Buffer {
  let k = macKeys.get(kid);
  if (!k) {
    k = Buffer.from(hkdfSync("sha256", key, "mapgate-csrf", "form", 32));
    macKeys.set(kid, k);
  }
  return k;
}

const VALUE = /^[A-Za-z0-9_-]{32,64}$/;

/** The browser's CSRF value, or a new one with the Set-Cookie header that gives it to the browser. */
export function csrfCookie(event: APIGatewayProxyEventV2): { value: string; setCookie?: string } {
  const existing = cookieValues(event, CSRF_COOKIE)[0];
  if (existing && VALUE.test(existing)) return { value: existing };
  const value = randomBytes(24).toString("base64url");
  return { value, setCookie: `${CSRF_COOKIE}=${value}; Path=/; Secure; HttpOnly; SameSite=Strict` };
}

/** The hidden field a form carries for the browser holding `cookieValue`. */
export async function csrfField(cookieValue: string): Promise<string> {
  const { current } = await tokenKeys();
  const mac = createHmac("sha256", macKey(current.kid, current.key)).update(cookieValue).digest("base64url");
  return `${current.kid}.${mac}`;
}

/**
 * Whether a POST carries a form field that matches its own CSRF cookie, and (when the browser says where the
 * form came from) was sent from one of our own pages.
 */
export async function csrfValid(event: APIGatewayProxyEventV2, field: string | undefined, origins: readonly string[]) {
  const cookie = cookieValues(event, CSRF_COOKIE)[0];
  if (!field || !cookie || !VALUE.test(cookie) || field.length > 200) return false;
  const origin = event.headers?.origin;
  if (origin !== undefined && origin !== "null" && !origins.includes(origin)) return false;
  if (origin === "null") return false;
  if (event.headers?.["sec-fetch-site"] === "cross-site") return false;
  const dot = field.lastIndexOf(".");
  const key = dot > 0 ? await keyFor(field.slice(0, dot)) : undefined;
  if (!key) return false;
  const expected = createHmac("sha256", macKey(field.slice(0, dot), key))
    .update(cookie)
    .digest();
  const given = Buffer.from(field.slice(dot + 1), "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
