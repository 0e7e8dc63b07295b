// A worker's log during a catalog outage: one line when it starts, at most one a minute while it
// lasts, one when the catalog answers again; other errors are left to the caller.
import { describe, expect, it } from "vitest";
import { StrataError } from "../domain/errors.ts";
import { OutageLog, type OutageLine } from "./outage-log.ts";

/** What Prisma throws when PostgreSQL is down (code P1001, its message a multi-line excerpt). */
function unreachable(): Error {
  return Object.assign(
    new Error(
      "\nInvalid `prisma.job.findMany()` invocation in\n/srv/strata/server/jobs/queue.ts:12:3\n\n→ 12 tx.job.findMany(\nCan't reach database server at db:5432",
    ),
    { name: "PrismaClientKnownRequestError", code: "P1001" },
  );
}

describe("the outage log", () => {
  it("turns a burst of 60 failed tries over 2 minutes into a start, a reminder a minute and an end", () => {
    let now = Date.parse("2026-12-08T01:00:00.000Z");
    const log = new OutageLog({ now: () => now });
    const lines: OutageLine[] = [];
    for (let i = 0; i < 60; i++) {
      const noted = log.failed(unreachable());
      expect(noted.handled).toBe(true);
      if (noted.line) lines.push(noted.line);
      now += 2_000;
    }
    const back = log.answered();
    expect(back).not.toBeNull();
    lines.push(back!);
    expect(log.answered()).toBeNull();

    expect(lines[0]).toEqual({
      level: "warn",
      msg: "catalog unreachable since 2026-12-08T01:00:00.000Z, retrying",
      fields: { since: "2026-12-08T01:00:00.000Z", failedTries: 1, code: "P1001" },
    });
    const still = lines.filter((l) => l.msg.startsWith("catalog still unreachable"));
    expect(still.length).toBeGreaterThanOrEqual(1);
    expect(still.length).toBeLessThanOrEqual(2);
    expect(still[0]!.msg).toMatch(/^catalog still unreachable since 2026-12-08T01:00:00.000Z, \d+ failed tries$/);
    expect(lines.at(-1)).toEqual({
      level: "info",
      msg: "catalog reachable again after 120 s",
      fields: { since: "2026-12-08T01:00:00.000Z", failedTries: 60, seconds: 120 },
    });
    expect(lines).toHaveLength(2 + still.length);
    // No line carries the database's multi-line text.
    for (const line of lines) expect(JSON.stringify(line)).not.toMatch(/Invalid|reach database|\\n/);
  });

  it("leaves errors that are not an outage to the caller, and starts again after an outage ended", () => {
    let now = 0;
    const log = new OutageLog({ now: () => now });
    expect(log.failed(new Error("disk full"))).toEqual({ handled: false, line: null });
    expect(log.failed(new StrataError("NOT_FOUND", "no such job"))).toEqual({ handled: false, line: null });
    expect(log.answered()).toBeNull();

    expect(log.failed(new StrataError("UNAVAILABLE", "The catalog database is unavailable.")).line?.fields.code).toBe(
      "UNAVAILABLE",
    );
    now += 5_000;
    expect(log.answered()?.msg).toBe("catalog reachable again after 5 s");
    now += 1_000;
    expect(log.failed(unreachable()).line?.msg).toMatch(/^catalog unreachable since /);
  });
});
