import js from "@eslint/js";
import boundaries from "eslint-plugin-boundaries";
import tseslint from "typescript-eslint";

// The import graph, enforced (docs/architecture.md draws it). Entry points (pages, the API, the
// CLI, the worker) sit on top; capabilities below them import only capabilities further down,
// so no two folders ever import each other; git, db and domain are the floor.
const SERVER_FOLDERS = [
  "openapi",
  "trpc",
  "http",
  "jobs",
  "transfer",
  "worktrees",
  "restore",
  "acquire",
  "capture",
  "caches",
  "backends",
  "gc",
  "dashboard",
  "diff",
  "lineage",
  "audit",
  "content",
  "auth",
  "db",
  "git",
  "domain",
  "testing",
  "config",
  "log",
];

/** What each folder may import besides itself (every other import is an error). */
const MAY_IMPORT = {
  app: ["components", "auth", "openapi", "domain"],
  "app-api": ["openapi", "trpc", "http", "auth", "db", "domain", "log"],
  components: ["trpc", "domain"],
  // The SDK (strata/client): the router's types, and the capture and restore steps it runs remotely.
  client: [
    "trpc",
    "restore",
    "capture",
    "worktrees",
    "caches",
    "backends",
    "capture-engine",
    "restore-engine",
    "git",
    "domain",
  ],
  cli: [
    "client",
    "trpc",
    "diff",
    "jobs",
    "transfer",
    "worktrees",
    "restore",
    "acquire",
    "capture",
    "gc",
    "lineage",
    "caches",
    "backends",
    "capture-engine",
    "restore-engine",
    "content",
    "auth",
    "db",
    "git",
    "domain",
    "config",
    "log",
  ],
  openapi: ["trpc", "db", "domain"],
  trpc: [
    "jobs",
    "transfer",
    "worktrees",
    "restore",
    "acquire",
    "capture",
    "gc",
    "dashboard",
    "diff",
    "lineage",
    "audit",
    "caches",
    "backends",
    "content",
    "auth",
    "db",
    "domain",
    "config",
    "log",
  ],
  http: ["content", "auth", "db", "domain", "log"],
  jobs: [
    "transfer",
    "worktrees",
    "restore",
    "acquire",
    "capture",
    "gc",
    "lineage",
    "caches",
    "backends",
    "capture-engine",
    "restore-engine",
    "content",
    "db",
    "git",
    "domain",
    "config",
    "log",
  ],
  transfer: ["restore", "lineage", "backends", "content", "audit", "db", "git", "domain"],
  worktrees: ["restore", "lineage", "backends", "restore-engine", "content", "db", "git", "domain"],
  restore: ["acquire", "lineage", "caches", "backends", "restore-engine", "content", "audit", "db", "git", "domain"],
  acquire: ["lineage", "backends", "content", "db", "domain", "log"],
  capture: ["lineage", "caches", "backends", "capture-engine", "content", "db", "git", "domain"],
  gc: ["lineage", "caches", "backends", "content", "audit", "db", "domain", "log"],
  diff: ["lineage", "content", "git", "db", "domain"],
  dashboard: ["worktrees", "gc", "lineage", "caches", "backends", "content", "audit", "db", "domain"],
  lineage: ["backends", "content", "audit", "db", "domain", "log"],
  audit: ["db", "domain"],
  caches: ["lineage", "backends", "restore-engine", "content", "db", "git", "domain"],
  backends: ["content", "capture-engine", "restore-engine", "db", "git", "domain"],
  content: ["db", "domain"],
  // The engines: git work with policy (what a capture records, how a restore builds and degrades),
  // kept apart from the capture and restore services so they never reach the database.
  "restore-engine": ["capture-engine", "git", "domain"],
  "capture-engine": ["git", "domain"],
  auth: ["db", "domain", "config", "log"],
  db: ["domain", "config", "log"],
  git: ["domain"],
  domain: [],
  config: ["domain"],
  log: [],
};

const elements = [
  { type: "app-api", pattern: "app/api" },
  { type: "app", pattern: "app" },
  { type: "components", pattern: "components" },
  { type: "cli", pattern: "cli" },
  { type: "client", pattern: "client" },
  // Listed before their capability folders, so a file under engine/ is an engine, not a service.
  { type: "capture-engine", pattern: "server/capture/engine" },
  { type: "restore-engine", pattern: "server/restore/engine" },
  ...SERVER_FOLDERS.map((folder) => ({ type: folder, pattern: `server/${folder}` })),
];

// Routers and components never reach the database themselves: they call a capability.
const noDatabaseAccess = {
  patterns: [
    {
      group: ["**/db/client*", "**/db/generated/**", "@prisma/*", "prisma", "prisma/*", "pg", "better-sqlite3"],
      message: "Routers and components must not reach the database: call a capability (server/<capability>/).",
    },
  ],
};

// One database seam: raw SQL lives in the statement modules of server/db/statements/ (named,
// typed functions that render provider differences through the dialect), not in capabilities,
// routers or the CLI. (Queries sent with pool.query on the pg pool are not Prisma calls and are
// not caught here.)
const RAW_SQL_METHODS = ["$queryRawUnsafe", "$executeRawUnsafe", "$queryRaw", "$executeRaw", "$queryRawTyped"];
const noRawSql = RAW_SQL_METHODS.map((method) => ({
  selector: `MemberExpression[property.name="${method}"], MemberExpression[property.value="${method}"]`,
  message: `Raw SQL (${method}) belongs in server/db/statements/: add a named, typed function there and call it.`,
}));

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      ".next/",
      "dist/",
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
    files: ["server/trpc/routers/**", "components/**"],
    rules: { "no-restricted-imports": ["error", noDatabaseAccess] },
  },
  {
    files: ["server/**", "cli/**", "client/**"],
    ignores: ["server/db/**", "server/testing/**", "**/*.test.ts"],
    rules: { "no-restricted-syntax": ["error", ...noRawSql] },
  },
  {
    // Production code only: tests, test support, scripts and e2e may import anything.
    files: ["app/**", "components/**", "cli/**", "client/**", "server/**"],
    ignores: ["**/*.test.ts", "**/*.test.tsx", "server/testing/**"],
    plugins: { boundaries },
    settings: {
      "boundaries/elements": elements,
      "boundaries/include": ["app/**", "components/**", "cli/**", "client/**", "server/**"],
      "boundaries/ignore": ["server/db/generated/**"],
      // Resolves tsconfig.json's `~/` alias, so `~/server/...` imports are classified too.
      "import/resolver": { typescript: true },
    },
    rules: {
      "boundaries/dependencies": [
        2,
        {
          default: "disallow",
          message:
            "{{from.type}} may not import {{to.type}} (the import graph: eslint.config.mjs, docs/architecture.md)",
          policies: Object.entries(MAY_IMPORT).map(([from, to]) => ({
            from: { element: { type: from } },
            allow: { to: { element: { types: { anyOf: [from, ...to] } } } },
          })),
        },
      ],
      "boundaries/no-unknown-dependencies": 2,
    },
  },
);
