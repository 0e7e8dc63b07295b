// What a worker counts as "the catalog database could not be reached", so that a job interrupted
// by an outage records the outage as its cause (worker.ts), not whatever the lease expiry would
// have said: the one classifier of outages (server/db/errors.ts), and an UNAVAILABLE already typed.
import { isDatabaseUnavailable } from "../db/errors.ts";
import { isStrataError } from "../domain/errors.ts";
import type { JobFailure } from "../domain/jobs.ts";

/** Whether `error` says the catalog database could not be reached or take the work now. */
export function isCatalogUnreachable(error: unknown): boolean {
  return isDatabaseUnavailable(error) || isStrataError(error, "UNAVAILABLE");
}

/** The cause a job interrupted by an outage records once the database answers again. */
export const CATALOG_OUTAGE = {
  code: "UNAVAILABLE",
  message: "The catalog database was unreachable during the job.",
  hint: "The job is retried while it has attempts left.",
  retryable: true,
} as const satisfies JobFailure;
