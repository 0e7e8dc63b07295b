// Releasing a live hold: the paused work context gives its live workspace up (or says it resumed
// in it), the hold's pin goes, and acquire restores the pause's checkpoint from then on. The
// checkpoint itself stays the lineage's head: releasing a hold retires nothing.
import { z } from "zod";
import { inTransaction, type Db } from "../db/client.ts";
import { clientFields } from "../domain/client-fields.ts";
import { StrataError } from "../domain/errors.ts";
import { liveHoldStatus, type LiveHoldView } from "../domain/live-holds.ts";
import type { AgentScope } from "../domain/scope.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { endLiveHold, toLiveHoldView } from "./hold-workspace.ts";

export const releaseLiveHoldInput = z.strictObject({
  holdId: entityIdSchema,
  /** `resumed`: the work context continued in the held workspace (strata resume says so). */
  reason: z.enum(["released", "resumed"]).default("released"),
});
export type ReleaseLiveHoldInput = z.input<typeof releaseLiveHoldInput>;

/**
 * Ends one of the agent's holds. Idempotent: a hold that ended already is answered as it is; one
 * whose time ran out is recorded as `expired`, which is what ended it.
 */
export async function releaseLiveHold(
  db: Db,
  opts: ReleaseLiveHoldInput & { agent: AgentScope; now?: Date },
): Promise<LiveHoldView> {
  const input = releaseLiveHoldInput.parse(clientFields(opts, "agent", "now"));
  return inTransaction(db, async (tx) => {
    const now = opts.now ?? new Date();
    const hold = await tx.liveHold.findFirst({ where: { id: input.holdId, agentId: opts.agent.agentId } });
    if (!hold) throw new StrataError("NOT_FOUND", `Live hold ${input.holdId} was not found.`);
    if (hold.endedAt === null) {
      const reason = liveHoldStatus(hold, now) === "active" ? input.reason : "expired";
      await endLiveHold(tx, hold, reason, now);
    }
    return toLiveHoldView(await tx.liveHold.findUniqueOrThrow({ where: { id: hold.id } }), now);
  });
}
