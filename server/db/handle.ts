// The type every service takes for the database: the catalog client or an open transaction.
// Its own module so that client.ts (which opens handles) and dialect.ts (which every handle
// carries) both use it without importing each other.
import type { Prisma, PrismaClient } from "./generated/postgres/client.ts";

/** A database handle: the client itself or an open transaction. Services take this. */
export type Db = PrismaClient | Prisma.TransactionClient;
