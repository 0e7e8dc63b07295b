// Names for the references that pins and audit rows keep: a pin's holder is `agent:<id>` (or a
// person's free text), an actor an agent or user id. People read names: the agent's name, the
// user's email. A reference that names nothing known stays as it is.
import type { Db } from "../db/client.ts";

const REFERENCE = /^(agent|user):(.+)$/;

/** The display name of each reference that names a known agent or user ("agent build-bot", an email). */
async function holderNames(db: Db, references: readonly (string | null | undefined)[]) {
  const ids = { agent: new Set<string>(), user: new Set<string>() };
  for (const ref of references) {
    const m = ref ? REFERENCE.exec(ref) : null;
    if (m) ids[m[1] as "agent" | "user"].add(m[2]!);
  }
  const [agents, users] = await Promise.all([
    ids.agent.size === 0
      ? []
      : db.agent.findMany({ where: { id: { in: [...ids.agent] } }, select: { id: true, name: true } }),
    ids.user.size === 0
      ? []
      : db.user.findMany({ where: { id: { in: [...ids.user] } }, select: { id: true, email: true } }),
  ]);
  const names = new Map<string, string>();
  for (const a of agents) names.set(`agent:${a.id}`, `agent ${a.name}`);
  for (const u of users) names.set(`user:${u.id}`, u.email);
  return names;
}

/** Each row with `holderName`: the holder's name when it names an agent or user, else the holder. */
export async function withHolderNames<T extends { holder: string | null }>(
  db: Db,
  rows: readonly T[],
): Promise<(T & { holderName: string | null })[]> {
  const names = await holderNames(
    db,
    rows.map((r) => r.holder),
  );
  return rows.map((r) => ({ ...r, holderName: r.holder ? (names.get(r.holder) ?? r.holder) : null }));
}
