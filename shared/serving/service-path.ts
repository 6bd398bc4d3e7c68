// The path below /<server>/rest/services/: [<folder>/]<name>/<Type>[/<resource>…], parsed strictly and in
// time linear in its length (the gateway already decoded each segment once; nothing is decoded again here).
import { SERVICE_TYPES, type ServiceType } from "#shared/stores/service-keys.ts";

export interface ServicePath {
  readonly folder: string;
  readonly name: string;
  readonly type: ServiceType;
  /** The segments after the type (`["tile", "3", "2", "1"]`), none for the service itself. */
  readonly resource: readonly string[];
}

const MAX_SEGMENTS = 16;
const MAX_SEGMENT = 256;
const NAME = /^[A-Za-z0-9_]{1,120}$/;

/**
 * The service a raw (still percent-encoded) path names, or a reason it cannot name one. Each segment is
 * decoded on its own, so an encoded slash or backslash never becomes a separator.
 */
export function parseServicePath(rawPath: string): ServicePath | string {
  if (rawPath.length > 2048) return "The path is too long.";
  const segments: string[] = [];
  for (const raw of rawPath.split("/")) {
    // Most segments hold no escape at all (a tile's never do): only those are decoded.
    let s = raw;
    if (raw.includes("%")) {
      try {
        s = decodeURIComponent(raw);
      } catch {
        return "The path holds a malformed escape.";
      }
    }
    if (s.includes("/") || s.includes("\\") || s.includes("\u0000"))
      return "A path segment may not hold a slash, a backslash or NUL.";
    segments.push(s);
  }
  if (segments.at(-1) === "") segments.pop();
  if (segments.length > MAX_SEGMENTS) return "The path has too many segments.";
  if (segments.some((s) => s === "" || s.length > MAX_SEGMENT || s === "." || s === "..")) {
    return "The path holds an empty, '.' or '..' segment.";
  }
  const at = segments.findIndex((s) => (SERVICE_TYPES as readonly string[]).includes(s));
  if (at !== 1 && at !== 2) return "No service type (MapServer, SceneServer, …) follows a service name.";
  const names = segments.slice(0, at);
  if (!names.every((n) => NAME.test(n))) return "Folder and service names hold only letters, digits and _.";
  return {
    folder: at === 2 ? (names[0] ?? "") : "",
    name: names[at - 1] ?? "",
    type: segments[at] as ServiceType,
    resource: segments.slice(at + 1),
  };
}
