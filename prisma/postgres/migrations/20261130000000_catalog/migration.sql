-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "agents" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabled_at" TIMESTAMP(3),

    CONSTRAINT "agents_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_tokens" (
    "id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "label" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMP(3),
    "revoked_at" TIMESTAMP(3),

    CONSTRAINT "agent_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "users" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "email_verified" BOOLEAN NOT NULL DEFAULT false,
    "image" TEXT,
    "role" TEXT NOT NULL DEFAULT 'operator',
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "users_role_check" CHECK ("role" IN ('operator', 'support', 'admin'))
);

-- CreateTable
CREATE TABLE "repositories" (
    "id" TEXT NOT NULL,
    "identity" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "repositories_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "lineages" (
    "id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "work_context_id" TEXT NOT NULL,
    "repository_id" TEXT NOT NULL,
    "backend_kind" TEXT NOT NULL,
    "base_image" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'active',
    "origin_snapshot_id" TEXT,
    "retired_reason" TEXT,
    "retired_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "lineages_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "lineages_state_check" CHECK (("state" = 'active' AND "retired_at" IS NULL AND "retired_reason" IS NULL) OR ("state" = 'retired' AND "retired_at" IS NOT NULL AND "retired_reason" IS NOT NULL AND "retired_reason" IN ('completed', 'declined', 'stale', 'operator')))
);

-- CreateTable
CREATE TABLE "snapshots" (
    "id" TEXT NOT NULL,
    "alias" TEXT,
    "class" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'capturing',
    "agent_id" TEXT NOT NULL,
    "repository_id" TEXT NOT NULL,
    "backend_kind" TEXT NOT NULL,
    "base_image" TEXT NOT NULL,
    "canonical_ref" TEXT,
    "canonical_commit" TEXT,
    "validation" JSONB,
    "work_context_id" TEXT,
    "lineage_id" TEXT,
    "sequence" INTEGER,
    "predecessor_id" TEXT,
    "manifest_digest" TEXT,
    "head_commit" TEXT,
    "tree_id" TEXT,
    "branch" TEXT,
    "size_bytes" BIGINT NOT NULL DEFAULT 0,
    "degraded_from_id" TEXT,
    "source_workspace" TEXT,
    "source_host" TEXT,
    "metadata" JSONB,
    "retired_reason" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ready_at" TIMESTAMP(3),
    "superseded_at" TIMESTAMP(3),
    "retired_at" TIMESTAMP(3),
    "failed_at" TIMESTAMP(3),
    "deleting_at" TIMESTAMP(3),
    "deleted_at" TIMESTAMP(3),
    "last_restored_at" TIMESTAMP(3),

    CONSTRAINT "snapshots_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "snapshots_class_check" CHECK ("class" IN ('baseline', 'checkpoint')),
    CONSTRAINT "snapshots_state_check" CHECK ("state" IN ('capturing', 'ready', 'superseded', 'retired', 'failed', 'deleting', 'deleted')),
    CONSTRAINT "snapshots_class_shape_check" CHECK (("class" = 'baseline' AND "canonical_ref" IS NOT NULL AND "canonical_commit" IS NOT NULL AND "validation" IS NOT NULL AND "work_context_id" IS NULL AND "lineage_id" IS NULL AND "sequence" IS NULL AND "predecessor_id" IS NULL) OR ("class" = 'checkpoint' AND "canonical_ref" IS NULL AND "canonical_commit" IS NULL AND "validation" IS NULL AND "work_context_id" IS NOT NULL AND "lineage_id" IS NOT NULL AND "sequence" IS NOT NULL AND (("sequence" = 1 AND "predecessor_id" IS NULL) OR ("sequence" > 1 AND "predecessor_id" IS NOT NULL)))),
    CONSTRAINT "snapshots_alias_check" CHECK ("alias" IS NULL OR length(trim("alias")) > 0),
    CONSTRAINT "snapshots_size_check" CHECK ("size_bytes" >= 0)
);

-- CreateTable
CREATE TABLE "layers" (
    "uuid" TEXT NOT NULL,
    "parent_uuid" TEXT,
    "digest" TEXT NOT NULL,
    "size_bytes" BIGINT NOT NULL,
    "kind" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'available',
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleting_at" TIMESTAMP(3),
    "deleted_at" TIMESTAMP(3),

    CONSTRAINT "layers_pkey" PRIMARY KEY ("uuid"),
    CONSTRAINT "layers_state_check" CHECK ("state" IN ('available', 'deleting', 'deleted')),
    CONSTRAINT "layers_parent_check" CHECK ("parent_uuid" IS NULL OR "parent_uuid" <> "uuid"),
    CONSTRAINT "layers_digest_check" CHECK (length("digest") > 0),
    CONSTRAINT "layers_size_check" CHECK ("size_bytes" >= 0)
);

-- CreateTable
CREATE TABLE "snapshot_heads" (
    "snapshot_id" TEXT NOT NULL,
    "layer_uuid" TEXT NOT NULL,

    CONSTRAINT "snapshot_heads_pkey" PRIMARY KEY ("snapshot_id","layer_uuid")
);

-- CreateTable
CREATE TABLE "pins" (
    "pin_id" TEXT NOT NULL,
    "snapshot_id" TEXT NOT NULL,
    "released" BOOLEAN NOT NULL DEFAULT false,
    "holder" TEXT,
    "purpose" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "released_at" TIMESTAMP(3),
    "expires_at" TIMESTAMP(3),

    CONSTRAINT "pins_pkey" PRIMARY KEY ("pin_id"),
    CONSTRAINT "pins_released_check" CHECK (("released" = true AND "released_at" IS NOT NULL) OR ("released" = false AND "released_at" IS NULL))
);

-- CreateTable
CREATE TABLE "blobs" (
    "id" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'uploading',
    "size_bytes" BIGINT NOT NULL DEFAULT 0,
    "chunk_count" INTEGER NOT NULL DEFAULT 0,
    "stored_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_reused_at" TIMESTAMP(3),

    CONSTRAINT "blobs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "blobs_state_check" CHECK ("state" IN ('uploading', 'stored')),
    CONSTRAINT "blobs_digest_check" CHECK ("state" = 'uploading' OR length("digest") = 64),
    CONSTRAINT "blobs_size_check" CHECK ("size_bytes" >= 0 AND "chunk_count" >= 0)
);

-- CreateTable
CREATE TABLE "blob_chunks" (
    "blob_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "blob_chunks_pkey" PRIMARY KEY ("blob_id","seq"),
    CONSTRAINT "blob_chunks_size_check" CHECK (octet_length("data") <= 1048576 AND "seq" >= 0)
);

-- CreateTable
CREATE TABLE "restores" (
    "id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "repository_id" TEXT NOT NULL,
    "lineage_id" TEXT,
    "snapshot_id" TEXT,
    "backend_kind" TEXT NOT NULL,
    "base_image" TEXT NOT NULL,
    "canonical_ref" TEXT NOT NULL,
    "work_context_id" TEXT,
    "workspace" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "rung" TEXT NOT NULL,
    "outcome" TEXT NOT NULL DEFAULT 'pending',
    "pin_id" TEXT,
    "previous_restore_id" TEXT,
    "result" JSONB,
    "error_code" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "reported_at" TIMESTAMP(3),
    "discarded_at" TIMESTAMP(3),
    "discarded_by" TEXT,
    "discard_reason" TEXT,

    CONSTRAINT "restores_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "restores_rung_check" CHECK ("rung" IN ('checkpoint', 'baseline', 'cold')),
    CONSTRAINT "restores_outcome_check" CHECK ("outcome" IN ('pending', 'restored', 'degraded', 'unrestored', 'failed')),
    CONSTRAINT "restores_cold_check" CHECK (("rung" = 'cold' AND "snapshot_id" IS NULL) OR ("rung" <> 'cold' AND "snapshot_id" IS NOT NULL))
);

-- CreateTable
CREATE TABLE "collection_runs" (
    "id" TEXT NOT NULL,
    "host" TEXT,
    "status" TEXT NOT NULL DEFAULT 'running',
    "started_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMP(3),
    "heads_released" INTEGER NOT NULL DEFAULT 0,
    "layers_deleted" INTEGER NOT NULL DEFAULT 0,
    "blobs_deleted" INTEGER NOT NULL DEFAULT 0,
    "bytes_freed" BIGINT NOT NULL DEFAULT 0,
    "error_code" TEXT,

    CONSTRAINT "collection_runs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "collection_runs_status_check" CHECK ("status" IN ('running', 'finished', 'failed'))
);

-- CreateTable
CREATE TABLE "leases" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "acquired_at" TIMESTAMP(3) NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "leases_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "audit_events" (
    "id" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor_type" TEXT NOT NULL,
    "actor_id" TEXT,
    "action" TEXT NOT NULL,
    "subject_type" TEXT NOT NULL,
    "subject_id" TEXT NOT NULL,
    "reason" TEXT,
    "details" JSONB,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "audit_events_actor_check" CHECK ("actor_type" IN ('user', 'agent', 'system'))
);

-- CreateIndex
CREATE UNIQUE INDEX "agents_name_key" ON "agents"("name");

-- CreateIndex
CREATE UNIQUE INDEX "agent_tokens_token_hash_key" ON "agent_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "agent_tokens_agent_id_idx" ON "agent_tokens"("agent_id");

-- CreateIndex
CREATE UNIQUE INDEX "users_email_key" ON "users"("email");

-- CreateIndex
CREATE UNIQUE INDEX "repositories_identity_key" ON "repositories"("identity");

-- CreateIndex
CREATE INDEX "lineages_repository_id_created_at_idx" ON "lineages"("repository_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "lineages_key" ON "lineages"("agent_id", "work_context_id", "repository_id", "backend_kind", "base_image");

-- CreateIndex
CREATE UNIQUE INDEX "snapshots_alias_key" ON "snapshots"("alias");

-- CreateIndex
CREATE INDEX "snapshots_created_at_id_idx" ON "snapshots"("created_at" DESC, "id");

-- CreateIndex
CREATE INDEX "snapshots_repository_id_class_state_idx" ON "snapshots"("repository_id", "class", "state");

-- CreateIndex
CREATE INDEX "snapshots_lineage_id_sequence_idx" ON "snapshots"("lineage_id", "sequence");

-- CreateIndex
CREATE INDEX "snapshots_state_created_at_idx" ON "snapshots"("state", "created_at");

-- CreateIndex
CREATE INDEX "layers_parent_uuid_idx" ON "layers"("parent_uuid");

-- CreateIndex
CREATE INDEX "layers_digest_idx" ON "layers"("digest");

-- CreateIndex
CREATE INDEX "layers_state_idx" ON "layers"("state");

-- CreateIndex
CREATE INDEX "snapshot_heads_layer_uuid_snapshot_id_idx" ON "snapshot_heads"("layer_uuid", "snapshot_id");

-- CreateIndex
CREATE INDEX "blobs_digest_idx" ON "blobs"("digest");

-- CreateIndex
CREATE UNIQUE INDEX "restores_previous_restore_id_key" ON "restores"("previous_restore_id");

-- CreateIndex
CREATE INDEX "restores_snapshot_id_idx" ON "restores"("snapshot_id");

-- CreateIndex
CREATE INDEX "restores_outcome_created_at_idx" ON "restores"("outcome", "created_at");

-- CreateIndex
CREATE INDEX "restores_agent_id_created_at_idx" ON "restores"("agent_id", "created_at");

-- CreateIndex
CREATE INDEX "collection_runs_started_at_idx" ON "collection_runs"("started_at" DESC);

-- CreateIndex
CREATE INDEX "audit_events_at_idx" ON "audit_events"("at" DESC);

-- CreateIndex
CREATE INDEX "audit_events_subject_type_subject_id_idx" ON "audit_events"("subject_type", "subject_id");

-- AddForeignKey
ALTER TABLE "agent_tokens" ADD CONSTRAINT "agent_tokens_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_repository_id_fkey" FOREIGN KEY ("repository_id") REFERENCES "repositories"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_origin_snapshot_id_fkey" FOREIGN KEY ("origin_snapshot_id") REFERENCES "snapshots"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_repository_id_fkey" FOREIGN KEY ("repository_id") REFERENCES "repositories"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_lineage_id_fkey" FOREIGN KEY ("lineage_id") REFERENCES "lineages"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_predecessor_id_fkey" FOREIGN KEY ("predecessor_id") REFERENCES "snapshots"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_degraded_from_id_fkey" FOREIGN KEY ("degraded_from_id") REFERENCES "snapshots"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "layers" ADD CONSTRAINT "layers_parent_uuid_fkey" FOREIGN KEY ("parent_uuid") REFERENCES "layers"("uuid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshot_heads" ADD CONSTRAINT "snapshot_heads_snapshot_id_fkey" FOREIGN KEY ("snapshot_id") REFERENCES "snapshots"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshot_heads" ADD CONSTRAINT "snapshot_heads_layer_uuid_fkey" FOREIGN KEY ("layer_uuid") REFERENCES "layers"("uuid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "blob_chunks" ADD CONSTRAINT "blob_chunks_blob_id_fkey" FOREIGN KEY ("blob_id") REFERENCES "blobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "restores" ADD CONSTRAINT "restores_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "restores" ADD CONSTRAINT "restores_repository_id_fkey" FOREIGN KEY ("repository_id") REFERENCES "repositories"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "restores" ADD CONSTRAINT "restores_lineage_id_fkey" FOREIGN KEY ("lineage_id") REFERENCES "lineages"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "restores" ADD CONSTRAINT "restores_snapshot_id_fkey" FOREIGN KEY ("snapshot_id") REFERENCES "snapshots"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "restores" ADD CONSTRAINT "restores_previous_restore_id_fkey" FOREIGN KEY ("previous_restore_id") REFERENCES "restores"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Hand-written: what the Prisma schema language cannot say.

-- At most one ready baseline per baseline key, one ready checkpoint per lineage key.
CREATE UNIQUE INDEX "snapshots_one_ready_baseline" ON "snapshots"("agent_id", "repository_id", "backend_kind", "base_image", "canonical_ref") WHERE "class" = 'baseline' AND "state" = 'ready';
CREATE UNIQUE INDEX "snapshots_one_ready_checkpoint" ON "snapshots"("agent_id", "work_context_id", "repository_id", "backend_kind", "base_image") WHERE "class" = 'checkpoint' AND "state" = 'ready';

-- Active pins by snapshot (retirement asks "is anything still using it?").
CREATE INDEX "pins_active_by_snapshot" ON "pins"("snapshot_id") WHERE "released" = false;

-- Each digest is stored once.
CREATE UNIQUE INDEX "blobs_stored_digest" ON "blobs"("digest") WHERE "state" = 'stored';

-- A closed pin stays closed, keeps its snapshot, and an active pin cannot be deleted.
CREATE FUNCTION "strata_pins_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF NOT OLD."released" THEN
      RAISE EXCEPTION 'pin % is active and cannot be deleted', OLD."pin_id" USING ERRCODE = 'check_violation';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD."released" AND NOT NEW."released" THEN
    RAISE EXCEPTION 'pin % is closed and cannot be reopened', OLD."pin_id" USING ERRCODE = 'check_violation';
  END IF;
  IF NEW."pin_id" <> OLD."pin_id" OR NEW."snapshot_id" <> OLD."snapshot_id" THEN
    RAISE EXCEPTION 'pin % cannot be rebound', OLD."pin_id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "pins_guard" BEFORE UPDATE OR DELETE ON "pins" FOR EACH ROW EXECUTE FUNCTION "strata_pins_guard"();

-- A layer's identity, parent and bytes never change; its state only moves forward.
CREATE FUNCTION "strata_layers_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."uuid" <> OLD."uuid" OR NEW."parent_uuid" IS DISTINCT FROM OLD."parent_uuid"
     OR NEW."digest" <> OLD."digest" OR NEW."kind" <> OLD."kind" OR NEW."size_bytes" <> OLD."size_bytes" THEN
    RAISE EXCEPTION 'layer % is immutable', OLD."uuid" USING ERRCODE = 'check_violation';
  END IF;
  IF NOT (NEW."state" = OLD."state"
          OR (OLD."state" = 'available' AND NEW."state" = 'deleting')
          OR (OLD."state" = 'deleting' AND NEW."state" = 'deleted')) THEN
    RAISE EXCEPTION 'layer % cannot go from % to %', OLD."uuid", OLD."state", NEW."state" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "layers_guard" BEFORE UPDATE ON "layers" FOR EACH ROW EXECUTE FUNCTION "strata_layers_guard"();
