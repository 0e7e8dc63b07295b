// The audit log: every retirement and every operator or support action, with who and why.
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";

export type AuditActor =
  { type: "agent"; id: string } | { type: "user"; id: string } | { type: "system"; id?: string | null };

export interface AuditEventInput {
  actor: AuditActor;
  action: string;
  subjectType: string;
  subjectId: string;
  reason?: string | null;
  details?: Prisma.InputJsonValue;
  at?: Date;
}

/** Records one audit event; call it in the transaction of the change it describes. */
export async function recordAuditEvent(db: Db, event: AuditEventInput): Promise<void> {
  await db.auditEvent.create({
    data: {
      actorType: event.actor.type,
      actorId: event.actor.id ?? null,
      action: event.action,
      subjectType: event.subjectType,
      subjectId: event.subjectId,
      reason: event.reason ?? null,
      ...(event.details === undefined ? {} : { details: event.details }),
      ...(event.at ? { at: event.at } : {}),
    },
  });
}
