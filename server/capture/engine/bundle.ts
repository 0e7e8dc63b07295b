// The bundle of unpushed commits: HEAD's history that no remote-tracking ref has, so local
// commits travel with the snapshot. The deny-list guarantee is enforced here: when an unpushed
// commit adds or changes a denied path, no bundle is made and `omitted` names the commits and
// paths (the secret is in history only this machine has; pushing it is the user's decision).
import { createHash, randomUUID } from "node:crypto";
import type { BundleRecord, CaptureManifest, OmittedEntry } from "../../domain/capture-manifest.ts";
import { pathsTouchedBy, unpushedBundle, unpushedCommits } from "../../git/commands.ts";
import { deniedPathRule } from "../../domain/deny-list.ts";
import { isOutputLimit, type GitRunner } from "../../git/runner.ts";

export interface BundleOutcome {
  bundle: BundleRecord | null;
  /** The bundle's bytes when they are new (a reused bundle is already stored). */
  bytes: Buffer | null;
  omitted: OmittedEntry[];
}

const NONE: BundleOutcome = { bundle: null, bytes: null, omitted: [] };

/** Denied paths the given commits add or change, each with the commits that touch it. */
function deniedInCommits(touched: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const denied = new Map<string, string[]>();
  for (const [commit, paths] of touched) {
    for (const path of paths) {
      if (!deniedPathRule(path)) continue;
      const commits = denied.get(path) ?? [];
      commits.push(commit);
      denied.set(path, commits);
    }
  }
  return denied;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export interface UnpushedHistory {
  commits: string[];
  /** Denied paths the commits add or change, with the commits touching each. */
  denied: Map<string, string[]>;
}

/** The unpushed commits of HEAD and what they touch on the deny-list. */
export async function findUnpushed(git: GitRunner, head: string | null): Promise<UnpushedHistory> {
  if (!head) return { commits: [], denied: new Map() };
  const commits = await git.run(unpushedCommits());
  if (commits.length === 0) return { commits, denied: new Map() };
  return { commits, denied: deniedInCommits(await git.run(pathsTouchedBy(commits))) };
}

export async function bundleUnpushed(
  git: GitRunner,
  opts: { unpushed: UnpushedHistory; previous: CaptureManifest | null; maxBytes: number },
): Promise<BundleOutcome> {
  const { commits, denied } = opts.unpushed;
  if (commits.length === 0) return NONE;
  if (denied.size > 0) {
    const omitted = [...denied]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([path, touching]): OmittedEntry => ({
        path,
        reason: "unpushed-denied",
        detail: `matches ${deniedPathRule(path)}; the bundle of unpushed commits is left out until they are pushed`,
        commits: touching,
      }));
    return { bundle: null, bytes: null, omitted };
  }

  const previous = opts.previous?.bundle;
  if (previous && sameList(previous.commits, commits)) return { bundle: previous, bytes: null, omitted: [] };

  let bytes: Buffer;
  try {
    bytes = await git.run(unpushedBundle(opts.maxBytes));
  } catch (error) {
    if (!isOutputLimit(error)) throw error;
    return {
      bundle: null,
      bytes: null,
      omitted: [
        {
          path: "HEAD",
          reason: "bundle-too-large",
          detail: `more than ${opts.maxBytes} bytes of unpushed history`,
          commits,
        },
      ],
    };
  }
  const digest = createHash("sha256").update(bytes).digest("hex");
  return { bundle: { uuid: randomUUID(), digest, size: bytes.length, commits }, bytes, omitted: [] };
}
