// Live holds as operators see them on the dashboard: which paused work contexts hold a live
// workspace, where, until when, and the checkpoint each keeps from collection. Newest first.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { dbNow } from "../db/sql.ts";
import { liveHoldViewSchema } from "../domain/live-holds.ts";
import { decodeCursor, encodeCursor, pageDirectionSchema } from "../domain/paging.ts";
import { toLiveHoldView } from "./hold-workspace.ts";

export const listLiveHoldsInput = z.strictObject({
  /** `active`: holding now; `all`: ended and expired ones too. */
  status: z.enum(["active", "all"]).default("active"),
  snapshotId: z.string().trim().min(1).max(200).optional(),
  /** The nextCursor of the previous page (newest first). */
  cursor: z.string().max(400).optional(),
  direction: pageDirectionSchema,
  limit: z.number().int().min(1).max(500).default(100),
});
export type ListLiveHoldsInput = z.input<typeof listLiveHoldsInput>;

export const liveHoldListSchema = z.object({
  /** The database's time the statuses were judged at. */
  now: z.date(),
  activeCount: z.number().int(),
  nextCursor: z.string().nullable(),
  holds: z.array(
    liveHoldViewSchema.extend({
      agentName: z.string(),
      repository: z.object({ id: z.string(), name: z.string() }),
      snapshotState: z.string(),
    }),
  ),
});
export type LiveHoldList = z.infer<typeof liveHoldListSchema>;

export async function listLiveHolds(db: Db, input: ListLiveHoldsInput = {}): Promise<LiveHoldList> {
  const opts = listLiveHoldsInput.parse(input);
  const now = await dbNow(db);
  const active = { endedAt: null, expiresAt: { gt: now } };
  const after = opts.cursor ? decodeCursor(opts.cursor) : null;
  const [rows, activeCount] = await Promise.all([
    db.liveHold.findMany({
      where: {
        ...(opts.status === "active" ? active : {}),
        ...(opts.snapshotId ? { snapshotId: opts.snapshotId } : {}),
        ...(after
          ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] }
          : {}),
      },
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: opts.limit + 1,
      include: {
        agent: { select: { name: true } },
        snapshot: { select: { state: true, repository: { select: { id: true, name: true } } } },
      },
    }),
    db.liveHold.count({ where: active }),
  ]);
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  return {
    now,
    activeCount,
    nextCursor: rows.length > opts.limit && last ? encodeCursor(last.createdAt, last.id) : null,
    holds: page.map(({ agent, snapshot, ...row }) => ({
      ...toLiveHoldView(row, now),
      agentName: agent.name,
      repository: snapshot.repository,
      snapshotState: snapshot.state,
    })),
  };
}
