// A dashboard user retires a lineage, with a reason. The state change is retireLineage's
// (lineages.ts); this adds the person as the actor and their words as the note.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { UserScope } from "../domain/scope.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { clientFields } from "../domain/client-fields.ts";
import { retireLineage } from "./lineages.ts";
import { retirementReasonSchema } from "./retirement.ts";

export const retireLineageByUserInput = z.strictObject({ lineageId: entityIdSchema, reason: retirementReasonSchema });
export type RetireLineageByUserInput = z.input<typeof retireLineageByUserInput>;

/** Retires a lineage for a dashboard user (reason `operator`, the person's words as the note). */
export async function retireLineageByUser(db: Db, opts: RetireLineageByUserInput & { user: UserScope }) {
  const input = retireLineageByUserInput.parse(clientFields(opts, "user"));
  const result = await retireLineage(db, {
    lineageId: input.lineageId,
    reason: "operator",
    note: input.reason,
    actor: { kind: "user", user: opts.user },
  });
  return {
    lineageId: result.lineage.id,
    alreadyRetired: result.alreadyRetired,
    retiredSnapshotIds: result.retiredSnapshotIds,
  };
}
