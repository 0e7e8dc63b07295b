// A child process for the queue tests: claims every runnable job of a host (printing one JSON
// line per claim), or offers the maintenance schedule. Separate processes are the real
// contention: SQLite's lock is per connection, and better-sqlite3 waits for it synchronously.
import { openCatalog } from "../db/client.ts";
import { scheduleMaintenance } from "../jobs/maintenance.ts";
import { JobQueue } from "../jobs/queue.ts";

interface Args {
  url: string;
  mode: "claim" | "schedule";
  host: string;
  workerId: string;
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const catalog = openCatalog(args.url, { poolSize: 2 });
const queue = new JobQueue(catalog.db);
try {
  if (args.mode === "schedule") {
    const offered = await scheduleMaintenance(queue, { sweepIntervalSeconds: 3_600, gcIntervalSeconds: 3_600 });
    process.stdout.write(`${JSON.stringify(offered)}\n`);
  } else {
    for (;;) {
      const job = await queue.fetch({ host: args.host, workerId: args.workerId });
      if (!job) break;
      process.stdout.write(`${JSON.stringify({ id: job.id, host: job.host, attempt: job.attempt })}\n`);
    }
  }
} finally {
  await catalog.close();
}
