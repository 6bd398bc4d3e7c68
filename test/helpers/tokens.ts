// Tokens made outside the server, with the engine's own key, for cases no request can produce
// (a token already expired, or tampered with after issue).
import { hkdfSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EncryptJWT } from "jose";

export function engineKey(dataDir: string): { kid: string; key: Uint8Array } {
  const { kid, k } = JSON.parse(readFileSync(join(dataDir, "token-key.json"), "utf8")) as { kid: string; k: string };
  return { kid, key: new Uint8Array(hkdfSync("sha256", Buffer.from(k), "mapgate-token", "A256GCM", 32)) };
}

export interface ForgeOptions {
  username: string;
  portalId: string;
  aud?: string;
  cli?: string;
  bnd?: string;
  exp: number;
  kid?: string;
  key?: Uint8Array;
}

export async function forge(dataDir: string, o: ForgeOptions): Promise<string> {
  const own = engineKey(dataDir);
  return new EncryptJWT({ org: o.portalId, cli: o.cli ?? "requestip", bnd: o.bnd ?? "127.0.0.1" })
    .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid: o.kid ?? own.kid })
    .setIssuer("mapgate")
    .setSubject(o.username)
    .setAudience(o.aud ?? "portal")
    .setJti(`forged-${Math.random().toString(36).slice(2)}`)
    .setIssuedAt()
    .setExpirationTime(o.exp)
    .encrypt(o.key ?? own.key);
}
