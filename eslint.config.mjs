// Lint rules for the web console (api/console_static): ES modules run by the browser; and for the
// script the development stack preloads into Azurite (CommonJS run by Node).
import js from "@eslint/js";
import globals from "globals";

export default [
  // Microsoft's MSAL.js, vendored as published (npm run vendor:msal): not ours to lint.
  { ignores: ["api/console_static/msal.js"] },
  {
    files: ["api/console_static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: globals.browser,
    },
    rules: {
      ...js.configs.recommended.rules,
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-implicit-globals": "error",
      "no-shadow": "error",
      "no-unused-vars": ["error", { args: "after-used", argsIgnorePattern: "^_" }],
      "no-var": "error",
      "prefer-const": "error",
    },
  },
  {
    files: ["hastelib/dev/src/**/*.js", "tests/integration/devhost/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: globals.node },
    rules: {
      ...js.configs.recommended.rules,
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-shadow": "error",
      "no-var": "error",
      "prefer-const": "error",
    },
  },
];
