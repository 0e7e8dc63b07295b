import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Imports flow one way: app -> server/trpc -> server/services -> server/db. Routers and
// components never touch the database directly.
const noDatabaseAccess = {
  patterns: [
    {
      group: [
        "**/server/db/**",
        "**/db/client*",
        "**/db/generated/**",
        "@prisma/*",
        "prisma",
        "prisma/*",
        "pg",
        "better-sqlite3",
      ],
      message: "Routers and components must not reach the database: call a service in server/services.",
    },
  ],
};

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      ".next/",
      "server/db/generated/",
      "test-results/",
      "playwright-report/",
      "next-env.d.ts",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
    rules: {
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["server/trpc/**", "components/**"],
    rules: { "no-restricted-imports": ["error", noDatabaseAccess] },
  },
);
