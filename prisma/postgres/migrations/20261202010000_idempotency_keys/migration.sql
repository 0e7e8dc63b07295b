-- Idempotency keys (server/trpc/idempotency.ts): the first answer of an agent's creating call
-- made with an Idempotency-Key header, replayed to a retry with the same key for 24 hours. The
-- row is written in the transaction of the call's work, so the work and its key commit
-- together; the primary key (agent, key) makes a concurrent call with the same key wait for the
-- first and then find its answer.
-- CreateTable
CREATE TABLE "idempotency_keys" (
    "agent_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "procedure" TEXT NOT NULL,
    "input_hash" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "response" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("agent_id","key"),
    -- Hand-written: a running key has no answer yet, a finished one has its answer or its error.
    CONSTRAINT "idempotency_keys_state_check" CHECK (("state" = 'running' AND "response" IS NULL) OR ("state" IN ('succeeded', 'failed') AND "response" IS NOT NULL)),
    CONSTRAINT "idempotency_keys_expiry_check" CHECK ("expires_at" > "created_at")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_agent_id_expires_at_idx" ON "idempotency_keys"("agent_id", "expires_at");

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
