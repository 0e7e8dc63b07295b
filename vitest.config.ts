import { defineConfig } from "vitest/config";

export default defineConfig({
  // The `~/` alias of tsconfig.json (app/ and components/ import the server and each other by it).
  resolve: { tsconfigPaths: true },
  test: {
    include: ["**/*.test.ts"],
    exclude: ["node_modules/**", ".next/**", "e2e/**"],
    globalSetup: ["./server/testing/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
