import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

// Imports run one way: bench/ and test/ → infra/ → functions/ → shared/ (the description, shared/system.ts, at its
// bottom, importing nothing). Within shared/, its folders run one way too, bottom to top: storage/ (a data store's
// files, importing nothing of shared/) → stores/ (the records) → auth/ → http/ → the folders above (docs/architecture.md
// draws the whole order); a few modules under everything import nothing of shared/ at all. A static or dynamic
// import that runs up fails the check.

/** The folders of shared/ above the stores: a store imports none of them. */
const ABOVE_STORES = [
  "auth",
  "caches",
  "features",
  "groups",
  "hosted",
  "http",
  "invocation",
  "oauth",
  "serving",
  "soap",
  "viewer",
];
/** Above sign-in's code (auth/): the request pipeline and what is built on it (every folder above the stores but auth). */
const ABOVE_AUTH = ABOVE_STORES.filter((folder) => folder !== "auth");

/** A regex source matching an import of one of `folders` by its alias (`prefix`: `#` or `#shared/`) or relative path. */
const importOf = (prefix, folders) => `^(${prefix}|(\\.\\./)+)(${folders.join("|")})/`;

/**
 * One config per group of files: ESLint applies the last config that sets a rule for a file, so each group lists
 * everything it may not import (the top-level layers' patterns too), and the groups of shared/ come after shared/'s.
 */
function layerRules() {
  const upward = (layer, folders) => ({
    regex: importOf("#", folders),
    message: `Imports run one way (test → infra → functions → shared): ${layer} may not import ${folders.join("/ or ")}/.`,
  });
  const withinShared = (layer, folders) => ({
    regex: importOf("#shared/", folders),
    message: `Imports within shared/ run one way (docs/architecture.md): ${layer} may not import shared/'s ${folders.map((f) => `${f}/`).join(", ")}.`,
  });
  const shared = upward("shared/", ["infra", "functions"]);
  const groups = [
    { files: ["shared/**/*.ts"], refused: [shared] },
    { files: ["functions/**/*.ts"], refused: [upward("functions/", ["infra"])] },
    { files: ["infra/**/*.ts"], refused: [upward("infra/", ["functions"])] },
    { files: ["shared/storage/**/*.ts"], refused: [shared, withinShared("storage/", ["stores", ...ABOVE_STORES])] },
    { files: ["shared/stores/**/*.ts"], refused: [shared, withinShared("stores/", ABOVE_STORES)] },
    { files: ["shared/auth/**/*.ts"], refused: [shared, withinShared("auth/", ABOVE_AUTH)] },
    { files: ["shared/features/**/*.ts"], refused: [shared, withinShared("features/", ["hosted", "groups"])] },
    {
      // Under everything: the description, API errors, ids, the logger and the digests of secrets.
      files: ["shared/system.ts", "shared/errors.ts", "shared/ids.ts", "shared/log.ts", "shared/digests.ts"],
      refused: [
        {
          regex: "^(#|\\.)",
          message:
            "Imports run one way (docs/architecture.md): this module is under everything and imports nothing of mapgate.",
        },
      ],
    },
  ];
  return groups.map(({ files, refused }) => ({
    files,
    rules: {
      // A regex, not a gitignore-style group: there `#` would start a comment.
      "no-restricted-imports": ["error", { patterns: refused.map(({ regex, message }) => ({ regex, message })) }],
      "no-restricted-syntax": [
        "error",
        ...refused.map(({ regex, message }) => ({
          selector: `ImportExpression > Literal[value=/${regex.replaceAll("/", "\\/")}/]`,
          message: `${message} (no import() of it either)`,
        })),
      ],
    },
  }));
}

export default tseslint.config(
  { ignores: ["node_modules/", "cdk.out/", ".mapgate/", "test-artifacts/"] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { globals: globals.node },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": "off",
    },
  },
  ...layerRules(),
);
