// Compiles the `strata` command (cli/main.ts, its commands, the server code they run and the
// generated Prisma clients) and the SDK (client/index.ts, the package's `strata/client`, as
// dist/cli/client.mjs) into plain JavaScript in dist/cli/, so no TypeScript is compiled
// while it runs. Packages from node_modules stay imports (resolved from node_modules at run
// time); every dynamic import of a command's modules becomes a chunk of its own, loaded only
// when that command runs.
//
//   node scripts/build-cli.mjs             build (writes only files whose content changed)
//   node scripts/build-cli.mjs --if-stale  build only when a source is newer than the build
//
// `npm install` (postinstall), `npm test`, `npm start` and `npm run dev` run it; so do the
// tests (vitest's global setup). cli/strata.mjs runs dist/cli/main.mjs and rebuilds first when
// the sources changed since the last build.
//
// Every output file lies two directories below the repository (dist/cli/), as the sources do
// (server/db/, cli/commands/): the paths they compute from import.meta.url (the migrations in
// prisma/, the app's root) mean the same place in both.
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** Where a checkout's CLI is built, and the record of the build (`root` ends with a separator). */
const outDirOf = (root) => `${root}dist${path.sep}cli`;
const infoFileOf = (root) => `${outDirOf(root)}${path.sep}build-info.json`;
export const OUT_DIR = outDirOf(ROOT);
const INFO = infoFileOf(ROOT);
/**
 * Besides the project's modules the bundle reads: what changes how they are compiled, and which
 * versions of the bundled packages (zod) are installed.
 */
const CONFIG_INPUTS = ["package.json", "package-lock.json", "tsconfig.json", "scripts/build-cli.mjs"];
/** The packages compiled into the bundle; every other package stays an import from node_modules. */
const BUNDLED_PACKAGES = new Set(["zod"]);

/** The names esbuild leaves as imports: every dependency of package.json but the bundled ones. */
function externalPackages() {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const names = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies, ...pkg.optionalDependencies });
  return names.filter((name) => !BUNDLED_PACKAGES.has(name)).flatMap((name) => [name, `${name}/*`]);
}

/**
 * zod's index of message locales, as English alone: zod sets English at load and nothing here
 * switches locale, so the other 60 would be parsed at every start for nothing.
 */
const zodInEnglishOnly = {
  name: "zod-in-english-only",
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: path.dirname(args.path),
    }));
  },
};

function readInfo(file = INFO) {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return null;
  }
}

/**
 * Why the build in dist/cli cannot be used as it is: "missing", or "stale" when a source it was
 * built from changed (or is gone) since; null when it is current. Costs one stat per source and
 * per module built. `root` is the checkout (this one unless a test names another); it ends with
 * a path separator.
 */
export function buildState(root = ROOT) {
  // Every start of strata runs this: the paths are joined by hand (path.join normalizes each
  // one, which cost more than the stats), and only the modules are looked for, not their maps.
  const outDir = `${outDirOf(root)}${path.sep}`;
  const infoFile = infoFileOf(root);
  const info = readInfo(infoFile);
  if (!info || !Array.isArray(info.inputs) || !Array.isArray(info.files)) return "missing";
  let built;
  try {
    built = statSync(infoFile).mtimeMs;
    for (const file of info.files) if (file.endsWith(".mjs")) statSync(outDir + file);
  } catch {
    return "missing";
  }
  for (const input of info.inputs) {
    const stat = statSync(root + input, { throwIfNoEntry: false });
    if (!stat || stat.mtimeMs > built) return "stale";
  }
  return null;
}

/** Writes a file through a temporary name, so a running strata never reads half of it. */
function writeAtomically(file, contents) {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, file);
}

function sameContent(file, contents) {
  try {
    return readFileSync(file).equals(contents);
  } catch {
    return false;
  }
}

/** Builds dist/cli. Returns the number of files written (0 when the output was already this). */
export async function buildCli() {
  // A source changed while this build ran makes the next check find it stale.
  const started = new Date();
  let esbuild;
  try {
    esbuild = await import("esbuild");
  } catch {
    throw new Error("esbuild is not installed: run `npm install` (it is a devDependency of strata).");
  }
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { main: "cli/main.ts", client: "client/index.ts" },
    outdir: OUT_DIR,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // node_modules stay imports, but zod: the project's own modules (and the generated clients)
    // are compiled in, and so is zod, whose 97 files cost a capture about 45 ms to load one by
    // one, and whose 60 message locales (English is the one used) another 15 ms.
    external: [...externalPackages(), "node:*"],
    plugins: [zodInEnglishOnly],
    sourcemap: "linked",
    sourcesContent: false,
    metafile: true,
    write: false,
    logLevel: "warning",
  });
  mkdirSync(OUT_DIR, { recursive: true });
  let written = 0;
  const files = [];
  for (const output of result.outputFiles) {
    files.push(path.relative(OUT_DIR, output.path));
    if (sameContent(output.path, output.contents)) continue;
    writeAtomically(output.path, output.contents);
    written += 1;
  }
  // The previous build's files stay one generation (a strata started before this build may
  // still load a chunk of it); anything older goes.
  const previous = readInfo();
  const keep = new Set([...files, ...(Array.isArray(previous?.files) ? previous.files : []), "build-info.json"]);
  for (const entry of readdirSync(OUT_DIR)) {
    if (!keep.has(entry) && !entry.endsWith(".tmp")) rmSync(path.join(OUT_DIR, entry), { force: true });
  }
  // A bundled package's files are not stat'ed at every start: package-lock.json says when they change.
  const ownInputs = Object.keys(result.metafile.inputs).filter((input) => !input.startsWith("node_modules/"));
  const inputs = [...new Set([...ownInputs, ...CONFIG_INPUTS])].sort();
  // Written last: its modification time is the build's.
  writeAtomically(INFO, `${JSON.stringify({ files: files.sort(), inputs }, null, 1)}\n`);
  utimesSync(INFO, started, started);
  return written;
}

/** vitest's global setup (vitest.config.ts): the tests run the CLI as it ships, built first when stale. */
export async function setup() {
  if (buildState() !== null) await buildCli();
}

async function main() {
  const ifStale = process.argv.includes("--if-stale");
  if (ifStale && buildState() === null) return;
  const t0 = Date.now();
  const written = await buildCli();
  const ms = Date.now() - t0;
  process.stdout.write(`strata CLI built into dist/cli (${written} file(s) changed, ${ms} ms)\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
