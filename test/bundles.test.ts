// Every function bundle as the stack builds it (infra/aws/bundling.ts): the AWS SDK inside (what runs on
// Lambda is what the tests ran), each at most 1 MB, each loads on its own in a fresh Node process, and a cold start
// compiles only the entry and the chunks it imports statically: what one path uses waits for its first use.
import { execFileSync } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { isBuiltin } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build, type Metafile } from "esbuild";
import { describe, expect, it } from "vitest";
import { BUNDLE, functionModules, splitEsbuildOptions } from "#infra/aws/bundling.ts";
import { INVOCATION } from "#shared/system.ts";
import { ROOT } from "./helpers/engine.ts";

const modules = functionModules();

interface Built {
  /** The file the handler is in: `index.mjs` in the function's folder, its chunks in `chunks/`. */
  entry: string;
  /** Every output file that is code, with its metafile entry, by absolute path. */
  outputs: Map<string, Metafile["outputs"][string]>;
  /** What a cold start reads and compiles: the entry and the chunks it imports statically, transitively. */
  eager: Set<string>;
}

const out = mkdtempSync(join(tmpdir(), "mapgate-bundles-"));

/** A function bundled as the stack bundles it (infra/aws/bundling.ts), into a folder of its own. */
async function bundle(id: string): Promise<Built> {
  const source = join(ROOT, "functions", `${id}.ts`);
  const dir = join(out, id);
  const entry = join(dir, "index.mjs");
  const { metafile } = await build({ ...splitEsbuildOptions(source, dir), metafile: true });
  const outputs = new Map(
    Object.entries(metafile.outputs)
      .filter(([path]) => path.endsWith(".mjs"))
      .map(([path, o]) => [join(process.cwd(), path), o]),
  );
  const eager = new Set<string>([entry]);
  for (const file of eager) {
    for (const i of outputs.get(file)?.imports ?? []) {
      if (i.kind === "import-statement" && !i.external) eager.add(join(process.cwd(), i.path));
    }
  }
  return { entry, outputs, eager };
}

/** The inputs (source files, node_modules paths) in what a cold start compiles. */
const eagerInputs = (b: Built) => [...b.eager].flatMap((file) => Object.keys(b.outputs.get(file)?.inputs ?? {}));

let built: Promise<Map<string, Built>> | undefined;
/** Every function bundled once for the whole file, a few at a time (the builds share the machine). */
function bundles(): Promise<Map<string, Built>> {
  built ??= (async () => {
    const all = new Map<string, Built>();
    const queue = [...modules];
    const worker = async () => {
      for (let id = queue.shift(); id; id = queue.shift()) all.set(id, await bundle(id));
    };
    await Promise.all([worker(), worker(), worker()]);
    return all;
  })();
  return built;
}

async function bundleOf(id: string): Promise<Built> {
  const b = (await bundles()).get(id);
  if (!b) throw new Error(`no bundle for ${id}`);
  return b;
}

/** Runs a module script in a fresh Node process from a folder with no node_modules above it, as on Lambda. */
const runFresh = (script: string) =>
  execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: out,
    encoding: "utf8",
    env: { PATH: process.env.PATH, AWS_REGION: "us-east-1", TABLE_PORTALS: "p", TABLE_USERS: "u", TABLE_TOKENS: "t" },
  });

/**
 * What no function may compile at a cold start: each serves some requests only and is reached through a dynamic
 * `import()` at its first use. The AWS SDK's credential providers other than the environment's (a Lambda function's
 * credentials are in its environment) with the STS, SSO and sign-in clients they use, and the feature query's
 * geometry (JTS), projections (proj4), vector tiles (PBF), PostgreSQL, the S3 client (a store's content), and the
 * XML parser (a tile cache's conf.xml, read when it is published) but where SOAP requests are answered, each parsed.
 */
const DEFERRED = [
  /node_modules\/@aws-sdk\/credential-provider-(sso|ini|process|web-identity|login|http)\//,
  /node_modules\/@smithy\/credential-provider-imds\//,
  /node_modules\/@aws-sdk\/nested-clients\//,
  /node_modules\/jsts\//,
  /node_modules\/proj4\//,
  /node_modules\/pbf\//,
  /node_modules\/pg\//,
  /node_modules\/@aws-sdk\/client-s3\//,
  /(^|\/)shared\/features\/(query|geometry\/(jts|projection|spatial|generalize))\.ts$/,
  /(^|\/)shared\/storage\/s3\.ts$/,
];
const XML_PARSER = /node_modules\/fast-xml-parser\//;
/** The SOAP catalog and the unmatched routes' function, which answers SOAP requests to servers it does not know. */
const PARSE_XML = new Set(["soap-catalog", "not-found"]);

describe("function bundles", () => {
  it("carry the AWS SDK inside, stay under 1 MB each (operations and item-delete 1.5 MB; the service, uploads and the publishing task 2 MB), and load in a fresh process with no node_modules", async () => {
    const all = await bundles();
    for (const id of modules) {
      const b = await bundleOf(id);
      // Every file of the function, entry and chunks: what its deployment package holds.
      const bytes = [...b.outputs.keys()].reduce((n, file) => n + statSync(file).size, 0);
      // The service function carries the feature query (JTS predicates, projections: ~0.3 MB), evaluated only by
      // the first query; moving `query` to a function of its own would bring it back under 1 MB. The uploads
      // function carries it too, and both dataset readers, for exports (loaded by the first export only), and the
      // readers of zipped shapefiles and GeoPackages (proj4 and its WKT parser, yauzl: ~0.2 MB), loaded only by
      // analyzing or publishing such a file.
      // The service function also edits layers read by reference from PostgreSQL (the request's checks and the row
      // writer, loaded by the first edit only) and serves attachments: 2 MB, as the uploads function; what its cold
      // start reads is bounded apart (below, 512 KB).
      // The publishing task reads every file format the uploads function does.
      // The operations function (the administrator's commands and scheduled work, never on a user's request) removes
      // whatever a member or an organization holds, so it carries both hosted stores' clients (pg and S3); so does
      // the item-delete function, which removes a hosted service's data with its attachments (each store loaded by
      // the first removal of its kind).
      const budget =
        id === "operations" || id === "item-delete"
          ? 1.5
          : id === "service" || id === "item-add" || id === "task-publish-hosted"
            ? 2
            : 1;
      expect(bytes, id).toBeLessThan(budget * 1024 * 1024);
      // No import left for the runtime to resolve but Node's own modules.
      const external = [...b.outputs.values()].flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path));
      expect(
        external.filter((path) => !isBuiltin(path) && !(BUNDLE.external as readonly string[]).includes(path)),
        id,
      ).toEqual([]);
    }
    // Loaded from a folder with no node_modules anywhere above it (the temporary folder), as on Lambda.
    const entries = modules.map((id) => all.get(id)?.entry);
    const loaded = runFresh(
      `for (const file of ${JSON.stringify(entries)}) { const m = await import(file); if (typeof m.handler !== "function") throw new Error(file); } console.log("ok");`,
    );
    expect(loaded.trim()).toBe("ok");
  }, 480_000);

  it("compile at a cold start only what every request may need: what one path uses is a chunk loaded at first use", async () => {
    for (const id of modules) {
      const b = await bundleOf(id);
      expect(
        eagerInputs(b).filter(
          (input) => DEFERRED.some((re) => re.test(input)) || (!PARSE_XML.has(id) && XML_PARSER.test(input)),
        ),
        id,
      ).toEqual([]);
      // The entry and what it imports statically: near the size of the shared pipeline and the SDK's DynamoDB
      // client (~300 KiB), not the sum of what every path may use.
      const eagerBytes = [...b.eager].reduce((n, file) => n + (b.outputs.get(file)?.bytes ?? 0), 0);
      expect(eagerBytes, id).toBeLessThan(512 * 1024);
    }
    // What was deferred is still there, in chunks, for the path that needs it.
    const service = await bundleOf("service");
    const lazyInputs = [...service.outputs.entries()]
      .filter(([file]) => !service.eager.has(file))
      .flatMap(([, o]) => Object.keys(o.inputs));
    for (const lib of ["jsts", "proj4", "pbf", "pg", "@aws-sdk/client-s3"]) {
      expect(
        lazyInputs.some((input) => input.includes(`node_modules/${lib}/`)),
        lib,
      ).toBe(true);
    }
  }, 480_000);

  it("keep the viewer's assets reader in the entry, so it finds the assets copied beside index.mjs", async () => {
    const viewer = await bundleOf("viewer");
    expect(Object.keys(viewer.outputs.get(viewer.entry)?.inputs ?? {})).toContain("shared/viewer/assets.ts");
  }, 480_000);

  it("load each operation of the operations function on first use: no route handler is in what its entry imports", async () => {
    const b = await bundleOf(INVOCATION.id);
    const handlers = eagerInputs(b).filter((input) => /(^|\/)functions\/[\w-]+\.ts$/.test(input));
    expect(handlers).toEqual([`functions/${INVOCATION.id}.ts`]);
    // Each operation's handler is a chunk of its own (dynamic imports).
    expect([...b.outputs.keys()].filter((file) => !b.eager.has(file)).length).toBeGreaterThan(0);
    // Every operation's chunk loads from a folder with no node_modules above it, as on Lambda.
    const loaded = runFresh(
      `const m = await import(${JSON.stringify(b.entry)}); const mods = await Promise.all(Object.values(m.MODULES).map((f) => f())); if (mods.some((x) => typeof x.handler !== "function")) throw new Error("handler"); console.log(mods.length);`,
    );
    expect(Number(loaded.trim())).toBe(Object.keys(INVOCATION.operations).length);
  }, 480_000);
});
