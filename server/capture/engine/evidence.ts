// Baseline evidence: the deterministic facts that make a checkout a clean copy of its canonical
// branch. The canonical ref is fetched first; then the checkout is only read (its index is never
// refreshed in place). The result is the object `baseline.publish` accepts; the server judges it
// again, so the local verdict returned next to it is a courtesy, not an authority.
import { access, realpath } from "node:fs/promises";
import { join } from "node:path";
import { failedEvidenceChecks, type BaselineEvidence, type EvidenceCheck } from "../../domain/baseline-evidence.ts";
import { StrataError, isStrataError } from "../../domain/errors.ts";
import { branchOfCanonicalRef, canonicalRefSchema } from "../../domain/snapshot-keys.ts";
import {
  configMatching,
  fetchBranch,
  repositoryLayout,
  resolveCommit,
  type RepositoryLayout,
} from "../../git/commands.ts";
import { discoverRepository } from "../../git/discover.ts";
import { createGitRunner, unreadablePath, type GitRunner } from "../../git/runner.ts";
import { statusCommand } from "../../git/status.ts";

export interface EvidenceOptions {
  /** The canonical branch: `main` or `refs/heads/main`. */
  canonicalRef: string;
  /** The remote to fetch; by default the branch's configured remote, else origin, else the only one. */
  remote?: string;
  gitPath?: string;
  baseEnv?: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  fetchTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface CollectedEvidence {
  evidence: BaselineEvidence;
  /** The checks this evidence fails, judged as the server will (empty: it may be published). */
  failed: EvidenceCheck[];
  layout: RepositoryLayout;
  /** The remote fetched, or null when the repository has none. */
  remote: string | null;
}

const NO_COMMIT = "0".repeat(40);
const BATCH_SSH = "ssh -o BatchMode=yes -o ConnectTimeout=15";

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function chooseRemote(git: GitRunner, branch: string, wanted?: string): Promise<string | null> {
  const pairs = await git.run(configMatching("^(remote\\..+\\.url|branch\\..+\\.remote)$"));
  const remotes = pairs.flatMap(([key]) => /^remote\.(.+)\.url$/.exec(key)?.[1] ?? []);
  if (wanted !== undefined) return remotes.includes(wanted) ? wanted : null;
  const configured = pairs.find(([key]) => key === `branch.${branch}.remote`)?.[1];
  if (configured && remotes.includes(configured)) return configured;
  if (remotes.includes("origin")) return "origin";
  return remotes.length === 1 ? (remotes[0] ?? null) : null;
}

/** Fetching never waits for a person: ssh runs in batch mode unless the user chose an ssh command. */
async function fetchEnvironment(
  git: GitRunner,
  baseEnv: Readonly<Record<string, string | undefined>>,
): Promise<Record<string, string>> {
  if (baseEnv.GIT_SSH_COMMAND || baseEnv.GIT_SSH) return {};
  const own = await git.run(configMatching("^core\\.sshcommand$"));
  return own.length > 0 ? {} : { GIT_SSH_COMMAND: BATCH_SSH };
}

export async function collectBaselineEvidence(dir: string, opts: EvidenceOptions): Promise<CollectedEvidence> {
  const canonicalRef = canonicalRefSchema.parse(opts.canonicalRef);
  const branch = branchOfCanonicalRef(canonicalRef);
  const captureRoot = await realpath(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") throw new StrataError("NOT_A_REPOSITORY", `${JSON.stringify(dir)} does not exist.`);
    throw unreadablePath(dir, error.message);
  });
  const runner = createGitRunner({
    cwd: captureRoot,
    gitPath: opts.gitPath,
    baseEnv: opts.baseEnv,
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
  });
  const layout = (await discoverRepository(captureRoot)) ?? (await runner.run(repositoryLayout()));
  const git = runner.at(layout.root);

  const remote = await chooseRemote(git, branch, opts.remote);
  const remoteTrackingRef = `refs/remotes/${remote ?? "origin"}/${branch}`;
  let fetched = false;
  if (remote) {
    try {
      const env = await fetchEnvironment(git, opts.baseEnv ?? process.env);
      await git.run({ ...fetchBranch(remote, branch, opts.fetchTimeoutMs ?? 120_000), env });
      fetched = true;
    } catch (error) {
      // An unreachable remote is evidence too (fetched: false); only cancellation stops here.
      if (isStrataError(error, "ABORTED")) throw error;
    }
  }
  const remoteCommit = (await git.run(resolveCommit(remoteTrackingRef))) ?? NO_COMMIT;

  // The user's own index, read without refreshing it on disk.
  const status = await git.run(statusCommand({ untracked: "all", ignored: false, ignoreSubmodules: "none" }));
  let stagedCount = 0;
  let modifiedCount = 0;
  let untrackedCount = 0;
  for (const entry of status.entries) {
    if (entry.kind === "untracked") untrackedCount++;
    else if (entry.kind === "unmerged") {
      stagedCount++;
      modifiedCount++;
    } else if (entry.kind === "changed") {
      if (entry.x !== ".") stagedCount++;
      if (entry.y !== ".") modifiedCount++;
    }
  }

  const inGitDir = (...names: string[]) =>
    Promise.all(names.map((name) => exists(join(layout.gitDir, name)))).then((found) => found.includes(true));
  const [merge, rebase, cherryPick, bisect] = await Promise.all([
    inGitDir("MERGE_HEAD"),
    inGitDir("rebase-merge", "rebase-apply"),
    // A revert (or a sequence of picks) is a cherry-pick in reverse: the same unfinished state.
    inGitDir("CHERRY_PICK_HEAD", "REVERT_HEAD", "sequencer"),
    inGitDir("BISECT_LOG"),
  ]);

  const evidence: BaselineEvidence = {
    remoteTrackingRef,
    fetched,
    remoteCommit,
    head: status.head ?? NO_COMMIT,
    branch: status.branch,
    stagedCount,
    modifiedCount,
    untrackedCount,
    inProgress: { merge, rebase, cherryPick, bisect },
    repositoryRoot: layout.root,
    captureRoot,
  };
  const failed = failedEvidenceChecks({
    canonicalRef,
    commit: evidence.head,
    manifest: { treeId: NO_COMMIT, head: evidence.head, branch: evidence.branch, blobDigests: [], sizeBytes: 0 },
    evidence,
  });
  return { evidence, failed, layout, remote };
}
