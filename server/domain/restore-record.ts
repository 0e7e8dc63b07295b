// The security check of a snapshot record before a restore runs anything. Records come from
// storage, from other servers and from imported files, so every value that can reach a git
// argument, a configuration key or a URL is checked here, in the exact form a capture writes.
// A record that fails is INVALID_SNAPSHOT naming the field (`remotes[1].url`), never its value.
import { captureManifestSchema, type CaptureManifest } from "./capture-manifest.ts";
import { StrataError } from "./errors.ts";

/** The record a restore works from: the snapshot's id and its full manifest, as stored. */
export interface RestoreRecord {
  snapshotId: string;
  /** The manifest as read (parsed JSON, not yet trusted). */
  manifest: unknown;
}

const SNAPSHOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID = SNAPSHOT_ID;
const DIGEST = /^[0-9a-f]{64}$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The empty tree's id in each object format (the base of a full patch on an unborn branch). */
export const EMPTY_TREE = {
  sha1: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
  sha256: "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
} as const;

function isSnapshotId(value: unknown): value is string {
  return typeof value === "string" && SNAPSHOT_ID.test(value);
}

function invalid(field: string, why: string): StrataError {
  return new StrataError("INVALID_SNAPSHOT", `The snapshot record fails the security checks at ${field} (${why}).`, {
    hint: "The record was refused before anything ran. Restore another snapshot, or capture the checkout again.",
    data: { field, why },
  });
}

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function objectId(value: unknown, length: 40 | 64, field: string): string {
  if (typeof value !== "string" || value.length !== length || !/^[0-9a-f]+$/.test(value)) {
    throw invalid(field, `not a ${length}-character lower-case object id`);
  }
  return value;
}

function optionalObjectId(value: unknown, length: 40 | 64, field: string): void {
  if (value !== null) objectId(value, length, field);
}

function uuid(value: unknown, field: string): string {
  if (typeof value !== "string" || !UUID.test(value)) throw invalid(field, "not a lower-case UUID");
  return value;
}

function digest(value: unknown, field: string): string {
  if (typeof value !== "string" || !DIGEST.test(value)) throw invalid(field, "not a lower-case sha256 digest");
  return value;
}

function list(value: unknown, field: string, max: number): unknown[] {
  if (!Array.isArray(value)) throw invalid(field, "not a list");
  if (value.length > max) throw invalid(field, `more than ${max} entries`);
  return value;
}

/**
 * Why a branch name is not one git would accept as `refs/heads/<name>`, or null. Stricter than
 * git in one way: no spaces.
 */
export function branchNameProblem(name: string): string | null {
  if (name.length === 0 || name.length > 250) return "empty or too long";
  if (CONTROL.test(name) || /[\s~^:?*[\\]/.test(name)) return "a character git refuses in a ref";
  if (name.startsWith("-")) return "starts with '-'";
  if (name.includes("..") || name.includes("@{") || name.includes("//") || name === "@")
    return "a sequence git refuses";
  if (name.startsWith("/") || name.endsWith("/") || name.endsWith(".") || name.endsWith(".lock")) return "a bad ending";
  if (name.split("/").some((part) => part.startsWith("."))) return "a component starting with '.'";
  return null;
}

/** Why a remote name cannot be a configuration key component, or null. */
export function remoteNameProblem(name: string): string | null {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/.test(name) || name.length > 250) {
    return "letters, digits, '.', '_', '-' and '/' only, not starting with '-'";
  }
  if (name.includes("..") || name.endsWith(".lock")) return "a sequence git refuses";
  return null;
}

const URL_SCHEMES = new Set(["https", "http", "ssh", "git", "file"]);
const SCHEME_URL = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/;
const HELPER = /^[A-Za-z0-9][A-Za-z0-9+.-]*::/;
// [user@]host:path with no slash before the colon: git's scp-like syntax.
const SCP_LIKE = /^(?:([^@/:]+)@)?([^@/:]+):(.*)$/;

/**
 * Why a recorded remote URL is unsafe to configure or fetch from, or null. Allowed: a local
 * path, scp-like `[user@]host:path`, and https, http, ssh, git or file URLs without
 * credentials. Never a value starting with `-`, control characters, or a remote helper.
 */
export function remoteUrlProblem(url: string): string | null {
  if (url.length === 0 || url.length > 4096) return "empty or too long";
  if (CONTROL.test(url)) return "control characters";
  if (url.startsWith("-")) return "starts with '-'";
  if (url.trim() !== url) return "surrounding whitespace";
  if (HELPER.test(url)) return "a git remote helper";
  const parsed = SCHEME_URL.exec(url);
  if (parsed) {
    const [, rawScheme = "", authority = "", rest = ""] = parsed;
    const scheme = rawScheme.toLowerCase();
    if (!URL_SCHEMES.has(scheme)) return "a URL scheme other than https, http, ssh, git or file";
    if (/[?#]/.test(rest)) return "a query string or fragment";
    const at = authority.lastIndexOf("@");
    const userinfo = at >= 0 ? authority.slice(0, at) : null;
    const host = at >= 0 ? authority.slice(at + 1) : authority;
    if (userinfo !== null) {
      // Only ssh keeps a user name, and never a password.
      if (scheme !== "ssh") return "credentials in the URL";
      if (userinfo === "" || userinfo.includes(":") || userinfo.startsWith("-")) return "credentials in the URL";
    }
    if (host.startsWith("-")) return "a host starting with '-'";
    if (scheme !== "file" && host === "") return "no host";
    if (/\s/.test(authority)) return "whitespace in the host";
    return null;
  }
  const scp = SCP_LIKE.exec(url);
  if (scp) {
    const [, user, host = "", path = ""] = scp;
    if (user !== undefined && user.startsWith("-")) return "a user starting with '-'";
    if (host.startsWith("-") || /\s/.test(host)) return "a bad host";
    if (path.startsWith("-")) return "a path starting with '-'";
    return null;
  }
  return null;
}

function checkRemotes(value: unknown): void {
  const remotes = list(value, "remotes", 100);
  const names = new Set<string>();
  remotes.forEach((remote, i) => {
    if (!isObj(remote)) throw invalid(`remotes[${i}]`, "not an object");
    if (typeof remote.name !== "string") throw invalid(`remotes[${i}].name`, "not a string");
    const nameProblem = remoteNameProblem(remote.name);
    if (nameProblem) throw invalid(`remotes[${i}].name`, nameProblem);
    if (names.has(remote.name)) throw invalid(`remotes[${i}].name`, "a repeated name");
    names.add(remote.name);
    if (typeof remote.url !== "string") throw invalid(`remotes[${i}].url`, "not a string");
    const urlProblem = remoteUrlProblem(remote.url);
    if (urlProblem) throw invalid(`remotes[${i}].url`, urlProblem);
  });
}

function checkPatches(m: Obj, length: 40 | 64, format: "sha1" | "sha256"): void {
  const patches = list(m.patches, "patches", 1000);
  let previous: Obj | null = null;
  patches.forEach((link, i) => {
    const at = `patches[${i}]`;
    if (!isObj(link)) throw invalid(at, "not an object");
    uuid(link.uuid, `${at}.uuid`);
    if (link.parent !== null) uuid(link.parent, `${at}.parent`);
    digest(link.digest, `${at}.digest`);
    byteCount(link.size, `${at}.size`);
    objectId(link.base, length, `${at}.base`);
    objectId(link.tree, length, `${at}.tree`);
    if (link.files !== undefined) checkWholeFiles(link.files, length, `${at}.files`);
    // The chain's shape: one full patch against HEAD (or the empty tree), then incremental
    // patches each against the tree before it.
    if (previous === null) {
      if (link.kind !== "full") throw invalid(`${at}.kind`, "a chain starts with a full patch");
      if (link.parent !== null) throw invalid(`${at}.parent`, "a full patch has no parent");
      if (link.base !== (m.head ?? EMPTY_TREE[format])) throw invalid(`${at}.base`, "a full patch applies to HEAD");
    } else {
      if (link.kind !== "incremental") throw invalid(`${at}.kind`, "only the first patch is full");
      if (link.parent !== previous.uuid) throw invalid(`${at}.parent`, "not the previous patch");
      if (link.base !== previous.tree) throw invalid(`${at}.base`, "not the previous patch's tree");
    }
    previous = link;
  });
  if (previous !== null && (previous as Obj).tree !== m.tree) {
    throw invalid(`patches[${patches.length - 1}].tree`, "the chain does not end at the recorded tree");
  }
}

/** The files a patch carries whole (capture-manifest.ts): object id, digest, size, each. */
function checkWholeFiles(value: unknown, length: 40 | 64, at: string): void {
  list(value, at, 100_000).forEach((file, i) => {
    if (!isObj(file)) throw invalid(`${at}[${i}]`, "not an object");
    objectId(file.oid, length, `${at}[${i}].oid`);
    digest(file.digest, `${at}[${i}].digest`);
    byteCount(file.size, `${at}[${i}].size`);
  });
}

/** Why a recorded path cannot name a file inside the worktree, or null. */
export function worktreePathProblem(path: string): string | null {
  if (path.length === 0 || path.length > 4096) return "empty or too long";
  if (path.includes("\u0000")) return "a NUL byte";
  if (path.startsWith("/")) return "an absolute path";
  for (const part of path.split("/")) {
    if (part === "" || part === "." || part === "..") return "an empty, '.' or '..' component";
    if (part.toLowerCase() === ".git") return "a .git component";
  }
  return null;
}

/** The files a restore writes verbatim (capture-manifest.ts): where, which blob, which bytes. */
function checkVerbatim(value: unknown, length: 40 | 64): void {
  if (value === undefined) return;
  const paths = new Set<string>();
  list(value, "verbatim", 100_000).forEach((file, i) => {
    const at = `verbatim[${i}]`;
    if (!isObj(file)) throw invalid(at, "not an object");
    if (typeof file.path !== "string") throw invalid(`${at}.path`, "not a string");
    const problem = worktreePathProblem(file.path);
    if (problem) throw invalid(`${at}.path`, problem);
    if (paths.has(file.path)) throw invalid(`${at}.path`, "a repeated path");
    paths.add(file.path);
    objectId(file.oid, length, `${at}.oid`);
    if (file.bytes !== undefined) {
      if (!isObj(file.bytes)) throw invalid(`${at}.bytes`, "not an object");
      digest(file.bytes.digest, `${at}.bytes.digest`);
      byteCount(file.bytes.size, `${at}.bytes.size`);
    }
  });
}

/** The LFS objects a capture stored (capture-manifest.ts): each a sha256 and a size, once. */
function checkLfsObjects(value: unknown): void {
  if (value === undefined) return;
  const oids = new Set<string>();
  list(value, "lfsObjects", 100_000).forEach((object, i) => {
    const at = `lfsObjects[${i}]`;
    if (!isObj(object)) throw invalid(at, "not an object");
    const oid = digest(object.oid, `${at}.oid`);
    if (oids.has(oid)) throw invalid(`${at}.oid`, "a repeated object");
    oids.add(oid);
    byteCount(object.size, `${at}.size`);
  });
}

function byteCount(value: unknown, field: string): void {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw invalid(field, "not a byte count");
}

function checkBundle(m: Obj, length: 40 | 64): void {
  if (m.bundle === null) return;
  if (!isObj(m.bundle)) throw invalid("bundle", "not an object");
  if (m.bundle.uuid !== undefined) uuid(m.bundle.uuid, "bundle.uuid");
  digest(m.bundle.digest, "bundle.digest");
  const commits = list(m.bundle.commits, "bundle.commits", 100_000);
  if (commits.length === 0) throw invalid("bundle.commits", "empty");
  commits.forEach((c, i) => objectId(c, length, `bundle.commits[${i}]`));
  if (m.head === null || commits[0] !== m.head) throw invalid("bundle.commits[0]", "not the recorded HEAD");
}

/**
 * Checks a record and returns its manifest, typed. Throws INVALID_SNAPSHOT naming the first
 * field that fails; runs nothing and touches no file.
 */
export function checkRestoreRecord(record: RestoreRecord): CaptureManifest {
  if (!isSnapshotId(record.snapshotId)) throw invalid("snapshotId", "not a snapshot id");
  const m = record.manifest;
  if (!isObj(m)) throw invalid("manifest", "not an object");
  if (m.version !== 1) throw invalid("version", "an unknown manifest version");
  if (m.objectFormat !== "sha1" && m.objectFormat !== "sha256") throw invalid("objectFormat", "unknown");
  const length = m.objectFormat === "sha1" ? 40 : 64;
  optionalObjectId(m.head, length, "head");
  objectId(m.tree, length, "tree");
  if (m.branch !== null) {
    if (typeof m.branch !== "string") throw invalid("branch", "not a string");
    const problem = branchNameProblem(m.branch);
    if (problem) throw invalid("branch", problem);
  }
  checkRemotes(m.remotes);
  checkPatches(m, length, m.objectFormat);
  checkBundle(m, length);
  checkVerbatim(m.verbatim, length);
  checkLfsObjects(m.lfsObjects);
  list(m.omitted, "omitted", 100_000).forEach((entry, i) => {
    if (!isObj(entry)) throw invalid(`omitted[${i}]`, "not an object");
    if (entry.commits !== undefined) {
      list(entry.commits, `omitted[${i}].commits`, 10_000).forEach((c, j) =>
        objectId(c, length, `omitted[${i}].commits[${j}]`),
      );
    }
  });
  if (m.snapshotRef !== null && m.snapshotRef !== undefined) {
    if (!isObj(m.snapshotRef)) throw invalid("snapshotRef", "not an object");
    objectId(m.snapshotRef.commit, length, "snapshotRef.commit");
  }
  if (m.envHash !== null && m.envHash !== undefined) digest(m.envHash, "envHash");

  // Everything else: the shape the capture writes.
  const parsed = captureManifestSchema.safeParse(m);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(
      issue?.path
        .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
        .join("")
        .slice(1) || "manifest",
      "not the recorded shape",
    );
  }
  return parsed.data;
}
