// Which pool a checkout's restored worktrees belong to: the repository its remotes name, as the
// credential-free identity Strata keys snapshots by (server/git/remotes.ts). Only checkouts of
// one repository share worktrees. A relative remote (../upstream) names the repository at the
// absolute path it resolves to from the checkout, so two checkouts that reach one upstream by
// different relative paths share a pool, and two that use the same relative path for different
// upstreams do not. A checkout with no remote is never pooled: nothing recorded tells its
// repository apart from another remote-less one, and a pooled worktree keeps ignored files
// (secrets, dependencies) that must never reach another project.
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { repositoryDisplayName } from "../domain/snapshot-keys.ts";
import { describeCheckout } from "../git/checkout-info.ts";
import { repositoryIdentity, type RecordedRemote } from "../git/remotes.ts";

export const poolRepositorySchema = z.strictObject({
  /** The credential-free identity of the repository (github.com/acme/app, /srv/git/app). */
  identity: z.string().min(1).max(4096),
  /** What its worktrees are named after: `<name>-<n>`. */
  name: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/),
});
export type PoolRepository = z.infer<typeof poolRepositorySchema>;

/** Whether a checkout's worktrees can be pooled, and under which repository; or why not. */
export type PoolKey =
  { pooled: true; repository: PoolRepository } | { pooled: false; reason: "no-remote"; message: string };

// A URL with a scheme, or git's scp-like host:path; anything else is a local path.
const SCHEME_OR_SCP = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/|^(?:[^@/:]+@)?[^@/:]+:/;

/** A remote's URL with a relative local path made absolute against the checkout's root. */
function absoluteRemoteUrl(url: string, root: string): string {
  if (SCHEME_OR_SCP.test(url)) return url;
  return isAbsolute(url) ? resolve(url) : resolve(root, url);
}

/** A file-name-safe name for a repository's worktrees (its last path segment). */
function worktreeBaseName(identity: string): string {
  const name = repositoryDisplayName({ identity })
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[.-]+/, "")
    .slice(0, 64)
    .replace(/[.-]+$/, "");
  return name || "repository";
}

/** The pool of a checkout whose remotes (credential-free, as recorded) and root are these. */
export function poolKeyOf(remotes: readonly RecordedRemote[], root: string): PoolKey {
  const identity = repositoryIdentity(remotes.map((r) => ({ name: r.name, url: absoluteRemoteUrl(r.url, root) })));
  if (identity === null || identity === "") {
    return {
      pooled: false,
      reason: "no-remote",
      message:
        `${root} has no remote, so nothing tells its repository apart from another remote-less one: ` +
        "its restores go into a new worktree each time. Add a remote to pool its worktrees.",
    };
  }
  return { pooled: true, repository: { identity, name: worktreeBaseName(identity) } };
}

/** The pool of the checkout at `dir`, from its configured remotes. */
export async function poolKeyOfCheckout(dir: string): Promise<PoolKey> {
  const checkout = await describeCheckout(dir);
  return poolKeyOf(checkout.remotes, checkout.layout.root);
}
