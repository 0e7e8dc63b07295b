// What a publisher needs to know about a checkout before capturing it: where its repository
// is, which remotes it has (credential-free), and the branch its preferred remote calls HEAD.
import { realpath } from "node:fs/promises";
import { StrataError, isStrataError } from "../domain/errors.ts";
import { configMatching, repositoryLayout, symbolicRefTarget, type RepositoryLayout } from "./commands.ts";
import { discoverRepository } from "./discover.ts";
import { recordedRemotes, repositoryIdentity, type RecordedRemote } from "./remotes.ts";
import { createGitRunner, unreadablePath, type GitRunnerOptions } from "./runner.ts";

export interface CheckoutInfo {
  layout: RepositoryLayout;
  remotes: RecordedRemote[];
  /** host/path of the preferred remote (origin first); null without remotes. */
  identity: string | null;
  /** The branch `refs/remotes/<preferred remote>/HEAD` names, when it is set. */
  remoteDefaultBranch: string | null;
  /** The snapshot a Strata restore wrote this checkout from, and how far it got (restore.ts). */
  restoredFrom: { snapshotId: string; stage: string } | null;
}

export async function describeCheckout(dir: string, opts: Omit<GitRunnerOptions, "cwd"> = {}): Promise<CheckoutInfo> {
  const start = await realpath(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT" || error.code === "ENOTDIR") {
      throw new StrataError("NOT_A_REPOSITORY", `${JSON.stringify(dir)} does not exist.`);
    }
    throw unreadablePath(dir, error.code === "ELOOP" ? "a symbolic link loops" : error.message);
  });
  const runner = createGitRunner({ ...opts, cwd: start });
  const layout = (await discoverRepository(start)) ?? (await runner.run(repositoryLayout()));
  const git = runner.at(layout.root);
  // One git process reads both the remotes and what a Strata restore recorded (keys come back
  // in lower case, but a remote's name keeps its own).
  const config = await git.run(configMatching("^(remote\\..+\\.url|strata\\.restore(dfrom|stage))$"));
  const remotes = recordedRemotes(config);
  const preferred = remotes.find((r) => r.name === "origin") ?? remotes[0];
  let remoteDefaultBranch: string | null = null;
  if (preferred) {
    const prefix = `refs/remotes/${preferred.name}/`;
    // A remote name git would not take as a ref (refused by the argument guard) has no HEAD.
    const target = await git.run(symbolicRefTarget(`${prefix}HEAD`)).catch((error: unknown) => {
      if (isStrataError(error, "INVALID_INPUT")) return null;
      throw error;
    });
    if (target?.startsWith(prefix)) remoteDefaultBranch = target.slice(prefix.length);
  }
  const strata = new Map(config);
  const snapshotId = strata.get("strata.restoredfrom");
  const restoredFrom = snapshotId ? { snapshotId, stage: strata.get("strata.restorestage") ?? "exact" } : null;
  return { layout, remotes, identity: repositoryIdentity(remotes), remoteDefaultBranch, restoredFrom };
}
