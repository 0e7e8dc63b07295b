// The agent_scoped_ids migration gives every layer and pin its agent: rows are written under the
// schema of the migration before it (raw SQL: those tables had no agent columns), then it runs.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { createOwner, insertReadySnapshot } from "../testing/content.ts";
import { openCatalog } from "./client.ts";
import { migrate, readMigrations } from "./migrate.ts";
import { createEmptyDatabase, DATABASE_KINDS, type EmptyDatabase } from "../testing/databases.ts";

const SCOPED = "20261201100000_agent_scoped_ids";

describe("the agent_scoped_ids migration", () => {
  const dropped: EmptyDatabase[] = [];
  afterAll(async () => {
    for (const db of dropped) await db.drop();
  });

  for (const kind of DATABASE_KINDS) {
    it(`gives layers and pins their agents on ${kind}, and an id another agent closed opens again`, async () => {
      const empty = await createEmptyDatabase(kind);
      dropped.push(empty);
      await migrate(empty.url, { migrations: readMigrations(kind).filter((m) => m.name < SCOPED) });
      const handle = openCatalog(empty.url);
      try {
        const db = handle.db;
        const p = (n: number) => (kind === "postgres" ? `$${n}` : "?");
        const a = await createOwner(db);
        const b = await createOwner(db);
        const layer = async (uuid: string, parent: string | null) =>
          db.$executeRawUnsafe(
            `INSERT INTO layers (uuid, parent_uuid, digest, size_bytes, kind) VALUES (${p(1)}, ${p(2)}, ${p(3)}, 1, 'patch')`,
            uuid,
            parent,
            "d".repeat(64),
          );
        const pin = async (row: { pinId: string; snapshotId: string; holder?: string; released?: boolean }) =>
          db.$executeRawUnsafe(
            `INSERT INTO pins (pin_id, snapshot_id, holder, purpose, released, released_at) ` +
              `VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)})`,
            row.pinId,
            row.snapshotId,
            row.holder ?? null,
            row.released ? "released-before-pin" : "restore",
            row.released ?? false,
            row.released ? new Date() : null,
          );
        const snapshot = async (owner: typeof a, createdAt: Date, heads: string[]) => {
          const id = await insertReadySnapshot(db, owner, { createdAt });
          await db.snapshotHead.createMany({ data: heads.map((layerUuid) => ({ snapshotId: id, layerUuid })) });
          return id;
        };

        // A's chain L1 <- L2; B (later) also kept L1 as a head, and L3 of its own; L4 is reached by nobody.
        const [l1, l2, l3, l4] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        await layer(l1, null);
        await layer(l2, l1);
        await layer(l3, null);
        await layer(l4, null);
        const sA = await snapshot(a, new Date("2026-11-01T00:00:00Z"), [l2]);
        const sB = await snapshot(b, new Date("2026-11-02T00:00:00Z"), [l1, l3]);

        const restore = await db.restore.create({
          data: {
            agentId: b.agentId,
            repositoryId: b.repositoryId,
            backendKind: "test",
            baseImage: "test-image",
            canonicalRef: "refs/heads/main",
            workspace: "/w",
            host: "h",
            rung: "cold",
          },
        });
        const ids = {
          active: `active-${randomUUID()}`,
          teamPin: `team-pin-${randomUUID()}`,
          aEarly: `early-${randomUUID()}`,
          aGhost: `ghost-${randomUUID()}`,
          restore: `restore:${restore.id}`,
          nobody: `nobody-${randomUUID()}`,
        };
        await pin({ pinId: ids.active, snapshotId: sA, holder: `agent:${a.agentId}` });
        // B's release arrived first, naming A's snapshot: it closed A's id under the old rule.
        await pin({ pinId: ids.teamPin, snapshotId: sA, holder: `agent:${b.agentId}`, released: true });
        await pin({ pinId: ids.aEarly, snapshotId: sA, holder: `agent:${a.agentId}`, released: true });
        await pin({ pinId: ids.aGhost, snapshotId: randomUUID(), holder: `agent:${a.agentId}`, released: true });
        await pin({ pinId: ids.restore, snapshotId: randomUUID(), released: true });
        await pin({ pinId: ids.nobody, snapshotId: randomUUID(), released: true });

        expect(
          (await migrate(empty.url, { migrations: readMigrations(kind).filter((m) => m.name <= SCOPED) })).applied,
        ).toEqual([SCOPED]);

        const layers = await db.layer.findMany({ select: { uuid: true, agentId: true, agentUuid: true } });
        const ownerOf = Object.fromEntries(layers.map((l) => [l.uuid, l.agentId]));
        expect(layers.every((l) => l.agentUuid === l.uuid)).toBe(true);
        // L1 is reached from both: the earliest snapshot's agent (A) has it; B's head row stays.
        expect(ownerOf).toEqual({ [l1]: a.agentId, [l2]: a.agentId, [l3]: b.agentId, [l4]: null });
        expect(await db.snapshotHead.count({ where: { snapshotId: sB } })).toBe(2);

        const pins = await db.pin.findMany({ select: { pinId: true, agentId: true, released: true } });
        const agentOf = Object.fromEntries(pins.map((row) => [row.pinId, row.agentId]));
        expect(agentOf).toEqual({
          [ids.active]: a.agentId,
          [ids.teamPin]: b.agentId,
          [ids.aEarly]: a.agentId,
          [ids.aGhost]: a.agentId,
          [ids.restore]: b.agentId,
        });

        // After the migration: A pins the id B had closed, A's own early release stays closed,
        // and B's release of A's active pin id closes only B's.
        expect(await pinSnapshot(db, { agentId: a.agentId, snapshotId: sA, pinId: ids.teamPin })).toMatchObject({
          released: false,
        });
        await expect(pinSnapshot(db, { agentId: a.agentId, snapshotId: sA, pinId: ids.aEarly })).rejects.toThrow(
          /released/,
        );
        await releasePin(db, { agentId: b.agentId, snapshotId: sA, pinId: ids.active });
        expect(
          (await db.pin.findUniqueOrThrow({ where: { agentId_pinId: { agentId: a.agentId, pinId: ids.active } } }))
            .released,
        ).toBe(false);
      } finally {
        await handle.close();
      }
    });
  }
});
