// A generated repository shaped like a large real one (babel/babel: ~28k files under nested
// package folders, ~18k commits of history), for the benchmarks that must hold on real
// repositories, not only on one flat commit. The history is written with `git fast-import`, so
// 18k commits take seconds. Only set-up: nothing here is measured.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { git } from "./bench-repo.ts";

export interface RealShape {
  files: number;
  /** Commits of history before the last pushed one (each touches a few files). */
  commits: number;
}

/** File i's path: 20 packages, each with fixture groups of 100 files, four folders deep. */
export function realPath(i: number): string {
  const pkg = Math.floor(i / 1400);
  const group = Math.floor(i / 100) % 14;
  return join("packages", `pkg-${pkg}`, "test", "fixtures", `group-${group}`, `case${i}.js`);
}

const WORDS = [
  "const",
  "return",
  "function",
  "export",
  "import",
  "value",
  "node",
  "path",
  "scope",
  "state",
  "options",
  "babel",
  "types",
  "expression",
  "statement",
  "identifier",
  "program",
  "visitor",
  "parent",
  "callee",
  "arguments",
  "params",
  "body",
  "left",
  "right",
  "operator",
  "literal",
  "if",
  "else",
  "for",
  "while",
  "new",
  "this",
  "await",
  "async",
  "yield",
  "class",
  "extends",
];

/** A small deterministic generator (mulberry32), so every run writes the same repository. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * File i's content at revision r: about 1.2 KiB of source-like lines drawn from a vocabulary,
 * different for every file (so files do not delta against each other, as real sources do not,
 * while each compresses as text does); a later revision rewrites one line of it.
 */
export function realContent(i: number, revision = 0): string {
  const next = random(i * 2_654_435_761);
  const lines: string[] = [`// case ${i}`];
  const count = 10 + (i % 40);
  for (let l = 0; l < count; l++) {
    const words = Array.from({ length: 3 + Math.floor(next() * 6) }, () => WORDS[Math.floor(next() * WORDS.length)]);
    lines.push(`${"  ".repeat(l % 4)}${words.join(" ")}(${Math.floor(next() * 1000)});`);
  }
  if (revision > 0) lines[1 + (revision % count)] = `  revised(${revision});`;
  return `${lines.join("\n")}\n`;
}

function dataCommand(text: string): string {
  return `data ${Buffer.byteLength(text)}\n${text}\n`;
}

/**
 * A bare repository at `bare` holding the shape's history on `main`: one commit adding every
 * file, then `commits` commits each rewriting three files spread over the tree.
 */
export function writeRealHistory(bare: string, shape: RealShape): void {
  mkdirSync(bare, { recursive: true });
  git(bare, ["init", "--quiet", "--bare", "--initial-branch=main"]);
  const chunks: string[] = [];
  let time = 1_600_000_000;
  const commit = (message: string, changes: string) => {
    time += 60;
    chunks.push(
      `commit refs/heads/main\ncommitter bench <bench@example.invalid> ${time} +0000\n${dataCommand(message)}${changes}\n`,
    );
  };
  const files: string[] = [];
  for (let i = 0; i < shape.files; i++) files.push(`M 100644 inline ${realPath(i)}\n${dataCommand(realContent(i))}`);
  commit("initial import", files.join(""));
  for (let c = 1; c <= shape.commits; c++) {
    let changes = "";
    for (let k = 0; k < 3; k++) {
      const i = (c * 7919 + k * 104_729) % shape.files;
      changes += `M 100644 inline ${realPath(i)}\n${dataCommand(realContent(i, c))}`;
    }
    commit(`change ${c}`, changes);
  }
  execFileSync("git", ["fast-import", "--quiet"], { cwd: bare, input: chunks.join(""), maxBuffer: 1 << 30 });
  // One pack, as a server's repository would be.
  git(bare, ["repack", "-a", "-d", "--quiet"]);
}
