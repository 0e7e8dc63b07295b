// Files whose recorded blob git does not read back from its own checkout, so a restore must
// write their bytes as they were instead of letting git check the blob out.
//
// With `text` set (or `eol` set and `text` unspecified; the old `crlf` attribute alike), git
// turns every CRLF into LF on the way in, whatever the content. Worktree bytes such as
// `ab\r\r\ncd\r\n` are stored as `ab\r\ncd\n`: a blob that still has a CRLF. Checking that blob
// out writes it as it is, and reading it back turns its CRLF into LF: another blob. So a restore
// that lets git write such a file can never verify it, on any host, because the rule comes
// from the repository (babel has `* text eol=lf`). A blob committed with CRLF before the
// attribute came in is the same case.
//
// The capture records those files (path, blob, the attributes that applied) and, where the
// worktree bytes are not the blob's own content, those bytes as a blob of their own. A restore
// writes them verbatim (restore-verbatim.ts). Finding them costs nothing in a repository whose
// attribute files cannot convert line endings that way; otherwise the blobs that changed since
// the last capture are read for lines ending in CR (git searches the whole tree on a first
// capture, or when an attribute file changed).
import { createHash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { VerbatimFile } from "../../domain/capture-manifest.ts";
import {
  blobContents,
  changedFilesBetween,
  indexFileEntries,
  lineEndingAttributes,
  pathGroups,
  pathsWithCarriageReturns,
  type IndexEntry,
  type RepositoryLayout,
} from "../../git/commands.ts";
import { deniedPathRule } from "../../domain/deny-list.ts";
import { isStrataError } from "../../domain/errors.ts";
import { isOutputLimit, unreadablePath, type GitRunner } from "../../git/runner.ts";

/** A file of the tree that needs its bytes written verbatim, before its bytes are read. */
export interface VerbatimCandidate {
  path: string;
  /** The blob the tree records. */
  oid: string;
  /** The line-ending attributes that applied, e.g. `text eol=lf`. */
  attributes: string;
}

/** What one capture remembers for the next: the answer for a tree under these attribute files. */
export interface VerbatimMemo {
  tree: string;
  /** A digest of the attribute files outside the tree (info/attributes, the global file). */
  key: string;
  files: VerbatimCandidate[];
}

const REGULAR_FILE = /^100(644|755)$/;

/**
 * Whether an attribute file may make git convert some path's line endings whatever its content:
 * a line that sets `text` (other than `text=auto`), leaves it unspecified again (`!text`), uses
 * the old `crlf` (other than `-crlf`), or sets `eol` without `text=auto`, `-text` or `binary`
 * on the same line. Errs towards yes (a macro that sets `text` counts; `* text=auto` on one line
 * and `*.sh eol=lf` on another counts although it converts nothing): a yes only costs a search.
 */
export function mayConvertLineEndings(text: string): boolean {
  for (const line of text.split(/\r?\n/)) {
    const tokens = line.trim().startsWith("#") ? [] : line.trim().split(/\s+/).slice(1);
    const auto = tokens.some((t) => t === "text=auto" || t === "-text" || t === "binary");
    for (const token of tokens) {
      if (/^(text|!text|crlf|!crlf)$/.test(token) || /^(text|crlf)=/.test(token)) {
        if (token !== "text=auto") return true;
      }
      if (/^eol=/.test(token) && !auto) return true;
    }
  }
  return false;
}

/**
 * Whether git converts a path's line endings on the way in whatever its content, from the
 * values `git check-attr` prints ("set", "unset", "unspecified" or a value). `text=auto` (and
 * core.autocrlf, which only matters when no attribute decides) leaves a blob that has CRLF
 * alone, so its checkout reads back as itself. Pure.
 */
export function convertsLineEndings(attributes: Readonly<Record<string, string>>): boolean {
  const action = (value: string | undefined): "text" | "binary" | "auto" | null => {
    if (value === "set" || value === "input") return "text";
    if (value === "unset") return "binary";
    if (value === "auto") return "auto";
    return null;
  };
  const chosen = action(attributes.text) ?? action(attributes.crlf);
  if (chosen !== null) return chosen === "text";
  return attributes.eol === "lf" || attributes.eol === "crlf";
}

/** The attributes that decided, as a short text for people (`text eol=lf`). */
function describeAttributes(attributes: Readonly<Record<string, string>>): string {
  const shown = (name: string) => {
    const value = attributes[name];
    if (value === undefined || value === "unspecified") return null;
    return value === "set" ? name : value === "unset" ? `-${name}` : `${name}=${value}`;
  };
  return ["text", "eol", "crlf"].map(shown).filter(Boolean).join(" ");
}

/**
 * Which of `withCr` (paths whose blob has a line ending in CR) git does not read back: regular
 * files whose attributes convert line endings on the way in.
 */
async function notReadBack(
  git: GitRunner,
  indexFile: string,
  withCr: readonly string[],
  entries: ReadonlyMap<string, IndexEntry>,
): Promise<VerbatimCandidate[]> {
  const files = withCr.filter((path) => REGULAR_FILE.test(entries.get(path)?.mode ?? ""));
  if (files.length === 0) return [];
  const attributes = await git.run(lineEndingAttributes(indexFile, files));
  const found: VerbatimCandidate[] = [];
  for (const path of files) {
    const values = attributes.get(path) ?? {};
    const entry = entries.get(path);
    if (entry && convertsLineEndings(values)) {
      found.push({ path, oid: entry.oid, attributes: describeAttributes(values) });
    }
  }
  return found.sort(byPath);
}

function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** Which of these paths have a blob in the index with a line ending in CR (git searches). */
async function withCarriageReturns(git: GitRunner, indexFile: string, paths: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const group of pathGroups(paths)) found.push(...(await git.run(pathsWithCarriageReturns(indexFile, group))));
  return found;
}

/**
 * Which of these files of an index hold a blob that the repository's attributes do not read
 * back from its checkout (a restore's explanation of files that differ).
 */
export async function filesNotReadBack(
  git: GitRunner,
  indexFile: string,
  paths: readonly string[],
): Promise<VerbatimCandidate[]> {
  if (paths.length === 0) return [];
  const withCr = await withCarriageReturns(git, indexFile, paths);
  if (withCr.length === 0) return [];
  return notReadBack(git, indexFile, withCr, await git.run(indexFileEntries(indexFile)));
}

function expandHome(path: string): string {
  return path.startsWith("~/") ? join(process.env.HOME ?? homedir(), path.slice(2)) : path;
}

/**
 * The texts of the attribute files outside the tree that apply here: info/attributes, and
 * core.attributesFile or its default ($XDG_CONFIG_HOME/git/attributes).
 */
export async function hostAttributeTexts(
  layout: RepositoryLayout,
  config: ReadonlyArray<readonly [string, string]>,
): Promise<string[]> {
  const configured = config.findLast(([key]) => key.toLowerCase() === "core.attributesfile")?.[1];
  const home = process.env.HOME ?? homedir();
  const global = configured
    ? expandHome(configured)
    : join(process.env.XDG_CONFIG_HOME || join(home, ".config"), "git", "attributes");
  const files = [join(layout.commonDir, "info", "attributes"), global];
  return Promise.all(files.map((file) => readFile(file, "utf8").catch(() => "")));
}

export function attributesKey(hostTexts: readonly string[]): string {
  return createHash("sha256").update(JSON.stringify(hostTexts)).digest("hex");
}

function isAttributeFile(path: string): boolean {
  return path === ".gitattributes" || path.endsWith("/.gitattributes");
}

/**
 * The files of the index's tree whose blob a checkout does not read back. Reuses the last
 * capture's answer where the tree is the same, and searches only the files that changed since
 * its tree otherwise (all of them when an attribute file changed or that tree is gone).
 */
export async function findVerbatimFiles(
  git: GitRunner,
  opts: {
    indexFile: string;
    tree: string;
    key: string;
    known: VerbatimMemo | undefined;
    /** Every attribute text that applies (the tree's .gitattributes files and the host's). */
    attributeTexts: () => Promise<readonly string[]>;
    /** The most blob content read at once for the files that changed. */
    maxBytes: number;
  },
): Promise<VerbatimMemo> {
  const { indexFile, tree, key, known } = opts;
  const answer = (files: VerbatimCandidate[]): VerbatimMemo => ({ tree, key, files });
  const usable = known?.key === key ? known : undefined;
  if (usable?.tree === tree) return usable;
  if (!(await opts.attributeTexts()).some(mayConvertLineEndings)) return answer([]);

  const changed = usable ? await changedSince(git, usable.tree, tree) : null;
  if (changed === null || changed.some((f) => isAttributeFile(f.path))) {
    // Everything: git searches every blob of the index, and only its hits are looked up.
    const withCr = await git.run(pathsWithCarriageReturns(indexFile, null));
    if (withCr.length === 0) return answer([]);
    return answer(await notReadBack(git, indexFile, withCr, await git.run(indexFileEntries(indexFile))));
  }
  const touched = new Set(changed.map((f) => f.path));
  const entries = new Map<string, IndexEntry>();
  for (const file of changed) {
    if (file.oid && REGULAR_FILE.test(file.mode))
      entries.set(file.path, { mode: file.mode, oid: file.oid, path: file.path });
  }
  const kept = (usable?.files ?? []).filter((f) => !touched.has(f.path));
  const withCr = await blobsWithCarriageReturns(git, indexFile, entries, opts.maxBytes);
  const found = await notReadBack(git, indexFile, withCr, entries);
  return answer([...kept, ...found].sort(byPath));
}

/** Whether a blob has a line that ends in CR, as `git grep -e '\r$'` finds it. */
export function hasLineEndingInCr(bytes: Buffer): boolean {
  return bytes.includes("\r\n") || bytes.at(-1) === 0x0d;
}

/**
 * The paths among these entries whose blob has a line ending in CR. Blobs that changed are
 * few and mostly small: one `cat-file` reads them all, which costs far less than a search of
 * the index limited to their paths (git matches every entry against every path).
 */
async function blobsWithCarriageReturns(
  git: GitRunner,
  indexFile: string,
  entries: ReadonlyMap<string, IndexEntry>,
  maxBytes: number,
): Promise<string[]> {
  if (entries.size === 0) return [];
  const oids = [...new Set([...entries.values()].map((e) => e.oid))];
  let contents: Map<string, Buffer>;
  try {
    contents = await git.run(blobContents(oids, maxBytes));
  } catch (error) {
    // More than can be read at once: git searches them instead.
    if (!isOutputLimit(error)) throw error;
    return withCarriageReturns(git, indexFile, [...entries.keys()]);
  }
  return [...entries.values()]
    .filter((e) => hasLineEndingInCr(contents.get(e.oid) ?? Buffer.alloc(0)))
    .map((e) => e.path);
}

/** The files changed between two trees, or null when the older one is no longer here. */
async function changedSince(git: GitRunner, from: string, to: string) {
  try {
    return await git.run(changedFilesBetween(from, to));
  } catch (error) {
    if (isStrataError(error, "GIT_FAILED")) return null;
    throw error;
  }
}

/** A blob's object id for these bytes, as `git hash-object --no-filters` computes it. */
export function blobObjectId(bytes: Buffer, objectFormat: "sha1" | "sha256"): string {
  return createHash(objectFormat === "sha1" ? "sha1" : "sha256")
    .update(`blob ${bytes.length}\0`)
    .update(bytes)
    .digest("hex");
}

/** Whether bytes are what a verbatim file records: its stored bytes, or else its blob's own content. */
export function holdsVerbatimBytes(
  bytes: Buffer,
  file: Pick<VerbatimFile, "oid" | "bytes">,
  objectFormat: "sha1" | "sha256",
): boolean {
  if (file.bytes) {
    return bytes.length === file.bytes.size && createHash("sha256").update(bytes).digest("hex") === file.bytes.digest;
  }
  return blobObjectId(bytes, objectFormat) === file.oid;
}

/**
 * The manifest's entries for these files, with the worktree bytes where they are not the
 * blob's own content. Bytes are never read for a file the capture left out (it keeps its
 * recorded blob, written as it is) or for a denied path, so no secret is stored this way.
 */
export async function readVerbatimBytes(
  root: string,
  files: readonly VerbatimCandidate[],
  opts: { leftOut: ReadonlySet<string>; maxFileBytes: number; objectFormat: "sha1" | "sha256" },
): Promise<{ entries: VerbatimFile[]; artifacts: Map<string, Buffer> }> {
  const entries: VerbatimFile[] = [];
  const artifacts = new Map<string, Buffer>();
  for (const file of files) {
    const entry: VerbatimFile = { path: file.path, oid: file.oid, attributes: file.attributes };
    entries.push(entry);
    if (opts.leftOut.has(file.path) || deniedPathRule(file.path)) continue;
    const full = join(root, file.path);
    const st = await lstat(full).catch(() => null);
    if (!st?.isFile() || st.size > opts.maxFileBytes) continue;
    const bytes = await readFile(full).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw unreadablePath(file.path, error.message);
    });
    if (!bytes || blobObjectId(bytes, opts.objectFormat) === file.oid) continue;
    const digest = createHash("sha256").update(bytes).digest("hex");
    entry.bytes = { digest, size: bytes.length };
    artifacts.set(digest, bytes);
  }
  return { entries, artifacts };
}
