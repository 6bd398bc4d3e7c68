// The path below /<server>/rest/services/: each segment decoded on its own (only when it holds an escape), and
// everything that could name something else refused with a reason.
import { describe, expect, it } from "vitest";
import { parseServicePath } from "#shared/serving/service-path.ts";

describe("parseServicePath", () => {
  it("reads a folder, a name, a type and the resource's segments", () => {
    expect(parseServicePath("Published/Basemap/MapServer/tile/3/2/1")).toEqual({
      folder: "Published",
      name: "Basemap",
      type: "MapServer",
      resource: ["tile", "3", "2", "1"],
    });
    expect(parseServicePath("Basemap/MapServer/")).toEqual({
      folder: "",
      name: "Basemap",
      type: "MapServer",
      resource: [],
    });
  });

  it("decodes escapes segment by segment, so an encoded separator is never one", () => {
    expect(parseServicePath("%42asemap/Map%53erver")).toMatchObject({ name: "Basemap", type: "MapServer" });
    expect(parseServicePath("Published%2FBasemap/MapServer")).toBe(
      "A path segment may not hold a slash, a backslash or NUL.",
    );
    expect(parseServicePath("Basemap/MapServer/..%5Cx")).toBe(
      "A path segment may not hold a slash, a backslash or NUL.",
    );
    expect(parseServicePath("Basemap/MapServer/%00")).toBe("A path segment may not hold a slash, a backslash or NUL.");
    expect(parseServicePath("Basemap/MapServer/%E0%A4%A")).toBe("The path holds a malformed escape.");
    expect(parseServicePath("Basemap/MapServer/%2e%2E")).toBe("The path holds an empty, '.' or '..' segment.");
  });

  it("refuses what names no service", () => {
    expect(parseServicePath("Basemap")).toBe("No service type (MapServer, SceneServer, …) follows a service name.");
    expect(parseServicePath("a/b/c/MapServer")).toBe(
      "No service type (MapServer, SceneServer, …) follows a service name.",
    );
    expect(parseServicePath("Base-map/MapServer")).toBe("Folder and service names hold only letters, digits and _.");
    expect(parseServicePath(`Basemap/MapServer${"/x".repeat(20)}`)).toBe("The path has too many segments.");
    expect(parseServicePath("x".repeat(2049))).toBe("The path is too long.");
  });
});
