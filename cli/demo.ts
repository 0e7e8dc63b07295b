// `strata demo`: a realistic catalog history made by really running capture and restore on
// generated repositories — several agents, superseded baselines, checkpoint chains, a degraded
// restore, retired snapshots and active pins — so every dashboard page has something to show.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Db } from "../server/db/client.ts";
import { StrataError } from "../server/domain/errors.ts";
import { trustAgent, type AgentScope } from "../server/domain/scope.ts";
import { createAgent } from "../server/auth/agents.ts";
import { createUser, listUsers } from "../server/auth/dashboard-auth.ts";
import { captureAndPublish, localCatalog } from "../server/capture/capture-publish.ts";
import { collectGarbage } from "../server/gc/collect-garbage.ts";
import { retireLineage } from "../server/lineage/lineages.ts";
import { acquireAndRestore, localRestorePort } from "../server/restore/restore-snapshot.ts";
import { releaseRetiredHeads, retireSnapshot } from "../server/lineage/retirement.ts";
import { acquireWorkspace } from "../server/acquire/acquire-workspace.ts";

const BACKEND = "local";
const IMAGE = "node:20-bookworm";
const AUTHOR = ["-c", "user.name=Demo Upstream", "-c", "user.email=upstream@strata.demo"];

function git(cwd: string, args: string[]): string {
  return execFileSync("git", [...AUTHOR, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function write(root: string, file: string, content: string): void {
  const full = path.join(root, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, content);
}

interface DemoRepo {
  name: string;
  identity: string;
  origin: string;
  upstream: string;
}

/** A bare "origin" and a working clone that plays the upstream team pushing to it. */
function makeRepository(work: string, name: string, files: number): DemoRepo {
  const origin = path.join(work, "origins", `${name}.git`);
  const upstream = path.join(work, "upstream", name);
  mkdirSync(origin, { recursive: true });
  git(origin, ["init", "--bare", "--quiet", "--initial-branch=main"]);
  mkdirSync(upstream, { recursive: true });
  git(upstream, ["init", "--quiet", "--initial-branch=main"]);
  write(upstream, "README.md", `# ${name}\n\nA generated repository for the Strata demo.\n`);
  write(upstream, ".gitignore", "node_modules/\ndist/\n*.log\n");
  write(upstream, "package-lock.json", JSON.stringify({ name, lockfileVersion: 3, packages: {} }, null, 2));
  write(upstream, ".nvmrc", "20\n");
  for (let i = 0; i < files; i++) {
    write(
      upstream,
      `src/module-${i}.ts`,
      `export const value${i} = ${i};\nexport function f${i}() { return value${i} * 2; }\n`,
    );
  }
  git(upstream, ["add", "-A"]);
  git(upstream, ["commit", "--quiet", "-m", "Initial import"]);
  git(upstream, ["remote", "add", "origin", origin]);
  git(upstream, ["push", "--quiet", "origin", "main"]);
  return { name, identity: `demo.strata.local/acme/${name}`, origin, upstream };
}

function pushUpstream(repo: DemoRepo, message: string): void {
  write(repo.upstream, "CHANGELOG.md", `${message}\n`);
  git(repo.upstream, ["add", "-A"]);
  git(repo.upstream, ["commit", "--quiet", "-m", message]);
  git(repo.upstream, ["push", "--quiet", "origin", "main"]);
}

export interface DemoOptions {
  db: Db;
  /** A directory the demo may own (its repositories and restored worktrees live there). */
  workDir: string;
  host: string;
  log?: (line: string) => void;
}

export interface DemoSummary {
  agents: string[];
  repositories: string[];
  snapshots: number;
  restores: number;
  activePins: number;
  user: { email: string; password: string } | null;
  workDir: string;
}

/** Fills an empty catalog with a demo history. Refuses a catalog that already has snapshots. */
export async function runDemo(opts: DemoOptions): Promise<DemoSummary> {
  const { db, workDir, host } = opts;
  const log = opts.log ?? (() => undefined);
  if ((await db.snapshot.count()) > 0) {
    throw new StrataError("CONFLICT", "The catalog already holds snapshots; the demo only fills an empty one.", {
      hint: "Point STRATA_DATA_DIR (or DATABASE_URL) at a new catalog to try the demo.",
    });
  }
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const stateDir = path.join(workDir, "restore-state");

  const agents: Record<string, AgentScope> = {};
  for (const name of ["claude-ci", "codex-review"]) {
    const existing = await db.agent.findUnique({ where: { name } });
    const id = existing?.id ?? (await createAgent(db, { name })).agentId;
    agents[name] = trustAgent(id, name);
  }
  const claude = agents["claude-ci"]!;
  const codex = agents["codex-review"]!;

  log("Generating repositories…");
  const web = makeRepository(workDir, "web-app", 40);
  const billing = makeRepository(workDir, "billing-service", 25);

  // Baselines: a clean, freshly fetched checkout of main, published, then superseded twice as
  // upstream moves on.
  async function publishBaselines(agent: AgentScope, repo: DemoRepo, versions: number): Promise<string[]> {
    const checkout = path.join(workDir, "baselines", `${agent.agentName}-${repo.name}`);
    git(workDir, ["clone", "--quiet", repo.origin, checkout]);
    const ids: string[] = [];
    for (let v = 0; v < versions; v++) {
      if (v > 0) {
        pushUpstream(repo, `Release ${repo.name} 1.${v}`);
        git(checkout, ["pull", "--quiet", "--ff-only"]);
      }
      const result = await captureAndPublish(localCatalog(db, agent), {
        dir: checkout,
        target: {
          kind: "baseline",
          key: {
            repository: { identity: repo.identity },
            backendKind: BACKEND,
            baseImage: IMAGE,
            canonicalRef: "main",
          },
        },
        source: { workspace: checkout, host },
      });
      ids.push(result.snapshotId);
    }
    return ids;
  }
  log("Publishing baselines (capture of clean checkouts)…");
  const webBaselines = await publishBaselines(claude, web, 3);
  await publishBaselines(codex, billing, 2);

  // Work: acquire a workspace (restored from the baseline), change it, checkpoint it.
  async function startTask(agent: AgentScope, repo: DemoRepo, workContextId: string) {
    const into = path.join(workDir, "workspaces", `${agent.agentName}-${workContextId}`);
    const restored = await acquireAndRestore(localRestorePort(db, agent), {
      acquire: {
        repository: { identity: repo.identity },
        backendKind: BACKEND,
        baseImage: IMAGE,
        canonicalRef: "main",
        workContextId,
      },
      into,
      host,
      stateDir,
    });
    if (!restored.path) throw new Error(`the demo workspace ${workContextId} was not restored`);
    git(restored.path, ["checkout", "--quiet", "-b", `task/${workContextId}`]);
    return restored.path;
  }
  async function checkpoint(agent: AgentScope, repo: DemoRepo, workContextId: string, dir: string) {
    return captureAndPublish(localCatalog(db, agent), {
      dir,
      target: {
        kind: "checkpoint",
        key: { repository: { identity: repo.identity }, backendKind: BACKEND, baseImage: IMAGE, workContextId },
      },
      source: { workspace: dir, host },
    });
  }

  log("Running agent tasks (restore, edit, checkpoint)…");
  const tasks: { agent: AgentScope; repo: DemoRepo; id: string; steps: number }[] = [
    { agent: claude, repo: web, id: "fix-login-redirect", steps: 3 },
    { agent: claude, repo: web, id: "add-dark-mode", steps: 2 },
    { agent: codex, repo: billing, id: "invoice-rounding", steps: 2 },
  ];
  const lineageOf: Record<string, string> = {};
  for (const task of tasks) {
    const dir = await startTask(task.agent, task.repo, task.id);
    for (let step = 1; step <= task.steps; step++) {
      write(dir, `src/${task.id}.ts`, `// ${task.id}, step ${step}\nexport const step = ${step};\n`);
      write(dir, "src/module-1.ts", `export const value1 = ${100 + step};\n`);
      if (step === 2) {
        git(dir, ["add", "-A"]);
        git(dir, ["commit", "--quiet", "-m", `${task.id}: work in progress`]);
      }
      write(dir, `notes/${task.id}.md`, `Untracked notes, step ${step}\n`);
      await checkpoint(task.agent, task.repo, task.id, dir);
    }
    const lineage = await db.lineage.findFirst({ where: { workContextId: task.id }, select: { id: true } });
    if (lineage) lineageOf[task.id] = lineage.id;
  }

  // A degraded restore: an unpushed commit touches a secret, so the snapshot carries no bundle
  // of unpushed commits; resuming on a "second machine" can only reach the pushed base.
  log("Resuming a task on a second machine (a degraded restore)…");
  const secretTask = "rotate-api-keys";
  const secretDir = await startTask(claude, web, secretTask);
  write(secretDir, "src/keys.ts", "export const rotated = false;\n");
  await checkpoint(claude, web, secretTask, secretDir);
  write(secretDir, ".env.local", "API_KEY=demo-value-not-a-real-secret\n");
  write(secretDir, "src/keys.ts", "export const rotated = true;\n");
  git(secretDir, ["add", "-A", "-f"]);
  git(secretDir, ["commit", "--quiet", "-m", "Rotate keys (commits .env.local by mistake)"]);
  write(secretDir, "src/keys.ts", "export const rotated = true; // and tested\n");
  await checkpoint(claude, web, secretTask, secretDir);
  await acquireAndRestore(localRestorePort(db, claude), {
    acquire: {
      repository: { identity: web.identity },
      backendKind: BACKEND,
      baseImage: IMAGE,
      canonicalRef: "main",
      workContextId: secretTask,
    },
    into: path.join(workDir, "second-machine", secretTask),
    host: `${host}-2`,
    stateDir: path.join(workDir, "restore-state-2"),
  });

  // A restore in flight: acquired, not reported yet, so its pin is active.
  await acquireWorkspace(db, {
    agent: codex,
    repository: { identity: billing.identity },
    backendKind: BACKEND,
    baseImage: IMAGE,
    canonicalRef: "main",
    workspace: path.join(workDir, "workspaces", "codex-review-pending"),
    host,
  });

  log("Retiring finished work and collecting…");
  const finished = lineageOf["invoice-rounding"];
  if (finished)
    await retireLineage(db, { actor: { kind: "agent", agent: codex }, lineageId: finished, reason: "completed" });
  const oldest = webBaselines[0];
  if (oldest) {
    await retireSnapshot(db, {
      snapshotId: oldest,
      actor: { type: "system", id: "strata-demo" },
      reason: "demo: an operator retired the oldest baseline",
    });
  }
  await releaseRetiredHeads(db, {});
  await collectGarbage(db, { host, force: true });

  let user: DemoSummary["user"] = null;
  if ((await listUsers(db)).length === 0) {
    const created = await createUser(db, { email: "admin@strata.demo", role: "admin", name: "Demo admin" });
    user = { email: created.email, password: created.password };
  }
  return {
    agents: Object.keys(agents),
    repositories: [web.identity, billing.identity],
    snapshots: await db.snapshot.count(),
    restores: await db.restore.count(),
    activePins: await db.pin.count({ where: { released: false } }),
    user,
    workDir,
  };
}

export function demoDirectory(dataDir: string): string {
  return path.join(dataDir, "demo");
}
