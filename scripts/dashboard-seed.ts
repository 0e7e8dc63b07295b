// Catalog histories for the dashboard, written through the services (never raw SQL): a small,
// realistic one for the browser tests and screenshots, and a 5,000-snapshot repository for
// `npm run bench:ui`. Nothing here runs git: the content is made-up bytes in the layer form.
//
//   tsx scripts/dashboard-seed.ts example      # into the catalog of STRATA_DATA_DIR / DATABASE_URL
//   tsx scripts/dashboard-seed.ts large 5000
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { loadConfig } from "../server/config/config.ts";
import { openCatalog, type Db } from "../server/db/client.ts";
import { canonicalManifestBytes, type CaptureManifest } from "../server/domain/capture-manifest.ts";
import type { LayerDescriptor } from "../server/domain/content.ts";
import type { Manifest } from "../server/domain/manifest.ts";
import { trustAgent, trustUser, type AgentScope, type UserRole } from "../server/domain/scope.ts";
import { createAgent } from "../server/auth/agents.ts";
import { listUsers } from "../server/auth/dashboard-auth.ts";
import { publishBaseline } from "../server/lineage/baselines.ts";
import { appendCheckpoint } from "../server/lineage/checkpoints.ts";
import { collectGarbage } from "../server/gc/collect-garbage.ts";
import { retireLineage } from "../server/lineage/lineages.ts";
import { publishSnapshot } from "../server/content/layers.ts";
import { pinSnapshot } from "../server/content/pins.ts";
import { releaseRetiredHeads, retireSnapshot } from "../server/lineage/retirement.ts";
import { acquireWorkspace } from "../server/acquire/acquire-workspace.ts";
import { holdWorkspace } from "../server/lineage/hold-workspace.ts";
import { reportRestore } from "../server/restore/report-restore.ts";
import { seedDiffHistory } from "./diff-seed.ts";
// Seed data is made the way the tests make theirs.
import { sha256, storeBytes as store } from "../server/testing/content.ts";
import { cleanEvidence, oid } from "../server/testing/lineage.ts";

const DAY = 24 * 60 * 60 * 1000;
const BACKEND = "modal";
const IMAGE = "sha256:" + "5e".repeat(32);
const CHECKOUT = "/srv/checkouts/app";

function shortManifest(label: string, branch: string, sizeBytes = 4096): Manifest {
  return { treeId: oid(`tree:${label}`), head: oid(`head:${label}`), branch, blobDigests: [], sizeBytes };
}

interface Ctx {
  db: Db;
  now: number;
}

interface Agent {
  scope: AgentScope;
  name: string;
}

async function agent(db: Db, name: string): Promise<Agent> {
  const issued = await createAgent(db, { name });
  return { scope: trustAgent(issued.agentId, issued.agentName), name };
}

/**
 * The story's "days" are squeezed to 30% (three weeks into about six days), inside the
 * sweeper's 7-day retention and 14-day staleness windows: a worker sweeping at start-up
 * changes nothing, so the pages show the history as written.
 */
const TIME_SCALE = 0.3;

function at(ctx: Ctx, daysAgo: number): Date {
  return new Date(ctx.now - daysAgo * DAY * TIME_SCALE);
}

async function baseline(ctx: Ctx, who: Agent, repo: string, label: string, observed: string | null, daysAgo: number) {
  const commit = oid(`${repo}:${label}`);
  const published = await publishBaseline(ctx.db, {
    agent: who.scope,
    key: { repository: { identity: repo }, backendKind: BACKEND, baseImage: IMAGE, canonicalRef: "main" },
    commit,
    manifest: { ...shortManifest(`${repo}:${label}`, "main", 0), head: commit },
    evidence: cleanEvidence(commit, { repositoryRoot: CHECKOUT, captureRoot: CHECKOUT }),
    observedHeadId: observed,
    source: { workspace: "/srv/checkouts/app", host: "refresher-1" },
    now: at(ctx, daysAgo),
  });
  return published.snapshot.id;
}

/** One work context: acquire (seeded from the current baseline), then a chain of checkpoints with content. */
class WorkContext {
  head: string | null = null;
  ids: string[] = [];
  lineageId = "";
  restoreIds: string[] = [];
  private patches: LayerDescriptor[] = [];
  constructor(
    private readonly ctx: Ctx,
    readonly who: Agent,
    readonly repo: string,
    readonly id: string,
    readonly branch: string,
    readonly workspace: string,
    private readonly withContent: boolean,
  ) {}

  acquire(daysAgo: number) {
    return acquireWorkspace(this.ctx.db, {
      agent: this.who.scope,
      repository: { identity: this.repo },
      backendKind: BACKEND,
      baseImage: IMAGE,
      canonicalRef: "main",
      workContextId: this.id,
      workspace: this.workspace,
      host: "worker-3",
      now: at(this.ctx, daysAgo),
    });
  }

  async start(daysAgo: number) {
    const plan = await this.acquire(daysAgo);
    this.lineageId = plan.lineage.id;
    this.restoreIds.push(plan.restoreId);
    await reportRestore(this.ctx.db, {
      agent: this.who.scope,
      restoreId: plan.restoreId,
      outcome: "restored",
      now: at(this.ctx, daysAgo),
    });
    return plan;
  }

  async checkpoint(daysAgo: number) {
    const n = this.ids.length + 1;
    const manifest = shortManifest(`${this.id}:${n}`, this.branch, 2048 + n * 512);
    const appended = await appendCheckpoint(this.ctx.db, {
      agent: this.who.scope,
      key: { repository: { identity: this.repo }, backendKind: BACKEND, baseImage: IMAGE, workContextId: this.id },
      observedHeadId: this.head,
      manifest,
      source: { workspace: this.workspace, host: "worker-3" },
      now: at(this.ctx, daysAgo),
    });
    this.head = appended.snapshot.id;
    this.lineageId = appended.lineageId;
    this.ids.push(this.head);
    if (this.withContent) await this.publishContent(manifest, n);
    return this.head;
  }

  /** The checkpoint's patch (chained on the previous one) and its full capture record. */
  private async publishContent(manifest: Manifest, n: number) {
    const db = this.ctx.db;
    const bytes = Buffer.from(`diff --git a/src/feature-${n}.ts b/src/feature-${n}.ts\n+// ${this.id} step ${n}\n`);
    const patch = {
      uuid: randomUUID(),
      parentUuid: this.patches.at(-1)?.uuid ?? null,
      kind: "patch",
      ...(await store(db, bytes, this.who.scope)),
    };
    this.patches.push(patch);
    const record: CaptureManifest = {
      version: 1,
      root: this.workspace,
      objectFormat: "sha1",
      remotes: [{ name: "origin", url: `https://${this.repo}.git` }],
      branch: this.branch,
      head: manifest.head,
      tree: manifest.treeId,
      patches: this.patches.map((p, i) => ({
        uuid: p.uuid,
        parent: p.parentUuid,
        digest: p.digest,
        size: p.sizeBytes,
        kind: i === 0 ? "full" : "incremental",
        base: i === 0 ? manifest.head : oid(`tree:${this.id}:${i}`),
        tree: oid(`tree:${this.id}:${i + 1}`),
      })),
      bundle:
        n % 3 === 0
          ? {
              uuid: randomUUID(),
              digest: sha256(`bundle ${this.id} ${n}`),
              size: 18_432,
              commits: [oid(`unpushed:${this.id}:${n}`)],
            }
          : null,
      omitted: [
        { path: ".env", reason: "denied" },
        { path: "node_modules/", reason: "ignored" },
        { path: "fixtures/huge.bin", reason: "too-large", detail: "48 MiB > 16 MiB" },
      ],
      filters: { autocrlf: null, eol: null, drivers: [{ name: "lfs", configured: true, required: true }] },
      envHash: sha256(`env ${this.id}`),
      envFiles: ["package-lock.json", ".nvmrc"],
      snapshotRef: null,
      degradedFrom: null,
      capturedAt: new Date(this.ctx.now).toISOString(),
    };
    const manifestLayer = {
      uuid: randomUUID(),
      parentUuid: null,
      kind: "manifest",
      ...(await store(db, canonicalManifestBytes(record), this.who.scope)),
    };
    await publishSnapshot(db, {
      snapshotId: this.head!,
      layers: [...this.patches.slice(-2), manifestLayer],
      heads: [patch.uuid, manifestLayer.uuid],
    });
  }
}

async function usersByRole(db: Db) {
  const users = await listUsers(db);
  const byRole = (role: UserRole) => {
    const u = users.find((x) => x.role === role);
    return u ? trustUser(u.id, u.email, role) : null;
  };
  return { operator: byRole("operator"), support: byRole("support"), admin: byRole("admin") };
}

/**
 * A few weeks of two repositories: baselines superseded, work contexts with checkpoint chains
 * (one long enough to fold), a ladder that fell back to a baseline, two degraded restores,
 * lineages retired by an agent and by an operator, a support pin keeping a retired snapshot,
 * and one collection run.
 */
export async function seedExampleHistory(db: Db, opts: { now?: Date } = {}) {
  const ctx: Ctx = { db, now: (opts.now ?? new Date()).getTime() };
  const people = await usersByRole(db);
  const runner = await agent(db, "claude-runner-1");
  const batch = await agent(db, "codex-batch");
  const web = "github.com/acme/web-app";
  const pay = "github.com/acme/payments-api";

  // web-app: the runner's baseline of main, refreshed three times.
  let b = await baseline(ctx, runner, web, "main-1", null, 21);
  const login = new WorkContext(
    ctx,
    runner,
    web,
    "issue-412-login-timeout",
    "fix/login-timeout",
    "/workspaces/ws-412",
    true,
  );
  await login.start(20);
  for (const d of [19.8, 19.5, 19]) await login.checkpoint(d);
  const refactor = new WorkContext(ctx, runner, web, "pr-88-refactor-auth", "refactor/auth", "/workspaces/ws-88", true);
  await refactor.start(18);
  for (const d of [17.9, 17.5, 17]) await refactor.checkpoint(d);
  await retireLineage(db, {
    lineageId: refactor.lineageId,
    reason: "completed",
    actor: { kind: "agent", agent: runner.scope },
    now: at(ctx, 16),
  });

  b = await baseline(ctx, runner, web, "main-2", b, 14);
  const flaky = new WorkContext(ctx, runner, web, "issue-501-flaky-e2e", "fix/flaky-e2e", "/workspaces/ws-501", true);
  await flaky.start(13);
  for (let i = 0; i < 14; i += 1) await flaky.checkpoint(12.9 - i * 0.4);
  b = await baseline(ctx, runner, web, "main-3", b, 7);
  // Resumed later: the checkpoint could not be restored; the ladder fell back to the baseline.
  const resume = await flaky.acquire(6);
  const failed = await reportRestore(db, {
    agent: runner.scope,
    restoreId: resume.restoreId,
    outcome: "failed",
    error: { code: "BLOB_MISSING", message: "a patch of the chain is not stored" },
    now: at(ctx, 6),
  });
  if (failed.next) {
    await reportRestore(db, {
      agent: runner.scope,
      restoreId: failed.next.restoreId,
      outcome: "restored",
      now: at(ctx, 6),
    });
  }
  await flaky.checkpoint(5.8);
  await flaky.checkpoint(5.5);

  const cache = new WorkContext(ctx, runner, web, "spike-redis-cache", "spike/cache", "/workspaces/ws-cache", true);
  await cache.start(4);
  for (const d of [3.9, 3.6]) await cache.checkpoint(d);
  // The spike resumed on another host and came back degraded: the original stays pinned 30 days.
  const degraded = await cache.acquire(2);
  await reportRestore(db, {
    agent: runner.scope,
    restoreId: degraded.restoreId,
    outcome: "degraded",
    missing: [
      `commit:${oid("unpushed:spike")}`,
      `change-set:${randomUUID()}`,
      "path:src/cache/redis.ts",
      "path:src/cache/index.ts",
    ],
    treeId: oid("tree:spike-partial"),
    now: at(ctx, 2),
  });
  await baseline(ctx, runner, web, "main-4", b, 1);

  // The batch agent on web-app: its own baseline and a lint sweep.
  const bb = await baseline(ctx, batch, web, "batch-main-1", null, 10);
  const lint = new WorkContext(ctx, batch, web, "batch-lint-fixes", "chore/lint", "/workspaces/batch-lint", true);
  await lint.start(9);
  for (const d of [8.9, 8.5, 8.1, 7.7]) await lint.checkpoint(d);
  await baseline(ctx, batch, web, "batch-main-2", bb, 3);

  // payments-api: one work context, its head held by support and then retired by an operator.
  await baseline(ctx, runner, pay, "main-1", null, 12);
  const refunds = new WorkContext(
    ctx,
    runner,
    pay,
    "issue-77-partial-refunds",
    "feat/partial-refunds",
    "/workspaces/ws-77",
    true,
  );
  await refunds.start(11);
  for (const d of [10.8, 10.2, 9.6]) await refunds.checkpoint(d);
  await pinSnapshot(db, {
    snapshotId: refunds.head!,
    // A pin belongs to the agent whose snapshot it protects.
    agentId: (await db.snapshot.findUniqueOrThrow({ where: { id: refunds.head! }, select: { agentId: true } })).agentId,
    pinId: "support:case-1193",
    holder: "support case 1193",
    purpose: "customer investigation",
  });
  if (people.operator) {
    await retireSnapshot(db, {
      snapshotId: refunds.head!,
      actor: { type: "user", id: people.operator.userId },
      reason: "captured a production credential in a fixture",
    });
  }
  const ledger = new WorkContext(
    ctx,
    runner,
    pay,
    "issue-80-ledger-export",
    "feat/ledger-export",
    "/workspaces/ws-80",
    true,
  );
  await ledger.start(5);
  await ledger.checkpoint(4.8);
  const ledgerResume = await ledger.acquire(1);
  await reportRestore(db, {
    agent: runner.scope,
    restoreId: ledgerResume.restoreId,
    outcome: "degraded",
    missing: ["path:src/export/ledger.csv.ts"],
    now: at(ctx, 1),
  });
  // A task paused 40 minutes ago for a person's answer: its checkpoint appended, then its live
  // workspace held (as on a provider that keeps idle workspaces: 14 days).
  const review = new WorkContext(
    ctx,
    runner,
    web,
    "issue-530-awaiting-review",
    "fix/review-comments",
    "/workspaces/ws-530",
    true,
  );
  await review.start(0.05);
  await review.checkpoint(0.03);
  await holdWorkspace(db, {
    agent: runner.scope,
    workContextId: review.id,
    snapshotId: review.head!,
    workspace: review.workspace,
    host: "worker-3",
    providers: { [BACKEND]: { idlePersistentHolds: true } },
    now: at(ctx, 0.03),
  });
  // A batch job that acquired a workspace and has not reported yet: its pin is in flight.
  await acquireWorkspace(db, {
    agent: batch.scope,
    repository: { identity: web },
    backendKind: BACKEND,
    baseImage: IMAGE,
    canonicalRef: "main",
    workspace: "/workspaces/batch-warm",
    host: "worker-1",
  });

  await collectGarbage(db, { force: true, host: "worker-1" });
  // After that run: an operator cleaned up the lint sweep's first two checkpoints; the heads of
  // one were already released (its own layers wait for the next run), the other waits whole.
  if (people.operator) {
    for (const [i, reason] of ["superseded lint output", "duplicate of #1"].entries()) {
      await retireSnapshot(db, {
        snapshotId: lint.ids[i]!,
        actor: { type: "user", id: people.operator.userId },
        reason,
      });
    }
    await releaseRetiredHeads(db, { snapshotIds: [lint.ids[0]!] });
  }
  // Checkpoints with real change sets, for the snapshot diff.
  await seedDiffHistory(db, {
    agent: runner.scope,
    repository: web,
    backendKind: BACKEND,
    baseImage: IMAGE,
    at: (d) => at(ctx, d),
  });
  return {
    repositories: [web, pay],
    degradedRestoreIds: [degraded.restoreId, ledgerResume.restoreId],
    lineages: { login: login.lineageId, flaky: flaky.lineageId, cache: cache.lineageId, lint: lint.lineageId },
    snapshots: { loginHead: login.head!, flakyHead: flaky.head!, refundsHead: refunds.head! },
  };
}

/**
 * One repository with `snapshots` snapshots: 8 agents each refreshing a baseline 10 times,
 * and lineages of 40 checkpoints seeded from the baseline of their time; every 15th lineage
 * fell back to its baseline once mid-chain, every 10th was completed.
 */
export async function seedLargeRepository(
  db: Db,
  opts: { snapshots?: number; identity?: string; onProgress?: (done: number) => void } = {},
) {
  const total = opts.snapshots ?? 5000;
  const repo = opts.identity ?? "github.com/acme/monorepo";
  const ctx: Ctx = { db, now: Date.now() };
  const AGENTS = 8;
  const ROUNDS = 10;
  const CHAIN = 40;
  const agents: Agent[] = [];
  for (let i = 0; i < AGENTS; i += 1) agents.push(await agent(db, `bench-agent-${i + 1}-${randomUUID().slice(0, 6)}`));
  const lineageCount = Math.max(0, Math.floor((total - AGENTS * ROUNDS) / CHAIN));
  const remainder = Math.max(0, total - AGENTS * ROUNDS - lineageCount * CHAIN);
  const heads = new Map<string, string | null>();
  let done = 0;
  let lineage = 0;
  const span = 20;
  for (let round = 0; round < ROUNDS; round += 1) {
    const day = span - round * (span / ROUNDS);
    for (const a of agents) {
      heads.set(a.name, await baseline(ctx, a, repo, `${a.name}-${round}`, heads.get(a.name) ?? null, day));
      done += 1;
    }
    const perRound = Math.floor(lineageCount / ROUNDS) + (round < lineageCount % ROUNDS ? 1 : 0);
    for (let k = 0; k < perRound; k += 1, lineage += 1) {
      const a = agents[lineage % AGENTS]!;
      const length = CHAIN + (lineage === 0 ? remainder : 0);
      const wc = new WorkContext(
        ctx,
        a,
        repo,
        `task-${String(lineage).padStart(4, "0")}`,
        `work/${lineage}`,
        `/workspaces/ws-${lineage}`,
        false,
      );
      const start = day - 0.2 - k * 0.01;
      await wc.start(start);
      for (let i = 0; i < length; i += 1) {
        if (lineage % 15 === 7 && i === Math.floor(length / 2)) {
          const resume = await wc.acquire(start - i * 0.01);
          const failed = await reportRestore(db, {
            agent: a.scope,
            restoreId: resume.restoreId,
            outcome: "failed",
            error: { code: "COMMITS_UNAVAILABLE", message: "" },
            now: at(ctx, start - i * 0.01),
          });
          if (failed.next)
            await reportRestore(db, {
              agent: a.scope,
              restoreId: failed.next.restoreId,
              outcome: "restored",
              now: at(ctx, start - i * 0.01),
            });
        }
        await wc.checkpoint(start - (i + 1) * 0.01);
        done += 1;
      }
      if (lineage % 10 === 3) {
        await retireLineage(db, {
          lineageId: wc.lineageId,
          reason: "completed",
          actor: { kind: "agent", agent: a.scope },
        });
      }
      opts.onProgress?.(done);
    }
  }
  return { repository: repo, snapshots: done };
}

async function main() {
  const [what = "example", count] = process.argv.slice(2);
  const catalog = openCatalog(loadConfig().databaseUrl, { poolSize: 4 });
  try {
    const started = Date.now();
    const result =
      what === "large"
        ? await seedLargeRepository(catalog.db, { snapshots: Number(count ?? 5000) })
        : await seedExampleHistory(catalog.db);
    process.stdout.write(
      `seeded ${what} history in ${((Date.now() - started) / 1000).toFixed(1)} s: ${JSON.stringify(result)}\n`,
    );
  } finally {
    await catalog.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
