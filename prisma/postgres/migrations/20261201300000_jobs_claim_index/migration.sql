-- A worker claims the oldest runnable job of its host from the jobs table (server/db/statements/jobs.ts);
-- this index finds it without scanning the other hosts' waiting jobs.
CREATE INDEX "jobs_claim_idx" ON "jobs"("host", "state", "run_after");
