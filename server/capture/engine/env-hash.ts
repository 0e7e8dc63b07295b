// envHash: one SHA-256 over the lockfiles and toolchain files at the repository root, so a
// restore can tell when dependencies must be reinstalled. Only the digest is recorded.
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { unreadablePath } from "../../git/runner.ts";

const ENVIRONMENT_FILES = [
  ".devcontainer/devcontainer.json",
  ".devcontainer.json",
  ".node-version",
  ".nvmrc",
  ".python-version",
  ".ruby-version",
  ".tool-versions",
  "Cargo.lock",
  "Gemfile.lock",
  "Pipfile.lock",
  "bun.lock",
  "bun.lockb",
  "composer.lock",
  "flake.lock",
  "go.sum",
  "gradle/wrapper/gradle-wrapper.properties",
  "mix.lock",
  "npm-shrinkwrap.json",
  "package-lock.json",
  "packages.lock.json",
  "pnpm-lock.yaml",
  "poetry.lock",
  "pubspec.lock",
  "rust-toolchain",
  "rust-toolchain.toml",
  "uv.lock",
  "yarn.lock",
] as const;

export interface EnvironmentDigest {
  /** Null when the root holds none of the files. */
  envHash: string | null;
  envFiles: string[];
}

/** Which of the environment files exist, from one listing per directory involved. */
async function presentFiles(root: string): Promise<string[]> {
  const dirs = [...new Set(ENVIRONMENT_FILES.map((f) => dirname(f)))];
  const listings = new Map<string, Set<string>>();
  await Promise.all(
    dirs.map(async (dir) => {
      const names = await readdir(join(root, dir)).catch(() => [] as string[]);
      listings.set(dir, new Set(names));
    }),
  );
  return ENVIRONMENT_FILES.filter((f) => listings.get(dirname(f))?.has(basename(f)));
}

export async function environmentDigest(root: string): Promise<EnvironmentDigest> {
  const hash = createHash("sha256");
  const envFiles: string[] = [];
  for (const name of await presentFiles(root)) {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(root, name));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR") continue;
      throw unreadablePath(name, (error as Error).message);
    }
    envFiles.push(name);
    // Name and length frame each file, so moving bytes between files changes the digest.
    hash.update(`${name}\u0000${bytes.length}\u0000`);
    hash.update(bytes);
  }
  return { envHash: envFiles.length > 0 ? hash.digest("hex") : null, envFiles };
}
