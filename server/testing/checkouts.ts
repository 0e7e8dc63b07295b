// The capture fixtures as builders (test support): each makes a real checkout in a temporary
// directory, captures it, and returns the manifest with every blob the capture produced, so a
// restore test can rebuild it on a "second machine" (another directory, another object store).
// The kinds follow the capture tests: a working copy with everything in it, a patch chain,
// unpushed commits, a secret in unpushed history (pushed later), files under id_* directories
// (babel's parser fixtures), a detached HEAD without remotes, credentials in remote URLs, a
// submodule, size limits, an unborn branch, files whose bytes the repository's `text eol=lf`
// does not read back; and, apart, unpushed commits whose remote moved
// away (their pushed base cannot be fetched).
import { randomUUID } from "node:crypto";
import { utimesSync } from "node:fs";
import { join } from "node:path";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { captureCheckout, type CaptureOptions } from "../capture/engine/capture.ts";
import { addOrigin, commitAll, git, initRepository, remove, symlink, temporaryDirectory, write } from "./repos.ts";

export interface CapturedCheckout {
  /** The checkout on the "first machine". */
  root: string;
  manifest: CaptureManifest;
  /** Every blob the captures of this checkout produced, by sha256. */
  blobs: Map<string, Buffer>;
  /** Earlier captures of the same checkout, oldest first. */
  earlier: CaptureManifest[];
}

/** Captures and keeps the artifacts; throws unless a new snapshot was recorded. */
export async function captureInto(
  root: string,
  blobs: Map<string, Buffer>,
  options: CaptureOptions = {},
): Promise<CaptureManifest> {
  const result = await captureCheckout(root, options);
  if (result.outcome === "unavailable") throw result.error;
  if (result.outcome !== "captured") throw new Error(`expected a new snapshot, got ${result.outcome}`);
  for (const [digest, bytes] of result.artifacts) blobs.set(digest, bytes);
  return result.manifest;
}

/**
 * A repository with one commit whose content is unique to this call, so commits, bundles and
 * patches of two fixtures never share bytes (tests damage blobs by digest).
 */
function fresh(files: Record<string, string | Buffer>): string {
  return initRepository({ ...files, ".fixture": `${randomUUID()}\n` });
}

async function once(root: string, options: CaptureOptions = {}): Promise<CapturedCheckout> {
  const blobs = new Map<string, Buffer>();
  return { root, manifest: await captureInto(root, blobs, options), blobs, earlier: [] };
}

/** Obviously fake secret material. */
export const FAKE_SECRET = `FAKE-SECRET-${Math.random().toString(36).slice(2)}-NOT-A-REAL-KEY`;

async function everything(): Promise<CapturedCheckout> {
  const root = fresh({
    "README.md": "hello\n",
    "bin/tool.sh": "#!/bin/sh\necho tool\n",
    "data/blob.bin": Buffer.from([0, 1, 2, 3, 255, 254, 0, 10, 13]),
    "old name.txt": "to be renamed\n",
    "gone.txt": "to be deleted\n",
    "stage/both.txt": "v0\n",
    ".gitignore": "node_modules/\n*.log\nbuild/\n",
    ".gitattributes": "*.psd -text\n",
    ".env.example": "EXAMPLE=1\n",
  });
  addOrigin(root);
  write(root, "data/blob.bin", Buffer.from([9, 0, 8, 0, 7, 0xff]));
  symlink(root, "links/to-readme", "../README.md");
  git(root, ["update-index", "--chmod=+x", "bin/tool.sh"]);
  write(root, "bin/tool.sh", "#!/bin/sh\necho tool v2\n", 0o755);
  write(root, "unicode/naïve café ☕.txt", "unicode and spaces\n");
  write(root, 'odd/quote"and\\backslash.txt', "odd name\n");
  git(root, ["mv", "old name.txt", "new name.txt"]);
  remove(root, "gone.txt");
  write(root, "stage/both.txt", "v1 staged\n");
  git(root, ["add", "stage/both.txt"]);
  write(root, "stage/both.txt", "v2 in the working tree\n");
  write(root, "notes/untracked.md", "not added\n");
  write(root, "debug.log", "ignored\n");
  write(root, "node_modules/pkg/index.js", "ignored dir\n");
  write(root, "build/keep.log", "forced\n");
  git(root, ["add", "-f", "build/keep.log"]);
  write(root, "art/cover.psd", Buffer.from([1, 2, 3, 0, 4]));
  write(root, ".env.example", `EXAMPLE=2 ${FAKE_SECRET}\n`);
  write(root, ".env", `TOKEN=${FAKE_SECRET}\n`);
  write(root, "ssh/id_rsa", `${FAKE_SECRET}\n`);
  write(root, "tools/vendored/file.txt", "inside a nested repository\n");
  const nested = join(root, "tools", "vendored");
  git(nested, ["init", "--quiet"]);
  git(nested, ["add", "-A"]);
  git(nested, ["commit", "--quiet", "-m", "nested"]);
  write(root, ".strata/snapshot-ignore", "scratch/\n");
  write(root, "scratch/big-output.dat", "snapshot-ignored\n");
  return once(root);
}

async function patchChain(): Promise<CapturedCheckout> {
  const root = fresh({ "a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n" });
  addOrigin(root);
  const blobs = new Map<string, Buffer>();
  const earlier: CaptureManifest[] = [];
  const nonce = randomUUID();
  write(root, "a.txt", `a changed ${nonce}\n`);
  earlier.push(await captureInto(root, blobs));
  write(root, "b.txt", `b changed ${nonce}\n`);
  write(root, "new.txt", `new file ${nonce}\n`);
  earlier.push(await captureInto(root, blobs, { previous: earlier.at(-1) }));
  remove(root, "dir/c.txt");
  write(root, "a.txt", `a changed twice ${nonce}\n`);
  const manifest = await captureInto(root, blobs, { previous: earlier.at(-1) });
  return { root, manifest, blobs, earlier };
}

async function unpushedCommits(): Promise<CapturedCheckout> {
  const root = fresh({ "a.txt": "a\n" });
  addOrigin(root);
  write(root, "a.txt", "a, committed locally\n");
  commitAll(root, "local one");
  write(root, "b.txt", "b, committed locally\n");
  commitAll(root, "local two");
  write(root, "b.txt", "b, dirty on top\n");
  return once(root);
}

async function secretPushedLater(): Promise<CapturedCheckout> {
  const root = fresh({ "a.txt": "a\n" });
  addOrigin(root);
  write(root, "config/.env", `SECRET=${FAKE_SECRET}\n`);
  commitAll(root, "a secret, unpushed");
  remove(root, "config/.env");
  write(root, "a.txt", "a2\n");
  commitAll(root, "removed again");
  write(root, "a.txt", "a3, dirty\n");
  const captured = await once(root);
  // The bundle was left out; once the commits are pushed, a restore fetches them.
  git(root, ["push", "--quiet", "origin", "main"]);
  return captured;
}

/**
 * Babel's shape, not yet captured: parser fixtures in directories named id_* (a changed file, a
 * new one, and an unpushed commit touching one), next to an SSH key file that stays out.
 */
export function parserFixturesCheckout(): { root: string; fixtures: string; unpushed: string } {
  const fixtures = "test/fixtures/placeholders";
  const root = fresh({
    [`${fixtures}/expression/id_expression/input.js`]: "%%x%%;\n",
    [`${fixtures}/statement/id_statement/input.js`]: "%%x%%\n",
  });
  addOrigin(root);
  write(root, `${fixtures}/declaration/id_declaration/input.js`, "function %%x%%() {}\n");
  const unpushed = commitAll(root, "an unpushed fixture under id_declaration/");
  write(root, `${fixtures}/expression/id_expression/input.js`, "%%y%%;\n");
  write(root, `${fixtures}/statement/id_statement/output.json`, "{}\n");
  write(root, ".ssh/id_ed25519", `${FAKE_SECRET}\n`);
  return { root, fixtures, unpushed };
}

async function idDirectories(): Promise<CapturedCheckout> {
  return once(parserFixturesCheckout().root);
}

/**
 * A file committed with CRLF (`legacy.txt`) before `*.txt text` (or `attributes`, e.g. babel's
 * `* text eol=lf`) came in, older than the index as files are, so git never reads it again: its
 * blob keeps the CRLF no checkout reads back.
 */
export function crlfBeforeTextAttribute(attributes = "*.txt text\n"): string {
  const root = fresh({ "README.md": "hello\n" });
  write(root, "legacy.txt", "one\r\ntwo\r\n");
  const past = new Date(Date.now() - 60_000);
  utimesSync(join(root, "legacy.txt"), past, past);
  commitAll(root, "a Windows file");
  write(root, ".gitattributes", attributes);
  commitAll(root, "normalise text files from now on");
  addOrigin(root);
  return root;
}

async function detachedWithoutRemotes(): Promise<CapturedCheckout> {
  const root = fresh({ "a.txt": "a\n" });
  write(root, "a.txt", "a2\n");
  commitAll(root, "second");
  git(root, ["checkout", "--quiet", "--detach", "HEAD~1"]);
  write(root, "b.txt", "dirty on a detached HEAD\n");
  return once(root);
}

async function credentialRemotes(): Promise<CapturedCheckout> {
  const root = fresh({ "a.txt": "a\n" });
  git(root, ["remote", "add", "origin", `https://x-access-token:${FAKE_SECRET}@example.invalid/acme/app.git`]);
  git(root, ["remote", "add", "mirror", "git@example.invalid:acme/app.git"]);
  write(root, "a.txt", "changed\n");
  return once(root);
}

async function submodule(): Promise<CapturedCheckout> {
  const library = fresh({ "lib.txt": "library\n" });
  const root = fresh({ "app.txt": "app\n" });
  addOrigin(root);
  git(root, ["-c", "protocol.file.allow=always", "submodule", "add", "--quiet", `file://${library}`, "lib"]);
  commitAll(root, "add submodule");
  git(root, ["push", "--quiet", "origin", "main"]);
  write(join(root, "lib"), "lib.txt", "changed inside the submodule\n");
  write(root, "app.txt", "app changed\n");
  return once(root);
}

async function limits(): Promise<CapturedCheckout> {
  const root = fresh({ "tracked.txt": "small\n" });
  addOrigin(root);
  write(root, "tracked.txt", "x".repeat(2000));
  write(root, "a-new.txt", "y".repeat(300));
  write(root, "b-new.txt", "z".repeat(300));
  write(root, "untracked-off.txt", "w");
  return once(root, { maxFileBytes: 1000, maxSnapshotBytes: 700, includeUntracked: true });
}

async function unbornBranch(): Promise<CapturedCheckout> {
  const root = temporaryDirectory();
  git(root, ["init", "--quiet", "--initial-branch=trunk"]);
  write(root, "first.txt", "before the first commit\n");
  write(root, "sub/second.txt", "also\n");
  git(root, ["add", "first.txt"]);
  return once(root);
}

/**
 * Babel's `* text eol=lf` with files whose bytes that attribute does not read back: a CR before
 * a CRLF (`ab\r\r\n`) stays in the blob as a CRLF, which a checkout writes as it is and a
 * re-read turns into LF. One committed (and pushed) that way, one changed, one untracked; a
 * `binary` file with CRLF next to them is converted by nothing and needs nothing.
 */
async function eolNormalised(): Promise<CapturedCheckout> {
  const root = fresh({
    ".gitattributes": "* text eol=lf\n*.png binary\n",
    "src/plain.js": "plain\n",
    "img/logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    "fixtures/committed.txt": "one\r\r\ntwo\r\n",
  });
  addOrigin(root);
  write(root, "data.bin", "ab\r\r\ncd\r\n");
  write(root, "src/plain.js", "plain\r\r\nnow with CR bytes\r\n");
  return once(root);
}

/**
 * Unpushed commits (a bundle) whose remote then moved away, as on a host whose `origin` was
 * renamed: the bundle holds every unpushed commit, but the pushed commit it builds on (`base`)
 * can no longer be fetched. Not among CHECKOUT_FIXTURES: it cannot be restored exactly.
 */
export async function unpushedOnMovedRemote(): Promise<CapturedCheckout & { base: string }> {
  const root = fresh({ "a.txt": "a\n" });
  const remote = addOrigin(root);
  const base = git(root, ["rev-parse", "HEAD"]).trim();
  for (const n of [1, 2, 3]) {
    write(root, "a.txt", `a, local commit ${n}\n`);
    commitAll(root, `local ${n}`);
  }
  write(root, "b.txt", "dirty on top\n");
  const captured = await once(root);
  remove(remote, "");
  return { ...captured, base };
}

export const CHECKOUT_FIXTURES: ReadonlyArray<{ name: string; make: () => Promise<CapturedCheckout> }> = [
  { name: "a working copy with everything in it", make: everything },
  { name: "a patch chain (full + incremental links)", make: patchChain },
  { name: "unpushed commits (a bundle) with dirty files on top", make: unpushedCommits },
  { name: "a secret in unpushed history, pushed after the capture", make: secretPushedLater },
  { name: "a detached HEAD without remotes (all history bundled)", make: detachedWithoutRemotes },
  { name: "remotes recorded without their credentials", make: credentialRemotes },
  { name: "a submodule with changes inside", make: submodule },
  { name: "size limits", make: limits },
  { name: "an unborn branch", make: unbornBranch },
  { name: "parser fixtures under id_* directories, one in an unpushed commit", make: idDirectories },
  { name: "files whose CR bytes `* text eol=lf` does not read back", make: eolNormalised },
];
