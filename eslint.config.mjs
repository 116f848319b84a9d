// Lint rules for the web console (api/console_static): ES modules run by the browser.
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
];
