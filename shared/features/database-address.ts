// Where a database connection may go. On AWS a function's loopback is its own runtime (the Lambda runtime API,
// extensions) and its link-local addresses reach the instance metadata and container credentials: a data
// store pointing there would turn mapgate into a probe of its own machine, so the stack refuses them
// (DATASTORE_LOCAL_HOSTS=refuse). A host name is resolved here and the connection made to the address checked,
// so a name that resolves elsewhere the second time (DNS rebinding) cannot slip past.
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { config } from "#shared/config.ts";
import { DatasetError } from "#shared/features/errors.ts";

const LOCAL = new BlockList();
LOCAL.addSubnet("127.0.0.0", 8, "ipv4");
// Link-local: 169.254.169.254 (instance metadata), 169.254.170.2 (container credentials), 169.254.169.253 (DNS).
LOCAL.addSubnet("169.254.0.0", 16, "ipv4");
// "This network": connecting to 0.0.0.0 reaches the local host.
LOCAL.addSubnet("0.0.0.0", 8, "ipv4");
LOCAL.addAddress("::1", "ipv6");
LOCAL.addAddress("::", "ipv6");
LOCAL.addSubnet("fe80::", 10, "ipv6");
// The instance metadata service's IPv6 address.
LOCAL.addAddress("fd00:ec2::254", "ipv6");

/** Whether an IP address is one of the machine's own (loopback, link-local, unspecified); IPv4-mapped too. */
export function isLocalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return LOCAL.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** Resolving a name is bounded like connecting: a resolver that never answers must not hold the request. */
const LOOKUP_TIMEOUT_MS = 5_000;

export const LOCAL_HOST_REFUSED =
  "The database's host is a loopback or link-local address of mapgate's own machine, which this deployment refuses.";

/**
 * The address to connect to for a database host: the host itself where local addresses are allowed (the local
 * engine), else its checked address. Throws a DatasetError (never naming anything but the host's kind).
 */
export async function databaseAddress(host: string, allowLocal = config().datastorePolicy.localHosts): Promise<string> {
  if (allowLocal) return host;
  if (host.toLowerCase() === "localhost" || host.toLowerCase().endsWith(".localhost"))
    throw new DatasetError(LOCAL_HOST_REFUSED);
  if (isIP(host) !== 0) {
    if (isLocalAddress(host)) throw new DatasetError(LOCAL_HOST_REFUSED);
    return host;
  }
  let timer: NodeJS.Timeout | undefined;
  const found = await Promise.race([
    lookup(host, { all: true, verbatim: true }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new DatasetError("The database's host name did not resolve in time.")),
        LOOKUP_TIMEOUT_MS,
      );
    }),
  ])
    .catch((err: unknown) => {
      if (err instanceof DatasetError) throw err;
      throw new DatasetError("The database's host name does not resolve.");
    })
    .finally(() => clearTimeout(timer));
  // Every address is checked, not only the first: a name with one public and one local address is refused.
  if (found.length === 0) throw new DatasetError("The database's host name does not resolve.");
  if (found.some((a) => isLocalAddress(a.address))) throw new DatasetError(LOCAL_HOST_REFUSED);
  return (found[0] as { address: string }).address;
}
