// A real catalog outage on sqlite, every route class (server/testing/catalog-outage.ts); one
// database kind per file, since the app's routes use the one process-wide catalog.
import { describeCatalogOutage } from "~/server/testing/catalog-outage.ts";

describeCatalogOutage("sqlite");
