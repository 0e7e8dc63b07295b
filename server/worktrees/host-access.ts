// What a worker may touch on its host, and for which agent (docs/workers.md "Roots and ownership").
//
// Roots: a worker captures from and restores into directories under the roots its host allows
// (`strata worker --root DIR`, STRATA_WORKER_ROOTS) and under its agent roots (`--agent-root DIR`,
// STRATA_WORKER_AGENT_ROOTS); without either, only the data directory's pool and restore folders
// (worktrees/, restored/) and its agents/ folder.
// Paths are resolved (`..`, symbolic links of every part that exists) before any check.
//
// Ownership: within the roots, an agent owns the directories a restore job of its own claimed
// (host_directories, claimed before the restore writes anything) and, under each agent root, the
// folder named after it. A capture reads only a directory the job's agent owns that holds no
// other agent's directory; a restore writes only a path no other agent owns, inside or around.
//
// Every refusal is the same PATH_NOT_ALLOWED, whatever the reason and whether the path exists, so
// an agent learns nothing of another's directories. The checks read the catalog and stat the
// path's ancestors; no git command runs before them. (Agents never write to the host themselves:
// they reach it only through jobs, so a path cannot be swapped between the check and its use
// other than by the host's own users.)
import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { StrataError } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import { poolDirectory } from "./pool-directory.ts";

export interface HostAccessOptions {
  host: string;
  /** Directories any agent's restores may go under (resolved at start; must exist). */
  roots: readonly string[];
  /** Directories under which each agent owns the folder named after it (must exist). */
  agentRoots: readonly string[];
}

/** The agent a job acts for, as the host checks it. */
type HostAgent = Pick<AgentScope, "agentId" | "agentName">;

/** A directory a capture may read, and the owned directory it lies in. */
export interface CaptureAccess {
  path: string;
  /** Git's view of the checkout (its top, its git directories) must stay inside this. */
  ownedBy: string;
}

/**
 * The roots a worker of `dataDir` uses when none are configured: its pool and restore folders,
 * and `agents/`, in which each agent owns the folder named after it.
 */
export function defaultWorkerRoots(dataDir: string): { roots: string[]; agentRoots: string[] } {
  return { roots: [poolDirectory(dataDir), restoredDirectory(dataDir)], agentRoots: [join(dataDir, "agents")] };
}

/** Where restores of this host's own resumes go, and the default root of restore jobs. */
export function restoredDirectory(dataDir: string): string {
  return join(dataDir, "restored");
}

/** Whether `path` is `dir` or lies under it (both absolute and resolved). */
function within(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!isAbsolute(rel) && rel.split(sep)[0] !== "..");
}

/** `path` and every directory above it (absolute, resolved). */
function ancestorsOf(path: string): string[] {
  const all = [path];
  for (let dir = dirname(path); dir !== all[all.length - 1]; dir = dirname(dir)) all.push(dir);
  return all;
}

/** Whether one of the two lies within the other. */
function overlaps(a: string, b: string): boolean {
  return within(a, b) || within(b, a);
}

/**
 * `path` made absolute with `..` applied and every symbolic link of its existing part resolved:
 * the real path of its deepest existing ancestor, and the parts below it as given.
 */
async function resolveHostPath(path: string): Promise<string> {
  let existing = resolve(path);
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await realpath(existing);
      return rest.length === 0 ? real : join(real, ...rest.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw refusal("path");
      const parent = dirname(existing);
      if (parent === existing) throw refusal("path");
      rest.push(basename(existing));
      existing = parent;
    }
  }
}

/** The one answer for every path a job may not use: the same whatever the reason. */
function refusal(field: string): StrataError {
  return new StrataError(
    "PATH_NOT_ALLOWED",
    `The job's ${field} is not a directory this worker may use for this agent.`,
    {
      hint:
        "A worker captures only checkouts its restore jobs made for this agent, or under the agent's own folder " +
        "of an agent root, and restores only into new paths under its roots (docs/workers.md).",
      retryable: false,
      data: { field },
    },
  );
}

/**
 * The roots of a worker, resolved once at its start. Configured roots must exist (a typo would
 * otherwise refuse every job); the default ones are created.
 */
export class HostAccess {
  private constructor(
    readonly host: string,
    readonly roots: readonly string[],
    readonly agentRoots: readonly string[],
  ) {}

  /** Resolves the configured roots; with none configured, the data directory's default ones (created). */
  static open(opts: HostAccessOptions & { dataDir: string }): HostAccess {
    const configured = opts.roots.length > 0 || opts.agentRoots.length > 0;
    const { roots, agentRoots } = configured ? opts : defaultWorkerRoots(opts.dataDir);
    const real = (dir: string, flag: string) => {
      if (!configured) mkdirSync(dir, { recursive: true });
      if (!existsSync(dir)) {
        throw new StrataError("INVALID_INPUT", `${flag} ${dir} does not exist.`, {
          hint: "Create the directory first, or leave it out.",
        });
      }
      return realpathSync(dir);
    };
    return new HostAccess(
      opts.host,
      roots.map((r) => real(r, "--root")),
      agentRoots.map((r) => real(r, "--agent-root")),
    );
  }

  /** Every root, for logs and `host.list`. */
  describe(): { roots: string[]; agentRoots: string[] } {
    return { roots: [...this.roots], agentRoots: [...this.agentRoots] };
  }

  /**
   * The claimed directories of this host that are `path`, hold it or lie inside it: the only
   * ones a decision about `path` needs, read by the (host, path) index however many there are.
   */
  private async overlapping(db: Db, path: string): Promise<{ path: string; agentId: string }[]> {
    const rows = await db.hostDirectory.findMany({
      where: { host: this.host, OR: [{ path: { in: ancestorsOf(path) } }, { path: { startsWith: path + sep } }] },
      select: { path: true, agentId: true },
    });
    // LIKE's wildcards in a path only widen the read; the overlap itself is decided here.
    return rows.filter((d) => overlaps(d.path, path));
  }

  /** The agent's own folders under the agent roots. */
  private agentFolders(agent: HostAgent): string[] {
    return this.agentRoots.map((root) => join(root, agent.agentName));
  }

  private underSomeRoot(path: string): boolean {
    return [...this.roots, ...this.agentRoots].some((root) => within(root, path));
  }

  /**
   * The checkout a capture job may read for `agent`: `dir` resolved, if the agent owns it and it
   * holds no other agent's directory; PATH_NOT_ALLOWED otherwise.
   */
  async forCapture(db: Db, agent: HostAgent, dir: string): Promise<CaptureAccess> {
    const path = await resolveHostPath(dir).catch(() => {
      throw refusal("dir");
    });
    if (!this.underSomeRoot(path)) throw refusal("dir");
    const owned = await this.overlapping(db, path);
    const mine = owned.filter((d) => d.agentId === agent.agentId).map((d) => d.path);
    const ownedBy = [...mine, ...this.agentFolders(agent)].find((d) => within(d, path));
    if (!ownedBy) throw refusal("dir");
    // Another agent's directory inside it (claimed into a folder this agent owns) is not read.
    if (owned.some((d) => d.agentId !== agent.agentId && within(path, d.path))) throw refusal("dir");
    return { path, ownedBy };
  }

  /**
   * After git named the checkout of an allowed `dir`: its top and git directories must lie in the
   * same owned directory (a `.git` file or a parent repository could otherwise lead git to
   * another agent's files). PATH_NOT_ALLOWED otherwise.
   */
  confirmCheckout(access: CaptureAccess, layout: { root: string; gitDir: string; commonDir: string }): void {
    const real = (p: string) => {
      try {
        return realpathSync(p);
      } catch {
        return p;
      }
    };
    if (![layout.root, layout.gitDir, layout.commonDir].every((p) => within(access.ownedBy, real(p)))) {
      throw refusal("dir");
    }
  }

  /**
   * Claims the restore target `into` for `agent` before anything is written: the resolved path,
   * recorded as the agent's. Refused when it is outside the roots, is or holds or lies inside
   * another agent's directory, or lies under an agent root outside the agent's own folder. A path
   * the agent claimed before (a retried job, a restore over its own empty directory) is its own.
   */
  async claimForRestore(db: Db, agent: HostAgent, into: string, jobId: string): Promise<string> {
    const path = await resolveHostPath(into).catch(() => {
      throw refusal("workspace");
    });
    if (!this.underSomeRoot(path)) throw refusal("workspace");
    // A root itself is never a restore target: it holds everyone's directories.
    if ([...this.roots, ...this.agentRoots].includes(path)) throw refusal("workspace");
    const underAgentRoot = this.agentRoots.filter((root) => within(root, path));
    if (underAgentRoot.length > 0 && !this.agentFolders(agent).some((own) => within(own, path) && own !== path)) {
      throw refusal("workspace");
    }
    // One serializable transaction: of two agents claiming overlapping paths at once, the one
    // that commits second is retried, sees the other's claim and is refused.
    await inTransaction(
      db,
      async (tx) => {
        const claimed = await this.overlapping(tx, path);
        if (claimed.some((d) => d.agentId !== agent.agentId && overlaps(d.path, path))) throw refusal("workspace");
        if (claimed.some((d) => d.path === path)) return;
        await tx.hostDirectory.create({ data: { host: this.host, path, agentId: agent.agentId, jobId } });
      },
      { isolationLevel: "Serializable" },
    ).catch((error: unknown) => {
      if (isUniqueViolation(error)) throw refusal("workspace");
      throw error;
    });
    return path;
  }
}
