// A dashboard user retires one snapshot, with a reason. The state change is retireSnapshot's
// (retirement.ts); this adds the person as the actor and their words as the reason.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import type { UserScope } from "../domain/scope.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { clientFields } from "../domain/client-fields.ts";
import { retirementReasonSchema, retireSnapshot } from "./retirement.ts";

export const retireSnapshotByUserInput = z.strictObject({ snapshotId: entityIdSchema, reason: retirementReasonSchema });
export type RetireSnapshotByUserInput = z.input<typeof retireSnapshotByUserInput>;

/** Retires one snapshot for a dashboard user; the audit event carries the user and the reason. */
export async function retireSnapshotByUser(db: Db, opts: RetireSnapshotByUserInput & { user: UserScope }) {
  const input = retireSnapshotByUserInput.parse(clientFields(opts, "user"));
  return retireSnapshot(db, {
    snapshotId: input.snapshotId,
    actor: { type: "user", id: opts.user.userId },
    reason: input.reason,
  });
}
