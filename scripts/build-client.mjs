// Builds the SDK (`strata/client`) for use from another project, by path or from `npm pack`'s
// tarball (its prepack runs this): the JavaScript (dist/cli/client.mjs, with the CLI: see
// build-cli.mjs) and the type declarations in dist/types, emitted by tsc from client/index.ts
// (tsconfig.client.json) with their relative imports renamed from .ts to .js, as a consumer's
// TypeScript resolves them (dist/types/…/x.d.ts for "./x.js").
//
//   npm run build:client
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildCli } from "./build-cli.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const TYPES = path.join(ROOT, "dist", "types");

/** `from "./x.ts"` and `import("./x.ts")` in a declaration file, relative specifiers only. */
const TS_SPECIFIER = /((?:from\s+|import\()\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g;

function declarationFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".d.ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

function renameSpecifiers(text) {
  return text.replace(TS_SPECIFIER, "$1$2.js$3");
}

async function main() {
  const t0 = Date.now();
  await buildCli();
  rmSync(TYPES, { recursive: true, force: true });
  const tsc = spawnSync(
    process.execPath,
    [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.client.json"],
    {
      cwd: ROOT,
      stdio: "inherit",
    },
  );
  if (tsc.status !== 0) throw new Error("tsc could not emit the SDK's type declarations (see above)");
  const files = declarationFiles(TYPES);
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const renamed = renameSpecifiers(text);
    if (renamed !== text) writeFileSync(file, renamed);
  }
  process.stdout.write(
    `strata SDK built: dist/cli/client.mjs and ${files.length} declaration file(s) in dist/types (${Date.now() - t0} ms)\n`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
