// Jobs as agents see them: enqueue a capture or a restore for a worker host, follow its state
// and progress, cancel it. Each agent sees only its own jobs.
import { z } from "zod";
import { loadConfig } from "../config/config.ts";
import { inTransaction, type Db } from "../db/client.ts";
import { StrataError } from "../domain/errors.ts";
import {
  captureJobDataSchema,
  hostNameSchema,
  hostPathSchema,
  JOB_KINDS,
  JOB_STATES,
  type JobView,
} from "../domain/jobs.ts";
import type { AgentScope } from "../domain/scope.ts";
import type { RestorePlan } from "../domain/views.ts";
import { JobQueue } from "./queue.ts";
import { waitsForHosts } from "./worker-hosts.ts";
import type { ProviderSettings } from "../backends/providers.ts";
import { acquireWorkspace, acquireWorkspaceInput } from "../acquire/acquire-workspace.ts";
import { clientFields } from "../domain/client-fields.ts";

const queues = new WeakMap<object, JobQueue>();

/**
 * The queue over a catalog client (cached; it opens no connection of its own). Jobs get the
 * claim lease of the enqueuing process's configuration (STRATA_JOB_LEASE_SECONDS).
 */
function queueOf(db: Db): JobQueue {
  let queue = queues.get(db);
  if (!queue) {
    queue = new JobQueue(db, { leaseSeconds: loadConfig().jobLeaseSeconds });
    queues.set(db, queue);
  }
  return queue;
}

/**
 * The jobs with waitingForHost filled for those that wait for a host with no live worker: one
 * look at the workers of all their hosts, however many jobs.
 */
async function withHostWaits(db: Db, jobs: JobView[]): Promise<JobView[]> {
  const waits = await waitsForHosts(db, jobs, { afterSeconds: loadConfig().noWorkerSeconds });
  if (waits.size === 0) return jobs;
  return jobs.map((job) => ({ ...job, waitingForHost: waits.get(job.id) ?? null }));
}

async function withHostWait(db: Db, job: JobView): Promise<JobView> {
  const [annotated] = await withHostWaits(db, [job]);
  return annotated ?? job;
}

export const enqueueCaptureInput = captureJobDataSchema.extend({ host: hostNameSchema });
export type EnqueueCaptureInput = z.input<typeof enqueueCaptureInput>;

/** Asks the worker on `host` to capture the checkout at `dir` into the lineage of `key`. */
export async function enqueueCapture(db: Db, opts: EnqueueCaptureInput & { agent: AgentScope }): Promise<JobView> {
  const input = enqueueCaptureInput.parse(clientFields(opts, "agent"));
  const job = await queueOf(db).enqueue(db, {
    kind: "capture",
    host: input.host,
    agentId: opts.agent.agentId,
    data: { dir: input.dir, key: input.key },
  });
  if (!job) throw new StrataError("INTERNAL", "The capture job was not recorded.");
  return withHostWait(db, job);
}

export const enqueueRestoreInput = acquireWorkspaceInput.extend({
  /** The directory on the worker host to restore into (new or empty). */
  workspace: hostPathSchema,
  host: hostNameSchema,
});
export type EnqueueRestoreInput = z.input<typeof enqueueRestoreInput>;

/**
 * workspace.acquire and a restore job for the worker on `host`, in one transaction: the decision
 * is recorded exactly when its job is. The cold rung has nothing to restore, so no job (null);
 * the worker would only report it restored, which the caller does instead.
 */
export async function enqueueRestore(
  db: Db,
  opts: EnqueueRestoreInput & { agent: AgentScope; providers?: ProviderSettings },
): Promise<{ plan: RestorePlan; job: JobView | null }> {
  const input = enqueueRestoreInput.parse(clientFields(opts, "agent", "providers"));
  const { plan, job } = await inTransaction(db, async (tx) => {
    const plan = await acquireWorkspace(tx, { ...input, agent: opts.agent, providers: opts.providers });
    if (!plan.snapshot) return { plan, job: null };
    const job = await queueOf(db).enqueue(tx, {
      kind: "restore",
      host: input.host,
      agentId: opts.agent.agentId,
      data: { restoreId: plan.restoreId, into: input.workspace },
    });
    return { plan, job };
  });
  return { plan, job: job ? await withHostWait(db, job) : null };
}

export const listJobsInput = z.strictObject({
  kind: z.enum(JOB_KINDS).optional(),
  host: hostNameSchema.optional(),
  states: z.array(z.enum(JOB_STATES)).min(1).max(JOB_STATES.length).optional(),
  limit: z.number().int().min(1).max(500).default(50),
  /** A job id from the previous page: lists older ones. */
  before: z.string().min(1).max(100).optional(),
});
export type ListJobsInput = z.input<typeof listJobsInput>;

export async function listJobs(db: Db, opts: ListJobsInput & { agent: AgentScope }): Promise<JobView[]> {
  const input = listJobsInput.parse(clientFields(opts, "agent"));
  return withHostWaits(db, await queueOf(db).list(db, { ...input, agentId: opts.agent.agentId }));
}

function notFound(jobId: string): StrataError {
  return new StrataError("NOT_FOUND", `Job ${jobId} was not found.`, { hint: "An agent sees only its own jobs." });
}

export async function getJob(db: Db, opts: { jobId: string; agent: AgentScope }): Promise<JobView> {
  const job = await queueOf(db).get(db, opts.jobId, { agentId: opts.agent.agentId });
  if (!job) throw notFound(opts.jobId);
  return withHostWait(db, job);
}

/** Cancels one of the agent's jobs; a running one is aborted at its worker's next heartbeat. */
export async function cancelJob(db: Db, opts: { jobId: string; agent: AgentScope }): Promise<JobView> {
  const job = await queueOf(db).cancel(db, opts.jobId, { agentId: opts.agent.agentId });
  if (!job) throw notFound(opts.jobId);
  return job;
}
