// Passwords are stored as scrypt hashes (node:crypto) in a self-describing string, so parameters can
// be raised later without breaking stored hashes: scrypt$N$r$p$salt$hash (base64url).
import { randomBytes, type ScryptOptions, scrypt as scryptCb, timingSafeEqual } from "node:crypto";

const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
// scrypt needs 128·N·r bytes; leave headroom over the 32 MiB this takes.
const MAX_MEM = 64 * 1024 * 1024;

function scrypt(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password.normalize("NFC"), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, { N, r: R, p: P, maxmem: MAX_MEM });
  return ["scrypt", N, R, P, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/**
 * A hash of a random password, checked against when the user does not exist so that costs the same.
 * Made when the module loads: made on first use, the first unknown user would pay for two hashes.
 */
const decoy: Promise<string> = hashPassword(randomBytes(18).toString("base64url"));

/** Constant-time check; `hash` undefined (unknown user) still pays for one scrypt and answers false. */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  const stored = hash ?? (await decoy);
  const parts = stored.split("$");
  const [scheme, n, r, p, salt, key] = parts;
  if (parts.length !== 6 || scheme !== "scrypt" || !n || !r || !p || !salt || !key) return false;
  const expected = Buffer.from(key, "base64url");
  const actual = await scrypt(password, Buffer.from(salt, "base64url"), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: MAX_MEM,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected) && hash !== undefined;
}

/** A password the demo bootstrap prints once: 20 characters from an unambiguous alphabet. */
export function generatePassword(): string {
  const alphabet = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789";
  let out = "";
  while (out.length < 20) {
    // 216 is the largest multiple of 54 below 256: rejecting the rest keeps every character equally likely.
    for (const b of randomBytes(32)) if (b < 216 && out.length < 20) out += alphabet[b % 54];
  }
  return out;
}
