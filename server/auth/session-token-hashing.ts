// better-auth keeps each session's bearer token in the sessions table as it is. This wraps its
// database adapter so the table holds sha256(token) instead: lookups hash the presented token,
// and a row found by token is handed back with the token the caller presented, so cookies that
// better-auth refreshes keep the real value. A copied database then holds no usable session.
import { createHash } from "node:crypto";
import type { DBAdapter, Where } from "@better-auth/core/db/adapter";

const SESSION_MODEL = "session";

function digest(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

function hashWhere(where: Where[] | undefined): Where[] | undefined {
  return where?.map((w) => {
    if (w.field !== "token") return w;
    if (typeof w.value === "string") return { ...w, value: digest(w.value) };
    if (Array.isArray(w.value)) return { ...w, value: (w.value as string[]).map(digest) } as Where;
    return w;
  });
}

/** The raw token a where-clause asked for by equality, if any. */
function presentedToken(where: Where[] | undefined): string | undefined {
  const w = where?.find((c) => c.field === "token" && (c.operator ?? "eq") === "eq" && typeof c.value === "string");
  return w?.value as string | undefined;
}

function withToken<T>(row: T | null, token: string | undefined): T | null {
  if (!row || token === undefined || typeof row !== "object" || !("token" in row)) return row;
  return { ...row, token };
}

function hashUpdate(update: Record<string, unknown>): Record<string, unknown> {
  return typeof update.token === "string" ? { ...update, token: digest(update.token) } : update;
}

type AnyAdapter = Omit<DBAdapter, "transaction"> & { transaction?: DBAdapter["transaction"] };

export function hashSessionTokens<A extends AnyAdapter>(adapter: A): A {
  const wrapped: AnyAdapter = {
    ...adapter,
    async create(args) {
      if (args.model !== SESSION_MODEL) return adapter.create(args);
      const data = args.data as Record<string, unknown>;
      const row = await adapter.create({ ...args, data: hashUpdate(data) as typeof args.data });
      return withToken(row as Record<string, unknown>, data.token as string | undefined) as typeof row;
    },
    async findOne(args) {
      if (args.model !== SESSION_MODEL) return adapter.findOne(args);
      const row = await adapter.findOne({ ...args, where: hashWhere(args.where)! });
      return withToken(row, presentedToken(args.where));
    },
    findMany: (args) =>
      args.model === SESSION_MODEL
        ? adapter.findMany({ ...args, where: hashWhere(args.where) })
        : adapter.findMany(args),
    count: (args) =>
      args.model === SESSION_MODEL ? adapter.count({ ...args, where: hashWhere(args.where) }) : adapter.count(args),
    async update(args) {
      if (args.model !== SESSION_MODEL) return adapter.update(args);
      const row = await adapter.update({ ...args, where: hashWhere(args.where)!, update: hashUpdate(args.update) });
      return withToken(row, (args.update.token as string | undefined) ?? presentedToken(args.where));
    },
    updateMany: (args) =>
      args.model === SESSION_MODEL
        ? adapter.updateMany({ ...args, where: hashWhere(args.where)!, update: hashUpdate(args.update) })
        : adapter.updateMany(args),
    delete: (args) =>
      args.model === SESSION_MODEL ? adapter.delete({ ...args, where: hashWhere(args.where)! }) : adapter.delete(args),
    deleteMany: (args) =>
      args.model === SESSION_MODEL
        ? adapter.deleteMany({ ...args, where: hashWhere(args.where)! })
        : adapter.deleteMany(args),
    consumeOne: (args) =>
      args.model === SESSION_MODEL
        ? adapter.consumeOne({ ...args, where: hashWhere(args.where)! })
        : adapter.consumeOne(args),
    incrementOne: (args) =>
      args.model === SESSION_MODEL
        ? adapter.incrementOne({ ...args, where: hashWhere(args.where)! })
        : adapter.incrementOne(args),
  };
  if (adapter.transaction) {
    const transaction = adapter.transaction.bind(adapter);
    wrapped.transaction = (callback) => transaction((trx) => callback(hashSessionTokens(trx)));
  }
  return wrapped as A;
}
