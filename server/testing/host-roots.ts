// Test support: the directories a test's worker may use (server/worktrees/host-access.ts). Restores
// go under `root`; the checkouts an agent's capture jobs read live in its folder of `agentRoot`.
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync } from "node:fs";
import { basename, delimiter, join } from "node:path";
import { temporaryDirectory } from "./repos.ts";

export interface TestHostRoots {
  /** Restore jobs of any agent may create new directories under it. */
  root: string;
  /** Each agent owns `agentRoot/<agent name>`. */
  agentRoot: string;
  /** The environment that gives a `strata worker` these roots. */
  env: Record<string, string>;
  /** The options that give an in-process worker (startWorkerProcess) these roots. */
  options: { roots: string[]; agentRoots: string[] };
  /** Moves the checkout `dir` into the agent's folder (made if needed); its new path. */
  give(agentName: string, dir: string): string;
  /** The agent's folder (made if needed). */
  folderOf(agentName: string): string;
}

export function testHostRoots(): TestHostRoots {
  const root = realpathSync(temporaryDirectory("strata-root-"));
  const agentRoot = realpathSync(temporaryDirectory("strata-agents-"));
  const folderOf = (agentName: string) => {
    const folder = join(agentRoot, agentName);
    mkdirSync(folder, { recursive: true });
    return folder;
  };
  return {
    root,
    agentRoot,
    env: { STRATA_WORKER_ROOTS: [root].join(delimiter), STRATA_WORKER_AGENT_ROOTS: agentRoot },
    options: { roots: [root], agentRoots: [agentRoot] },
    folderOf,
    give(agentName, dir) {
      const target = join(folderOf(agentName), basename(dir));
      renameSync(dir, target);
      return target;
    },
  };
}

/**
 * Every entry under `dir` (symbolic links not followed): its kind, mode, size, modification time
 * and, for files, a digest of its bytes. Equal fingerprints mean nothing there was written.
 */
export function treeFingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (path: string, rel: string) => {
    const st = lstatSync(path);
    const kind = st.isSymbolicLink() ? `link:${readlinkSync(path)}` : st.isDirectory() ? "dir" : "file";
    const digest = st.isFile() ? createHash("sha256").update(readFileSync(path)).digest("hex") : "";
    out[rel || "."] = `${kind} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${digest}`;
    if (st.isDirectory())
      for (const name of readdirSync(path).sort()) walk(join(path, name), rel ? `${rel}/${name}` : name);
  };
  walk(dir, "");
  return out;
}
