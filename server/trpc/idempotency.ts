// Idempotency keys for the creating agent calls (docs/api.md "Idempotency"). A call sent with
// `Idempotency-Key: K` runs its work and records K's answer in ONE transaction; a later call of
// the same agent with K within 24 h gets that answer again (the same bytes) and does nothing. A
// concurrent call with K waits on the key's primary key until the first commits, then replays
// it (it waits rather than answering "in progress"), so two calls never both do the work; a
// crash before the commit leaves neither the work nor the key. A failed call is rolled back with
// its key (a retry runs it again), except refusals whose records the work keeps
// (`keptRefusals`), which are stored with the key and replayed as the same error.
import { createHash } from "node:crypto";
import superjson from "superjson";
import { inTransaction, type Db } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { ERROR_CODES, isStrataError, StrataError, type ErrorCode, type StrataErrorShape } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import { invalidInput } from "./input-boundary.ts";

const IDEMPOTENCY_HEADER = "Idempotency-Key";
/** How long a key answers with its first call's result. */
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
export const KEY_FORMAT = /^[A-Za-z0-9._:-]{1,200}$/;

interface IdempotentCall {
  db: Db;
  agentId: string;
  /** The Idempotency-Key header; without one the work simply runs. */
  key: string | null | undefined;
  /** The procedure's path (`job.enqueueCapture`): a key names one call of one procedure. */
  procedure: string;
  /** The parsed input: a reused key must come with the same one. */
  input: unknown;
  /** Refusals thrown after the work committed what it wants kept: stored with the key. */
  keptRefusals?: readonly ErrorCode[];
}

type Recorded = { state: string; procedure: string; inputHash: string; response: string | null };

type Outcome = { answer: string; fresh: boolean } | { refusal: StrataError };

/** What a procedure's resolver is handed: the agent's context, its path and its parsed input. */
interface AgentCallOptions {
  ctx: { db: Db; agent: AgentScope; idempotencyKey?: string | null };
  path: string;
  input: unknown;
}

/**
 * A creating agent procedure's work, answered once per Idempotency-Key: `work` gets the handle
 * (a transaction when a key came) its writes must use, so they commit with the key.
 */
export function withIdempotencyKey<T>(
  { ctx, path, input }: AgentCallOptions,
  work: (db: Db) => Promise<T>,
  options: { keptRefusals?: readonly ErrorCode[] } = {},
): Promise<T> {
  return idempotent(
    { db: ctx.db, agentId: ctx.agent.agentId, key: ctx.idempotencyKey, procedure: path, input, ...options },
    work,
  );
}

/** Runs `work` once per (agent, key): see the top of this file. */
async function idempotent<T>(call: IdempotentCall, work: (db: Db) => Promise<T>): Promise<T> {
  const { db, agentId, key, procedure } = call;
  if (key === null || key === undefined) return work(db);
  checkKey(key);
  const inputHash = hashCall(procedure, call.input);
  const where = { agentId_key: { agentId, key } };
  const outcome = await inTransaction(db, async (tx): Promise<Outcome> => {
    const now = new Date();
    const found = await tx.idempotencyKey.findUnique({
      where,
      select: { state: true, procedure: true, inputHash: true, response: true, expiresAt: true },
    });
    if (found && found.expiresAt > now) return replay(found, { procedure, inputHash, key });
    if (found) await tx.idempotencyKey.deleteMany({ where: { agentId, key, expiresAt: { lte: now } } });
    try {
      await tx.idempotencyKey.create({
        data: {
          agentId,
          key,
          procedure,
          inputHash,
          state: "running",
          createdAt: now,
          expiresAt: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
        },
        select: { key: true },
      });
    } catch (error) {
      // A concurrent call with this key committed first (PostgreSQL made this insert wait for
      // it): run again, and find its answer.
      if (isUniqueViolation(error)) throw new RetryTransaction("a concurrent call recorded this idempotency key");
      throw error;
    }
    let answer: string;
    try {
      answer = superjson.stringify(await work(tx));
    } catch (error) {
      if (!isStrataError(error) || !call.keptRefusals?.includes(error.code)) throw error;
      await tx.idempotencyKey.update({
        where,
        data: { state: "failed", response: JSON.stringify(error.toJSON()) },
        select: { key: true },
      });
      return { refusal: error };
    }
    await tx.idempotencyKey.update({ where, data: { state: "succeeded", response: answer }, select: { key: true } });
    return { answer, fresh: true };
  });
  if ("refusal" in outcome) throw outcome.refusal;
  if (outcome.fresh) await forgetExpiredKeys(db, agentId);
  // The first caller gets the stored answer too, so every answer of the key is the same.
  return superjson.parse<T>(outcome.answer);
}

function replay(found: Recorded, call: { procedure: string; inputHash: string; key: string }): Outcome {
  if (found.procedure !== call.procedure || found.inputHash !== call.inputHash) {
    return {
      refusal: new StrataError(
        "IDEMPOTENCY_CONFLICT",
        `The idempotency key ${call.key} was used for a different call (${found.procedure} with other input); nothing was done.`,
        {
          hint: "Send a new Idempotency-Key for each new operation; reuse one only to retry the very same call.",
          data: { procedure: found.procedure },
        },
      ),
    };
  }
  // A running row never commits (its transaction records the answer), so this is a defect.
  if (found.state === "running" || found.response === null) {
    return { refusal: new StrataError("INTERNAL", `The idempotency key ${call.key} has no recorded answer.`) };
  }
  if (found.state === "failed") return { refusal: storedError(found.response) };
  return { answer: found.response, fresh: false };
}

function storedError(text: string): StrataError {
  const shape = JSON.parse(text) as StrataErrorShape;
  const code: ErrorCode = shape.code in ERROR_CODES ? shape.code : "INTERNAL";
  return new StrataError(code, shape.message, {
    hint: shape.hint ?? undefined,
    retryable: shape.retryable,
    data: shape.data ?? undefined,
  });
}

function checkKey(key: string): void {
  if (KEY_FORMAT.test(key)) return;
  throw invalidInput([
    {
      path: [IDEMPOTENCY_HEADER],
      problem: "invalid_idempotency_key",
      expected: "1 to 200 characters of A-Z a-z 0-9 . _ : -",
      message: `The ${IDEMPOTENCY_HEADER} header must be 1 to 200 characters of letters, digits, '.', '_', ':' or '-'.`,
    },
  ]);
}

/** sha256 of the procedure and its input, with object keys sorted: the same call hashes alike. */
function hashCall(procedure: string, input: unknown): string {
  return createHash("sha256").update(procedure).update("\n").update(canonicalJson(input)).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (value === undefined) return "null";
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof value === "bigint") return JSON.stringify(`${value}n`);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Deletes the agent's keys past their 24 h, after a call recorded a new one: the table holds at
 * most a day of each agent's keyed calls without a periodic job. The call's answer is committed
 * already, so a failure here is left for the next call to clean up.
 */
async function forgetExpiredKeys(db: Db, agentId: string): Promise<void> {
  await db.idempotencyKey.deleteMany({ where: { agentId, expiresAt: { lte: new Date() } } }).catch(() => undefined);
}
