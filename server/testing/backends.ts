// Test support for the backend contract: a workspace of each kind (a real git checkout, a real
// directory), a hostile edit of each kind's stored record, and an image of a directory tree
// (every file's mode and bytes, every link, every directory) to compare byte for byte.
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { FAKE_SECRET } from "./checkouts.ts";
import { initRepository, symlink, temporaryDirectory, write } from "./repos.ts";

/** path → "file <mode> <sha256>" | "link <target>" | "dir <mode>", below `root`. */
export function treeImage(root: string, skip: (path: string) => boolean = () => false): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (dir: string, base: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = base ? `${base}/${name}` : name;
      if (skip(path)) continue;
      const full = join(dir, name);
      const st = lstatSync(full);
      if (st.isSymbolicLink()) out.set(path, `link ${readlinkSync(full)}`);
      else if (st.isDirectory()) {
        out.set(path, `dir ${(st.mode & 0o777).toString(8)}`);
        visit(full, path);
      } else {
        const digest = createHash("sha256").update(readFileSync(full)).digest("hex");
        out.set(path, `file ${(st.mode & 0o777).toString(8)} ${digest}`);
      }
    }
  };
  visit(root, "");
  return out;
}

export interface BackendFixture {
  kind: string;
  /** A workspace with a small file to edit (`edit`), a secret `.env` and an executable file. */
  make(): string;
  /** The path a contract test edits. */
  edit: string;
  /** What a restore is compared on (git: the worktree without .git; dir: everything). */
  skip(path: string): boolean;
  /** Makes a stored record hostile (a path out of the tree, a remote that is an option…). */
  poison(record: unknown): unknown;
}

const COMMON = {
  "src/index.js": "console.log('hello');\n",
  "README.md": "# fixture\n",
};

export const BACKEND_FIXTURES: Record<string, BackendFixture> = {
  git: {
    kind: "git",
    make() {
      const root = initRepository(COMMON);
      write(root, "src/index.js", "console.log('dirty');\n");
      write(root, "notes/untracked.txt", "not yet added\n");
      write(root, "bin/run.sh", "#!/bin/sh\necho run\n", 0o755);
      write(root, ".env", `TOKEN=${FAKE_SECRET}\n`);
      return root;
    },
    edit: "src/index.js",
    skip: (path) => path === ".git" || path === ".env",
    poison(record) {
      return { ...(record as object), remotes: [{ name: "origin", url: "--upload-pack=touch pwned" }] };
    },
  },
  dir: {
    kind: "dir",
    make() {
      const root = temporaryDirectory("strata-dir-");
      for (const [path, content] of Object.entries(COMMON)) write(root, path, content);
      write(root, "node_modules/left-pad/index.js", "module.exports = (s) => s;\n");
      write(root, "node_modules/left-pad/package.json", '{"name":"left-pad","version":"1.3.0"}\n');
      write(root, "node_modules/.bin/tool", "#!/bin/sh\necho tool\n", 0o755);
      symlink(root, "node_modules/.bin/left-pad", "../left-pad/index.js");
      write(root, ".env", `TOKEN=${FAKE_SECRET}\n`);
      return root;
    },
    edit: "src/index.js",
    skip: (path) => path === ".env",
    poison(record) {
      const r = record as { entries: { path: string }[] };
      return { ...r, entries: [...r.entries, { type: "dir", path: "../escape", mode: 0o755 }] };
    },
  },
};
