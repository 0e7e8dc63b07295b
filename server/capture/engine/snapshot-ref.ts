// Snapshot refs: every capture is also a commit of its tree, kept reachable from
// refs/strata/snapshots/<work-context>/<checkout> so `git gc` keeps what the snapshot needs.
// The ref moves on each capture (one live snapshot commit per context and checkout). It is the
// one write a capture makes into the user's repository: outside refs/heads and refs/tags, so no
// push (except --mirror) carries it, and it never touches the index, HEAD or a branch.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { commitText, refUpdate, resolveCommit, updateRefs, writeCommitObject } from "../../git/commands.ts";
import type { GitRunner } from "../../git/runner.ts";

const SNAPSHOT_REF_PREFIX = "refs/strata/snapshots/";

/**
 * One ref component from any text: letters, digits, `_` and `-` stay, every other byte becomes
 * %XX. Always a valid, unambiguous component (no dots, so no `..`, `.lock` or leading dot).
 */
export function refComponent(text: string): string {
  const bytes = Buffer.from(text, "utf8");
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] ?? 0;
    const ch = String.fromCharCode(byte);
    const plain = /[A-Za-z0-9_]/.test(ch) || (ch === "-" && i > 0);
    out += plain ? ch : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out || "%00";
}

export function snapshotRefName(workContext: string, checkout: string): string {
  return `${SNAPSHOT_REF_PREFIX}${refComponent(workContext)}/${refComponent(checkout)}`;
}

/** A stable name for a checkout: its directory name and a short digest of its path. */
export function defaultCheckoutName(root: string): string {
  const digest = createHash("sha256").update(root).digest("hex").slice(0, 12);
  return `${basename(root) || "root"}-${digest}`;
}

const IDENTITY = { name: "Strata", email: "strata@localhost" };

export interface SnapshotWriter {
  /**
   * Starts the two git processes now (`hash-object` for the commit, `update-ref --stdin` for
   * the ref), while other work runs; they wait for their input until `write`.
   */
  prepare(): void;
  /** Commits the tree on top of HEAD and points the ref at the commit. */
  write(opts: { tree: string; head: string | null; now: Date }): Promise<{ name: string; commit: string }>;
  /** Stops processes `prepare` started and `write` did not use; nothing is written. */
  cancel(): void;
}

export function snapshotWriter(git: GitRunner, ref: string): SnapshotWriter {
  let text: { resolve: (text: string) => void; reject: (error: Error) => void } | null = null;
  let started: { commit: Promise<string>; moved: Promise<void> } | null = null;
  let used = false;
  const prepare = () => {
    if (started) return started;
    const input = new Promise<string>((resolve, reject) => {
      text = { resolve, reject };
    });
    const commit = git.run(writeCommitObject(input));
    const moved = git.run(updateRefs(commit.then((oid) => refUpdate(ref, oid))));
    // Settled here too, so a cancelled or failed pair never surfaces as an unhandled rejection.
    commit.catch(() => undefined);
    moved.catch(() => undefined);
    started = { commit, moved };
    return started;
  };
  return {
    prepare() {
      prepare();
    },
    async write(opts) {
      const { commit, moved } = prepare();
      used = true;
      const message = `Strata worktree snapshot\n\nref: ${ref}\n`;
      const who = { ...IDENTITY, when: opts.now.getTime() / 1000 };
      try {
        text?.resolve(commitText(opts.tree, opts.head ? [opts.head] : [], message, who));
      } catch (error) {
        text?.reject(error as Error);
      }
      await moved;
      return { name: ref, commit: await commit };
    },
    cancel() {
      if (!used) text?.reject(new Error("snapshot commit not needed"));
    },
  };
}

/** Whether the ref already points at the commit (loose ref read directly; packed via git). */
export async function snapshotRefPointsAt(
  git: GitRunner,
  commonDir: string,
  ref: string,
  commit: string,
): Promise<boolean> {
  const loose = await readFile(join(commonDir, ref), "utf8").catch(() => null);
  if (loose !== null) return loose.trim() === commit;
  return (await git.run(resolveCommit(ref))) === commit;
}
