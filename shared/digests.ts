// Random credentials (client secrets, authorization codes, refresh tokens) are stored as SHA-256 digests only:
// they carry 256 bits of entropy, so a fast digest is as safe as a password hash here, and a leaked table
// yields nothing a client could present.
import { createHash, timingSafeEqual } from "node:crypto";

export const sha256Hex = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex");

/** Whether `value` is what `digestHex` was made from, in constant time. */
export function matchesDigest(value: string, digestHex: string): boolean {
  const expected = Buffer.from(digestHex, "hex");
  const actual = Buffer.from(sha256Hex(value), "hex");
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}
