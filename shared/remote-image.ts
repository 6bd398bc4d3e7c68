// Fetching an image from an address a user gave (a thumbnail by URL), under the data store rules for hosts: a
// function's loopback is its own runtime on AWS and its link-local addresses reach the instance metadata and
// container credentials, and a private address reaches the operator's network behind mapgate, so where local hosts
// are refused (DATASTORE_LOCAL_HOSTS=refuse, as the stack sets) only public addresses are fetched. The local engine
// allows loopback and private addresses (the operator's own machine and network) but never link-local or unspecified
// ones: nothing mapgate serves lives there. A name is resolved once, each of its addresses checked, and the
// connection made to the checked address (a name that resolves elsewhere the second time cannot slip past). Bounded:
// the whole fetch in FETCH_TIMEOUT_MS, the body in MAX_REMOTE_IMAGE_BYTES (read as it streams, whatever the server
// says of its length), no redirect followed (it could lead anywhere; the image's own address is asked for).
import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { config } from "#shared/config.ts";

/** How long fetching an image may take, from the name's resolution to its last byte. */
export const FETCH_TIMEOUT_MS = 10_000;
/** The largest image fetched (ArcGIS keeps thumbnails up to 10 MB; a thumbnail is a small picture). */
export const MAX_REMOTE_IMAGE_BYTES = 2 * 1024 * 1024;
/** The longest address taken. */
export const MAX_IMAGE_URL_LENGTH = 2048;

/** Never fetched, on either engine: link-local (metadata, credentials, DNS) and unspecified addresses. */
const NEVER = new BlockList();
NEVER.addSubnet("169.254.0.0", 16, "ipv4");
NEVER.addSubnet("0.0.0.0", 8, "ipv4");
NEVER.addAddress("::", "ipv6");
NEVER.addSubnet("fe80::", 10, "ipv6");
NEVER.addAddress("fd00:ec2::254", "ipv6");

/** Fetched only where local hosts are allowed (the local engine): loopback, private, shared and unique-local. */
const LOCAL = new BlockList();
LOCAL.addSubnet("127.0.0.0", 8, "ipv4");
LOCAL.addSubnet("10.0.0.0", 8, "ipv4");
LOCAL.addSubnet("172.16.0.0", 12, "ipv4");
LOCAL.addSubnet("192.168.0.0", 16, "ipv4");
// Carrier-grade NAT space, used inside cloud networks too.
LOCAL.addSubnet("100.64.0.0", 10, "ipv4");
LOCAL.addAddress("::1", "ipv6");
LOCAL.addSubnet("fc00::", 7, "ipv6");

/** A refusal or failure of the fetch, said in words for the 400 that names it (never a server's own text). */
export class RemoteImageError extends Error {}

const REFUSED = "its host is a loopback, link-local or private address, which mapgate does not fetch from here.";

/** An IPv4-mapped IPv6 address as the IPv4 address it maps (so ::ffff:127.0.0.1 is checked as 127.0.0.1). */
function unmapped(address: string): { address: string; family: "ipv4" | "ipv6" } | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return { address: mapped[1], family: "ipv4" };
  return { address, family: family === 4 ? "ipv4" : "ipv6" };
}

/** Whether an address may be fetched from: never link-local or unspecified; local ones only where allowed. */
export function addressAllowed(address: string, allowLocal: boolean): boolean {
  const ip = unmapped(address);
  if (!ip) return false;
  if (NEVER.check(ip.address, ip.family)) return false;
  return allowLocal || !LOCAL.check(ip.address, ip.family);
}

/** The address checked, as a URL gives it (IPv6 literals in brackets). */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** Resolves a name once, every address checked; Node connects to what this answers. */
function checkedLookup(allowLocal: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, verbatim: true })
      .then((found: LookupAddress[]) => {
        // Every address, not only the first: a name with one public and one private address is refused.
        if (found.length === 0) throw new RemoteImageError("its host name does not resolve.");
        if (found.some((a) => !addressAllowed(a.address, allowLocal))) throw new RemoteImageError(REFUSED);
        if (options.all) callback(null, found);
        else callback(null, (found[0] as LookupAddress).address, (found[0] as LookupAddress).family);
      })
      .catch((err: unknown) =>
        callback(
          (err instanceof RemoteImageError
            ? err
            : new RemoteImageError("its host name does not resolve.")) as NodeJS.ErrnoException,
          "",
          0,
        ),
      );
  };
}

/**
 * Checks an address before anything is fetched: http or https, no credentials, a host that may be fetched from
 * when it is an IP literal. Throws a RemoteImageError naming the problem.
 */
export function checkImageUrl(raw: string, allowLocal = config().datastorePolicy.localHosts): URL {
  if (raw.length > MAX_IMAGE_URL_LENGTH)
    throw new RemoteImageError(`it is longer than ${MAX_IMAGE_URL_LENGTH} characters.`);
  if (!URL.canParse(raw)) throw new RemoteImageError("it is not a URL.");
  const url = new URL(raw);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new RemoteImageError("it is not an http(s) URL.");
  if (url.username !== "" || url.password !== "") throw new RemoteImageError("it carries a user name or password.");
  const host = hostOf(url);
  if (isIP(host) !== 0 && !addressAllowed(host, allowLocal)) throw new RemoteImageError(REFUSED);
  if (!allowLocal && (host.toLowerCase() === "localhost" || host.toLowerCase().endsWith(".localhost")))
    throw new RemoteImageError(REFUSED);
  return url;
}

/** The fetched image's bytes and the file name its address ends with ("" when none). */
export interface RemoteImage {
  readonly bytes: Buffer;
  readonly filename: string;
}

/**
 * GETs `raw` under the rules above: its bytes (at most MAX_REMOTE_IMAGE_BYTES), or a RemoteImageError saying why
 * not. The bytes are not checked to be an image here: the caller checks them as it checks an upload.
 */
export async function fetchRemoteImage(
  raw: string,
  allowLocal = config().datastorePolicy.localHosts,
): Promise<RemoteImage> {
  const url = checkImageUrl(raw, allowLocal);
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, value?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(value as Buffer);
    };
    const timer = setTimeout(
      () =>
        finish(new RemoteImageError(`its server did not answer the whole image within ${FETCH_TIMEOUT_MS / 1000} s.`)),
      FETCH_TIMEOUT_MS,
    );
    const req = request(
      url,
      {
        method: "GET",
        lookup: checkedLookup(allowLocal),
        headers: { accept: "image/png, image/jpeg, image/gif, image/webp", "user-agent": "mapgate" },
        // No connection kept for another request: each fetch is checked anew.
        agent: false,
      },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          res.resume();
          return finish(
            new RemoteImageError(
              `its server answered a redirect (HTTP ${status}), which is not followed: give the image's own address.`,
            ),
          );
        }
        if (status !== 200) {
          res.resume();
          return finish(new RemoteImageError(`its server answered HTTP ${status}.`));
        }
        const declared = Number(res.headers["content-length"]);
        const tooLarge = new RemoteImageError(`the image is larger than ${MAX_REMOTE_IMAGE_BYTES} bytes.`);
        if (Number.isFinite(declared) && declared > MAX_REMOTE_IMAGE_BYTES) return finish(tooLarge);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_REMOTE_IMAGE_BYTES) return finish(tooLarge);
          chunks.push(chunk);
        });
        res.on("end", () => finish(undefined, Buffer.concat(chunks)));
        res.on("error", () => finish(new RemoteImageError("its server ended the answer early.")));
      },
    );
    req.on("error", (err: Error) =>
      finish(err instanceof RemoteImageError ? err : new RemoteImageError("its server could not be reached.")),
    );
    req.end();
  });
  const last = url.pathname.replace(/^.*\//, "");
  let filename = last;
  try {
    filename = decodeURIComponent(last);
  } catch {
    // A malformed escape: the name as written (it is only a name, made plain by the caller).
  }
  return { bytes, filename: filename.slice(0, 255) };
}
