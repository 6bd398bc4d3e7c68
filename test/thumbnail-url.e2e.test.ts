// Thumbnails by URL (`thumbnailUrl`, or `thumbnail` as an http(s) URL, on addItem and update; updateThumbnail's
// `url`), fetched by mapgate from a real HTTP server on loopback: the local engine allows loopback hosts as its data
// stores do, and a second engine started as the stack runs (DATASTORE_LOCAL_HOSTS=refuse) refuses the same address.
// An image is kept as an uploaded one is; a page that is not an image, an image too large, a server too slow, a
// redirect and an error answer are each refused with a 400 naming why, and leave the item as it was.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, signIn } from "./helpers/http.ts";
import { addressAllowed, MAX_REMOTE_IMAGE_BYTES } from "#shared/remote-image.ts";

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
let strict: RunningEngine | undefined;
let images: Server;
let origin = "";
let token = "";
const requests: string[] = [];
const { getJson, postJson } = jsonCalls(() => engine.ca);
const rest = (path: string, on = engine) => `${on.ready.https}${REST}${path}`;

/** A 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
/** A 1×1 lossless WebP. */
const WEBP = Buffer.from("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==", "base64");

/** What the image server answers at each path. */
function serve(path: string, res: import("node:http").ServerResponse): void {
  switch (path) {
    case "/maps/city%20map.png":
      res.writeHead(200, { "content-type": "image/png" }).end(PNG);
      return;
    case "/pictures/river.webp":
      res.writeHead(200, { "content-type": "image/webp" }).end(WEBP);
      return;
    case "/page.png":
      // Named as an image, served as one, but a page: the bytes decide.
      res.writeHead(200, { "content-type": "image/png" }).end("<html><script>alert(1)</script></html>");
      return;
    case "/large.png": {
      // No length said: the bound holds as the bytes stream in.
      res.writeHead(200, { "content-type": "image/png" });
      res.write(PNG);
      const chunk = Buffer.alloc(64 * 1024);
      let sent = PNG.length;
      const more = () => {
        while (sent <= MAX_REMOTE_IMAGE_BYTES + chunk.length) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
      return;
    }
    case "/declared-large.png":
      res.writeHead(200, { "content-type": "image/png", "content-length": String(MAX_REMOTE_IMAGE_BYTES + 1) });
      res.write(PNG);
      // The rest never comes: the declared length alone is refused.
      return;
    case "/slow.png":
      // Headers and the first bytes, then nothing: the fetch's time bound ends it.
      res.writeHead(200, { "content-type": "image/png" });
      res.write(PNG.subarray(0, 8));
      return;
    case "/moved.png":
      res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data" }).end();
      return;
    default:
      res.writeHead(404).end("not here");
  }
}

beforeAll(async () => {
  images = createServer((req, res) => {
    requests.push(req.url ?? "");
    serve(req.url ?? "", res);
  });
  await new Promise<void>((resolve) => images.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  engine = await startEngine();
  token = await signIn(rest(""), engine.ca, "publisher", PASSWORDS.publisher);
}, 120_000);

afterAll(async () => {
  images?.closeAllConnections();
  await new Promise<void>((resolve) => (images ? images.close(() => resolve()) : resolve()));
  await engine?.stop();
  await strict?.stop();
});

const addText = async (title: string, fields: Record<string, string> = {}) =>
  postJson(rest("/content/users/publisher/addItem"), token, {
    type: "Web Mapping Application",
    title,
    text: "{}",
    ...fields,
  });
const thumbnailOf = async (id: string) => (await getJson(rest(`/content/items/${id}`), token)).thumbnail;
const errorOf = (answer: Record<string, unknown>) =>
  answer.error as { code: number; message: string; details: string[] } | undefined;

describe("a thumbnail by URL", () => {
  it("ArcGIS REST JS's createItem and updateItem with thumbnailUrl: the image is fetched and kept", async () => {
    const [created] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "createItem",
        options: {
          item: {
            title: "Fetched thumbnail",
            type: "Web Mapping Application",
            text: "{}",
            thumbnailUrl: `${origin}/maps/city%20map.png`,
          },
        },
      },
    ])) as [{ success: boolean; id: string }];
    expect(created, JSON.stringify(created)).toMatchObject({ success: true });
    expect(await thumbnailOf(created.id)).toBe("thumbnail/city_map.png");
    const image = await call(rest(`/content/items/${created.id}/info/thumbnail/city_map.png?token=${token}`), {
      ca: engine.ca,
    });
    expect(image.status).toBe(200);
    expect(image.headers["content-type"]).toBe("image/png");
    expect(image.headers["x-content-type-options"]).toBe("nosniff");
    expect(Buffer.compare(image.body, PNG)).toBe(0);

    // A WebP replaces it through updateItem (given in `params`: REST JS drops an item's own `thumbnailUrl` member,
    // taking it for the address it decorates items with); sending the item's own thumbnail URL back fetches nothing.
    const [updated] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "updateItem",
        options: { item: { id: created.id }, params: { thumbnailUrl: `${origin}/pictures/river.webp` } },
      },
    ])) as [{ success: boolean }];
    expect(updated.success).toBe(true);
    expect(await thumbnailOf(created.id)).toBe("thumbnail/river.webp");
    const webp = await call(rest(`/content/items/${created.id}/info/thumbnail/river.webp?token=${token}`), {
      ca: engine.ca,
    });
    expect(webp.headers["content-type"]).toBe("image/webp");
    expect(Buffer.compare(webp.body, WEBP)).toBe(0);
    const before = requests.length;
    const own = rest(`/content/items/${created.id}/info/thumbnail/river.webp`);
    expect(
      await postJson(rest(`/content/users/publisher/items/${created.id}/update`), token, { thumbnailUrl: own }),
    ).toEqual({ success: true, id: created.id });
    expect(requests.length).toBe(before);
  });

  it("takes `thumbnail` as a URL on addItem and `url` on updateThumbnail", async () => {
    const added = await addText("Thumbnail as a URL", { thumbnail: `${origin}/maps/city%20map.png` });
    expect(added.success).toBe(true);
    const id = String(added.id);
    expect(await thumbnailOf(id)).toBe("thumbnail/city_map.png");
    expect(
      await postJson(rest(`/content/users/publisher/items/${id}/updateThumbnail`), token, {
        url: `${origin}/pictures/river.webp`,
      }),
    ).toEqual({ success: true });
    expect(await thumbnailOf(id)).toBe("thumbnail/river.webp");
    // Another member may not change it, and nothing is fetched for them.
    const before = requests.length;
    const user = await signIn(rest(""), engine.ca, "user", PASSWORDS.user);
    const refused = errorOf(
      await postJson(rest(`/content/users/publisher/items/${id}/updateThumbnail`), user, {
        url: `${origin}/maps/city%20map.png`,
      }),
    );
    expect(refused?.code).toBeGreaterThanOrEqual(400);
    // Nor may they add to another's content, or anyone signed out add at all: nothing is fetched for them either.
    expect(
      errorOf(
        await postJson(rest("/content/users/publisher/addItem"), user, {
          type: "Web Mapping Application",
          title: "Not mine",
          text: "{}",
          thumbnailUrl: `${origin}/maps/city%20map.png`,
        }),
      )?.code,
    ).toBe(403);
    const anonymous = await call(rest("/content/users/publisher/addItem"), {
      ca: engine.ca,
      body: new URLSearchParams({ f: "json", title: "T", text: "{}", thumbnailUrl: `${origin}/x.png` }).toString(),
    });
    expect(errorOf(anonymous.json())?.code).toBe(499);
    expect(requests.length).toBe(before);
    expect(await thumbnailOf(id)).toBe("thumbnail/river.webp");
  });

  it("refuses what is not an image, too large, too slow, moved or missing, adding nothing", async () => {
    const cases: [string, string][] = [
      ["/page.png", "The thumbnail is not a PNG, JPEG, GIF or WebP image: its content does not begin as one does."],
      ["/large.png", `'thumbnailUrl' cannot be fetched: the image is larger than ${MAX_REMOTE_IMAGE_BYTES} bytes.`],
      [
        "/declared-large.png",
        `'thumbnailUrl' cannot be fetched: the image is larger than ${MAX_REMOTE_IMAGE_BYTES} bytes.`,
      ],
      [
        "/moved.png",
        "'thumbnailUrl' cannot be fetched: its server answered a redirect (HTTP 302), which is not followed: give the image's own address.",
      ],
      ["/gone.png", "'thumbnailUrl' cannot be fetched: its server answered HTTP 404."],
    ];
    for (const [path, detail] of cases) {
      const answer = await addText(`Refused ${path}`, { thumbnailUrl: `${origin}${path}` });
      expect(errorOf(answer), path).toEqual({ code: 400, message: "Unable to add item.", details: [detail] });
    }
    const started = Date.now();
    const slow = await addText("Refused slow", { thumbnailUrl: `${origin}/slow.png` });
    expect(errorOf(slow)?.details).toEqual([
      "'thumbnailUrl' cannot be fetched: its server did not answer the whole image within 10 s.",
    ]);
    expect(Date.now() - started).toBeLessThan(15_000);
    const bad: [string, string][] = [
      ["ftp://127.0.0.1/x.png", "'thumbnailUrl' cannot be fetched: it is not an http(s) URL."],
      ["http://me:secret@127.0.0.1/x.png", "'thumbnailUrl' cannot be fetched: it carries a user name or password."],
      ["not a url", "'thumbnailUrl' cannot be fetched: it is not a URL."],
      [
        "http://[::ffff:169.254.169.254]/latest",
        "'thumbnailUrl' cannot be fetched: its host is a loopback, link-local or private address, which mapgate does not fetch from here.",
      ],
      [`http://127.0.0.1/${"a".repeat(2048)}`, "'thumbnailUrl' cannot be fetched: it is longer than 2048 characters."],
    ];
    for (const [url, detail] of bad)
      expect(errorOf(await addText("Refused", { thumbnailUrl: url }))?.details).toEqual([detail]);
    const content = await getJson(rest("/content/users/publisher?num=100"), token);
    expect((content.items as { title: string }[]).filter((i) => i.title.startsWith("Refused"))).toEqual([]);
    // An update refused keeps the thumbnail the item had.
    const kept = String((await addText("Kept", { thumbnailUrl: `${origin}/maps/city%20map.png` })).id);
    const update = await postJson(rest(`/content/users/publisher/items/${kept}/update`), token, {
      title: "Changed",
      thumbnailUrl: `${origin}/page.png`,
    });
    expect(errorOf(update)?.message).toBe("Unable to update item.");
    expect(await getJson(rest(`/content/items/${kept}`), token)).toMatchObject({
      title: "Kept",
      thumbnail: "thumbnail/city_map.png",
    });
  }, 60_000);

  it("refuses a loopback host where local hosts are refused, as on AWS, without connecting to it", async () => {
    strict = await startEngine({ env: { DATASTORE_LOCAL_HOSTS: "refuse" } });
    const strictToken = await signIn(rest("", strict), strict.ca, "publisher", PASSWORDS.publisher);
    const before = requests.length;
    for (const url of [`${origin}/maps/city%20map.png`, `http://localhost:${new URL(origin).port}/maps/x.png`]) {
      const answer = (
        await call(rest("/content/users/publisher/addItem", strict), {
          ca: strict.ca,
          body: new URLSearchParams({
            f: "json",
            token: strictToken,
            type: "Web Mapping Application",
            title: "Strict",
            text: "{}",
            thumbnailUrl: url,
          }).toString(),
        })
      ).json<Record<string, unknown>>();
      expect(errorOf(answer)?.details, url).toEqual([
        "'thumbnailUrl' cannot be fetched: its host is a loopback, link-local or private address, which mapgate does not fetch from here.",
      ]);
    }
    expect(requests.length).toBe(before);
  }, 120_000);

  it("the address rule: public addresses only where local hosts are refused; never link-local or unspecified", () => {
    for (const address of ["127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "100.64.0.1", "::1", "fd12::1"]) {
      expect(addressAllowed(address, false), address).toBe(false);
      expect(addressAllowed(address, true), address).toBe(true);
    }
    for (const address of ["169.254.169.254", "169.254.170.2", "0.0.0.0", "::", "fe80::1", "fd00:ec2::254"]) {
      expect(addressAllowed(address, true), address).toBe(false);
    }
    expect(addressAllowed("::ffff:127.0.0.1", false)).toBe(false);
    expect(addressAllowed("::ffff:169.254.169.254", true)).toBe(false);
    expect(addressAllowed("93.184.215.14", false)).toBe(true);
    expect(addressAllowed("2606:2800:21f:cb07::1", false)).toBe(true);
    expect(addressAllowed("not an address", true)).toBe(false);
  });
});
