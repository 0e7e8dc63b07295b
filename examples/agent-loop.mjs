#!/usr/bin/env node
// An agent loop's use of Strata, to copy into a harness: checkpoint the checkout after every
// turn, and when the task moves to another machine (or the sandbox is gone), acquire its
// workspace there — the newest checkpoint, restored and verified, or the repository's clean
// baseline for new work. Run it from a Strata checkout after `npm run build:client` (or from a
// project that installed Strata), against a server:
//
//   STRATA_SERVER_URL=http://127.0.0.1:3000 STRATA_TOKEN=strata_… \
//     node examples/agent-loop.mjs <checkout> <work-context-id> <new-directory>
//
// It prints one JSON line per step. Every failure is a StrataError with a code, a hint and
// whether a retry can help (the SDK has already retried the transient ones).
import { createStrataClient, isStrataError } from "strata/client";

const [checkout, context, elsewhere] = process.argv.slice(2);
if (!checkout || !context || !elsewhere) {
  console.error("usage: node examples/agent-loop.mjs <checkout> <work-context-id> <new-directory>");
  process.exit(2);
}
const strata = createStrataClient({ url: process.env.STRATA_SERVER_URL, token: process.env.STRATA_TOKEN });
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));

try {
  // After a turn: record exactly what the checkout holds (dirty and untracked files included).
  const saved = await strata.checkpoint(checkout, { context, repository: process.env.STRATA_REPOSITORY });
  say("checkpoint", { outcome: saved.outcome, snapshotId: saved.snapshotId, head: saved.manifest.head });

  // The task resumes somewhere else: its workspace comes back from the newest checkpoint.
  const resumed = await strata.acquire(
    {
      repository:
        process.env.STRATA_REPOSITORY ?? (await strata.manifest(saved.snapshotId)).snapshot.repository.identity,
      context,
    },
    { into: elsewhere },
  );
  const last = resumed.steps.at(-1);
  say("acquire", {
    rung: last?.plan.rung,
    snapshotId: last?.plan.snapshot?.id ?? null,
    path: resumed.path,
    reported: last?.reported,
  });

  // Before writing in it again: is it still exactly that snapshot?
  if (last?.plan.snapshot) {
    const check = await strata.verify(elsewhere, last.plan.snapshot.id);
    say("verify", { matches: check.matches });
  }
} catch (error) {
  if (!isStrataError(error)) throw error;
  say("failed", { code: error.code, message: error.message, hint: error.hint ?? null, retryable: error.retryable });
  process.exitCode = 1;
}
