-- Worker hosts an agent cannot escape, an operator can see (issue 44):
--  * workers: each `strata worker` (and the one inside `strata serve`) registers itself and is
--    seen again at every housekeeping tick; a host is served while one of its workers was seen
--    recently (server/jobs/worker-hosts.ts).
--  * jobs.attempt_errors: the causes of a job's earlier attempts, so a job that completed on a
--    later attempt keeps its history without an `error`.
--  * host_directories: the directories of a worker host that belong to one agent, claimed before
--    a restore job writes them (server/worktrees/host-directories.ts).
ALTER TABLE "jobs" ADD COLUMN "attempt_errors" JSONB;

-- CreateTable
CREATE TABLE "workers" (
    "id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "version" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "started_at" TIMESTAMP(3) NOT NULL,
    "last_seen_at" TIMESTAMP(3) NOT NULL,
    "stopped_at" TIMESTAMP(3),

    CONSTRAINT "workers_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "workers_host_last_seen_at_idx" ON "workers"("host", "last_seen_at");

-- CreateTable
CREATE TABLE "host_directories" (
    "id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "job_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "host_directories_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "host_directories_host_path_key" ON "host_directories"("host", "path");

-- CreateIndex
CREATE INDEX "host_directories_agent_id_idx" ON "host_directories"("agent_id");

-- AddForeignKey
ALTER TABLE "host_directories" ADD CONSTRAINT "host_directories_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
