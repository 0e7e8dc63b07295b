// SQLite has one connection per client. Prisma's adapter serializes transactions, but a plain
// query issued while another request's transaction is open would run inside that transaction.
// This wrapper queues every statement behind open transactions, and makes each transaction take
// the write lock when it begins, so two processes on one file queue instead of failing to
// upgrade a read lock (SQLITE_BUSY).
import type { SqlDriverAdapter, SqlDriverAdapterFactory, SqlQuery, Transaction } from "@prisma/driver-adapter-utils";

class Gate {
  #tail: Promise<void> = Promise.resolve();

  /** Waits for every earlier holder, then returns the function that lets the next one in. */
  async enter(): Promise<() => void> {
    let open!: () => void;
    const mine = new Promise<void>((resolve) => (open = resolve));
    const before = this.#tail;
    this.#tail = before.then(() => mine);
    await before;
    return open;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const leave = await this.enter();
    try {
      return await fn();
    } finally {
      leave();
    }
  }
}

// A write that changes nothing still makes SQLite take the RESERVED lock for the transaction.
const TAKE_WRITE_LOCK: SqlQuery = { sql: "DELETE FROM leases WHERE 0", args: [], argTypes: [] };

function wrapAdapter(inner: SqlDriverAdapter): SqlDriverAdapter {
  const gate = new Gate();
  return {
    provider: inner.provider,
    adapterName: inner.adapterName,
    queryRaw: (q) => gate.run(() => inner.queryRaw(q)),
    executeRaw: (q) => gate.run(() => inner.executeRaw(q)),
    executeScript: (s) => gate.run(() => inner.executeScript(s)),
    getConnectionInfo: inner.getConnectionInfo?.bind(inner),
    dispose: () => gate.run(() => inner.dispose()),
    async startTransaction(isolationLevel) {
      const leave = await gate.enter();
      let tx: Transaction;
      try {
        tx = await inner.startTransaction(isolationLevel);
        await tx.executeRaw(TAKE_WRITE_LOCK).catch(async (error: unknown) => {
          await tx.rollback();
          throw error;
        });
      } catch (error) {
        leave();
        throw error;
      }
      let done = false;
      const finish = async (how: () => Promise<void>) => {
        try {
          await how();
        } finally {
          if (!done) {
            done = true;
            leave();
          }
        }
      };
      return {
        provider: tx.provider,
        adapterName: tx.adapterName,
        options: tx.options,
        queryRaw: (q) => tx.queryRaw(q),
        executeRaw: (q) => tx.executeRaw(q),
        commit: () => finish(() => tx.commit()),
        rollback: () => finish(() => tx.rollback()),
      };
    },
  };
}

/** A serialized SQLite adapter factory, and the adapter it connected (for the dialect's byte paths). */
export interface SerialSqlite {
  factory: SqlDriverAdapterFactory;
  /** The adapter Prisma's client connected through this factory; null before it connects. */
  connected(): SqlDriverAdapter | null;
}

/** Wraps a SQLite adapter factory; see the file comment. */
export function serializeSqlite<F extends SqlDriverAdapterFactory>(factory: F): SerialSqlite {
  let adapter: SqlDriverAdapter | null = null;
  return {
    factory: {
      provider: factory.provider,
      adapterName: factory.adapterName,
      connect: async () => {
        const wrapped = wrapAdapter(await factory.connect());
        const dispose = wrapped.dispose;
        wrapped.dispose = () => {
          if (adapter === wrapped) adapter = null;
          return dispose();
        };
        // WAL lets readers in other processes continue while one process writes.
        await wrapped.executeScript("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;");
        adapter = wrapped;
        return wrapped;
      },
    },
    connected: () => adapter,
  };
}
