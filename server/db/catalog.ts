// The process-wide catalog handle used by the web app. Tests open their own handles and pass
// them to services directly; nothing else should hold a global database.
import { loadConfig } from "../config/config.ts";
import { openCatalog, type CatalogHandle, type Db } from "./client.ts";

export type { Db, CatalogHandle };

const globalRef = globalThis as unknown as { __strataCatalog?: CatalogHandle };

/** Opens the catalog named by the configuration on first use (never during `next build`). */
export function getCatalog(): CatalogHandle {
  if (!globalRef.__strataCatalog) {
    const config = loadConfig();
    globalRef.__strataCatalog = openCatalog(config.databaseUrl);
  }
  return globalRef.__strataCatalog;
}
