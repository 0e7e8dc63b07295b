// A collection in a process of its own, for the tests that kill one mid-run
// (gc-processes.test.ts). Run: node --import tsx server/testing/gc-process.ts '<json>'
// where json = { url, options, pause?: { at: "in" | "after", phase, nth } }.
// Prints "PAUSED <phase>" when it reaches the pause point and then waits for ever (inside the
// batch's open transaction for "in", between batches for "after"); otherwise prints the
// collection's result as one JSON line and exits.
import { openCatalog } from "../db/client.ts";
import { collectGarbage, type CollectOptions, type CollectPhase } from "../gc/collect-garbage.ts";

interface Args {
  url: string;
  options: Omit<CollectOptions, "hooks" | "signal">;
  pause?: { at: "in" | "after"; phase: CollectPhase; nth: number };
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const catalog = openCatalog(args.url, { poolSize: 2 });
let seen = 0;

async function maybePause(at: "in" | "after", phase: CollectPhase, count: number): Promise<void> {
  const pause = args.pause;
  if (!pause || pause.at !== at || pause.phase !== phase || count === 0) return;
  seen += 1;
  if (seen < pause.nth) return;
  process.stdout.write(`PAUSED ${phase}\n`);
  await new Promise(() => setInterval(() => undefined, 60_000));
}

const result = await collectGarbage(catalog.db, {
  ...args.options,
  hooks: {
    inBatch: (phase, info) => maybePause("in", phase, info.count),
    afterBatch: (phase, info) => maybePause("after", phase, info.count),
  },
});
process.stdout.write(`${JSON.stringify(result)}\n`);
await catalog.close();
