// How every function is bundled, in one place: the CDK stack bundles with these options, and `npm run bench`
// builds the same bundles to measure their cold import.
import type { BuildOptions } from "esbuild";
import { invocationFunction, REDELIVERY, ROUTES, WORKFLOW } from "#shared/system.ts";

/**
 * Every function module that is bundled, each once however many routes share it: the routes' handlers, the
 * workflow's tasks, the invocation function and the redelivery function.
 */
export const functionModules = (): string[] => [
  ...new Set([
    ...ROUTES.map((r) => r.handler ?? r.id),
    ...WORKFLOW.tasks.map((t) => t.id),
    invocationFunction().id,
    REDELIVERY.id,
  ]),
];

/** Some dependencies are CommonJS and call require(); ESM bundles need it defined. */
const REQUIRE_SHIM = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

export const BUNDLE = {
  format: "esm",
  platform: "node",
  target: "node24",
  minify: true,
  mainFields: ["module", "main"],
  banner: REQUIRE_SHIM,
  /**
   * Nothing is left out: the AWS SDK goes into each bundle, tree-shaken to the clients the function uses, so
   * the SDK that runs on Lambda is the one the tests ran (the runtime's own copy differs by region and date).
   * Only node-postgres's optional native binding is left out: pg requires it only when `pg.native` is read,
   * which mapgate never does.
   */
  external: ["pg-native"] as string[],
  /**
   * Source maps are written beside the bundle for reading stack traces later, never loaded at start
   * (`--enable-source-maps` would parse them on every cold start).
   */
  sourcemap: "external",
} as const;

/**
 * Every function is bundled with code splitting (`splitEsbuildOptions`): the entry holds what every invocation runs,
 * and each module it loads with `import()` becomes a chunk beside it, read and compiled only when first imported. In
 * one file, a cold start compiles what a dynamic import defers all the same: the operations function's handler per
 * operation (functions/operations.ts), the service's feature query, projections, PostgreSQL and S3 readers, and in
 * every function the AWS SDK's credential providers that a Lambda function, whose credentials are in its
 * environment, never loads (SSO, STS, web identity, IMDS, INI and their clients: ~90 KiB). A module that finds files
 * beside its bundle through `import.meta.url` (the viewer's assets) must stay in the entry: test/bundles.test.ts
 * checks it does.
 */
/** The same options for esbuild itself. */
export const esbuildOptions = (entry: string, outfile: string): BuildOptions => ({
  entryPoints: [entry],
  outfile,
  bundle: true,
  format: BUNDLE.format,
  platform: BUNDLE.platform,
  target: BUNDLE.target,
  minify: BUNDLE.minify,
  mainFields: [...BUNDLE.mainFields],
  banner: { js: BUNDLE.banner },
  external: [...BUNDLE.external],
  sourcemap: BUNDLE.sourcemap,
  logLevel: "silent",
});

/**
 * A split function's options: the entry as `index.mjs` in `outdir` (the name NodejsFunction gives an ESM bundle, so
 * the handler stays `index.handler`), its chunks in `chunks/`.
 */
export const splitEsbuildOptions = (entry: string, outdir: string): BuildOptions => {
  const { outfile: _unused, ...options } = esbuildOptions(entry, "");
  return {
    ...options,
    outdir,
    splitting: true,
    entryNames: "index",
    chunkNames: "chunks/[name]-[hash]",
    outExtension: { ".js": ".mjs" },
  };
};
