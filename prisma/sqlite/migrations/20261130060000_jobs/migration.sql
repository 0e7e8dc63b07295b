-- The job queue's catalog rows (the queue itself on SQLite; on PostgreSQL pg-boss keeps its own
-- tables in the `pgboss` schema, created when a worker starts). States are ordered
-- created < retry < active < completed | cancelled | failed and each state's shape is checked here.
CREATE TABLE "jobs" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "host" TEXT,
    "agent_id" TEXT,
    "state" TEXT NOT NULL DEFAULT 'created',
    "data" JSONB NOT NULL,
    "progress" JSONB,
    "memo" JSONB,
    "result" JSONB,
    "error" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "max_attempts" INTEGER NOT NULL,
    "backoff_ms" INTEGER NOT NULL,
    "backoff_max_ms" INTEGER NOT NULL,
    "lease_seconds" INTEGER NOT NULL,
    "run_after" DATETIME NOT NULL,
    "claimed_by" TEXT,
    "lease_expires_at" DATETIME,
    "dedupe_key" TEXT,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" DATETIME,
    "finished_at" DATETIME,
    "updated_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "jobs_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "jobs_kind_check" CHECK ("kind" IN ('capture', 'restore', 'sweep', 'gc')),
    CONSTRAINT "jobs_state_check" CHECK ("state" IN ('created', 'retry', 'active', 'completed', 'cancelled', 'failed')),
    CONSTRAINT "jobs_target_check" CHECK (("kind" IN ('capture', 'restore') AND "host" IS NOT NULL AND "agent_id" IS NOT NULL) OR ("kind" IN ('sweep', 'gc') AND "agent_id" IS NULL)),
    CONSTRAINT "jobs_attempts_check" CHECK ("max_attempts" >= 1 AND "attempts" >= 0 AND "attempts" <= "max_attempts" AND "backoff_ms" >= 0 AND "backoff_max_ms" >= "backoff_ms" AND "lease_seconds" >= 1),
    CONSTRAINT "jobs_claim_check" CHECK (("state" = 'created' AND "attempts" = 0 AND "claimed_by" IS NULL AND "lease_expires_at" IS NULL AND "finished_at" IS NULL) OR ("state" = 'retry' AND "attempts" >= 1 AND "lease_expires_at" IS NULL AND "finished_at" IS NULL) OR ("state" = 'active' AND "attempts" >= 1 AND "claimed_by" IS NOT NULL AND "lease_expires_at" IS NOT NULL AND "started_at" IS NOT NULL AND "finished_at" IS NULL) OR ("state" IN ('completed', 'cancelled', 'failed') AND "lease_expires_at" IS NULL AND "finished_at" IS NOT NULL)),
    CONSTRAINT "jobs_dedupe_key_check" CHECK ("dedupe_key" IS NULL OR length("dedupe_key") > 0)
);

CREATE UNIQUE INDEX "jobs_dedupe_key_key" ON "jobs"("dedupe_key");
CREATE INDEX "jobs_state_run_after_idx" ON "jobs"("state", "run_after");
CREATE INDEX "jobs_state_lease_expires_at_idx" ON "jobs"("state", "lease_expires_at");
CREATE INDEX "jobs_agent_id_created_at_idx" ON "jobs"("agent_id", "created_at");
