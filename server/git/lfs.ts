// Git LFS as captures and restores meet it. git-lfs's clean filter stores a file it manages as a
// pointer blob (a few lines naming the content's sha256 and size) and keeps the content as an
// object under <git-dir>/lfs/objects; `git push` uploads the objects its commits need to the
// remote's LFS store, and a checkout's smudge filter turns pointers back into content.
import { join } from "node:path";
import { blobContents, oidArg } from "./commands.ts";
import { decodeUtf8, splitLines, type GitCommand, type GitRunner } from "./runner.ts";

export interface LfsPointer {
  /** The content's sha256, which names the LFS object. */
  oid: string;
  size: number;
}

/** The modes of the files an LFS pointer can stand for (regular files, executable or not). */
export const REGULAR_FILE = /^100(644|755)$/;

/** git-lfs reads no blob larger than this as a pointer. */
const POINTER_MAX_BYTES = 1024;

const POINTER_VERSION = /^version https:\/\/(git-lfs|hawser)\.github\.com\/spec\/v1$/;

/** The pointer a blob holds, or null when it is not one (git-lfs's own reading, strictly). */
export function parseLfsPointer(bytes: Uint8Array): LfsPointer | null {
  if (bytes.length > POINTER_MAX_BYTES) return null;
  const lines = Buffer.from(bytes).toString("utf8").split("\n");
  if (lines.pop() !== "" || !POINTER_VERSION.test(lines[0] ?? "")) return null;
  let oid: string | null = null;
  let size: number | null = null;
  for (const line of lines.slice(1)) {
    const oidLine = /^oid sha256:([0-9a-f]{64})$/.exec(line);
    const sizeLine = /^size (0|[1-9][0-9]{0,15})$/.exec(line);
    if (oidLine?.[1]) oid = oidLine[1];
    else if (sizeLine?.[1]) size = Number(sizeLine[1]);
    else if (!/^ext-\d+-[a-z0-9-]+ sha256:[0-9a-f]{64}$/.test(line)) return null;
  }
  return oid !== null && size !== null && Number.isSafeInteger(size) ? { oid, size } : null;
}

/** Where git-lfs keeps an object in a repository (the common git directory for worktrees). */
export function lfsObjectPath(gitDir: string, oid: string): string {
  return join(gitDir, "lfs", "objects", oid.slice(0, 2), oid.slice(2, 4), oid);
}

/** The size of each blob among these objects (others, and missing ones, are left out). */
export function blobSizes(oids: readonly string[]): GitCommand<Map<string, number>> {
  return {
    args: ["cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
    input: oids.map((o) => `${oidArg(o)}\n`).join(""),
    parse: (out) => {
      const sizes = new Map<string, number>();
      for (const line of splitLines(out.stdout)) {
        const [oid = "", type, size] = line.split(" ");
        if (type === "blob") sizes.set(oid, Number(size));
      }
      return sizes;
    },
  };
}

/** The blobs among `oids` that are LFS pointers, by blob id: one batch-check, one read of the small ones. */
export async function lfsPointersAmong(git: GitRunner, oids: readonly string[]): Promise<Map<string, LfsPointer>> {
  const pointers = new Map<string, LfsPointer>();
  if (oids.length === 0) return pointers;
  const sizes = await git.run(blobSizes([...new Set(oids)]));
  const small = [...sizes].filter(([, size]) => size <= POINTER_MAX_BYTES).map(([oid]) => oid);
  if (small.length === 0) return pointers;
  const contents = await git.run(blobContents(small, small.length * (POINTER_MAX_BYTES + 100)));
  for (const [oid, bytes] of contents) {
    const pointer = parseLfsPointer(bytes);
    if (pointer) pointers.set(oid, pointer);
  }
  return pointers;
}

/** The git-lfs version line, or null when git-lfs is not installed (git knows no `lfs` command). */
export function lfsVersion(): GitCommand<string | null> {
  return {
    args: ["lfs", "version"],
    okExitCodes: [0, 1],
    parse: (out) => (out.exitCode === 0 ? decodeUtf8(out.stdout).trim() : null),
  };
}
