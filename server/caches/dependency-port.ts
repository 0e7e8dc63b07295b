// What capturing and restoring dependency caches need from a catalog, acting as one agent: its
// content store and the two cache calls. The local one is here; the HTTP one is the CLI's
// (client/catalog-port.ts), so the same steps run against either.
import type { CaptureStore } from "../backends/backend.ts";
import { catalogContentStore, type ContentStore } from "../backends/content-store.ts";
import type { Db } from "../db/client.ts";
import type { AgentScope } from "../domain/scope.ts";
import {
  findDependencyCache,
  publishDependencyCache,
  type DependencyCache,
  type PublishDependencyCacheInput,
} from "./dependency-caches.ts";

export interface DependencyCachePort {
  store: CaptureStore & Partial<Pick<ContentStore, "readMany">>;
  find(
    input: ({ repository: { identity: string } } | { snapshotId: string }) & { envHash: string | null },
  ): Promise<{ exact: DependencyCache | null; latest: DependencyCache | null }>;
  publish(input: PublishDependencyCacheInput): Promise<{ outcome: "published" | "unchanged"; cache: DependencyCache }>;
}

export function localDependencyPort(db: Db, agent: AgentScope): DependencyCachePort {
  return {
    store: catalogContentStore(db, agent.agentId),
    find: (input) => findDependencyCache(db, { ...input, agent }),
    publish: (input) => publishDependencyCache(db, { ...input, agent }),
  };
}
