import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

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
  // Imports run one way: bench/ and test/ → infra/ → functions/ → shared/ (the description, shared/system.ts, at its
  // bottom, importing nothing). A static or dynamic import that runs up fails the check.
  ...[
    { files: ["shared/**/*.ts"], above: ["infra", "functions"] },
    { files: ["functions/**/*.ts"], above: ["infra"] },
    { files: ["infra/**/*.ts"], above: ["functions"] },
  ].map(({ files, above }) => ({
    files,
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              // A regex, not a gitignore-style group: there `#` would start a comment.
              regex: `^(#|(\\.\\./)+)(${above.join("|")})/`,
              message: `Imports run one way (test → infra → functions → shared): ${files[0]?.split("/")[0]}/ may not import ${above.join("/ or ")}/.`,
            },
          ],
        },
      ],
      "no-restricted-syntax": [
        "error",
        ...above.map((layer) => ({
          selector: `ImportExpression > Literal[value=/^(#|\\.\\.?\\/.*)${layer}\\//]`,
          message: `Imports run one way (test → infra → functions → shared): no import() of ${layer}/ here.`,
        })),
      ],
    },
  })),
);
