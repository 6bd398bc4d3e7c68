import { randomBytes } from "node:crypto";

const ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Portal and server ids look like the original's: 16 alphanumeric characters. */
export function shortId(length = 16): string {
  // 248 is the largest multiple of 62 below 256: rejecting the rest keeps every character equally likely.
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHANUMERIC[b % 62];
    }
  }
  return out;
}

/** Item ids (data stores, services, jobs) are 32 lowercase hex characters, as on the original. */
export function itemId(): string {
  return randomBytes(16).toString("hex");
}
