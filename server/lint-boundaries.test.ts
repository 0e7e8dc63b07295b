// The import graph is a lint rule (eslint.config.mjs), so it is tested like code: an import
// against it must fail `npm run lint`, and the imports the layout allows must pass. So is the
// database seam: raw SQL outside server/db/ must fail too.
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint();

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? "");
}

const importing = (from: string) => `import * as imported from "${from}";\nexport const x = imported;\n`;

describe("import boundaries", () => {
  it.each([
    ["server/trpc/routers/example.ts", importing("../../db/client.ts")],
    ["server/trpc/routers/example.ts", importing("@prisma/client")],
    ["components/example.tsx", importing("../server/db/client.ts")],
    ["components/example.tsx", importing("~/server/db/client.ts")],
    ["components/example.tsx", importing("pg")],
  ])("%s may not import the database (%#)", async (file, code) => {
    expect(await ruleIds(code, file)).toContain("no-restricted-imports");
  });

  it.each([
    ["a component importing a capability", "components/example.tsx", "../server/lineage/snapshots.ts"],
    ["a page importing a capability", "app/(dashboard)/example/page.tsx", "../../../server/content/pins.ts"],
    ["a page importing a capability by the ~/ alias", "app/(dashboard)/example/page.tsx", "~/server/content/pins.ts"],
    ["a component importing a capability by the ~/ alias", "components/example.tsx", "~/server/lineage/snapshots.ts"],
    ["a capability importing a router", "server/lineage/example.ts", "../trpc/root.ts"],
    ["a capability importing the worker", "server/restore/example.ts", "../jobs/worker.ts"],
    ["a cycle: content under lineage importing it back", "server/content/example.ts", "../lineage/snapshots.ts"],
    ["a cycle: audit under lineage importing it back", "server/audit/example.ts", "../lineage/lineages.ts"],
    ["a cycle: acquire under restore importing it back", "server/acquire/example.ts", "../restore/restore-snapshot.ts"],
    ["git importing the database", "server/git/example.ts", "../db/client.ts"],
    ["git importing the capture engine", "server/git/example.ts", "../capture/engine/capture.ts"],
    ["the capture engine importing the database", "server/capture/engine/example.ts", "../../db/client.ts"],
    ["the restore engine importing the database", "server/restore/engine/example.ts", "../../db/client.ts"],
    ["the capture engine importing its service", "server/capture/engine/example.ts", "../capture-publish.ts"],
    ["domain importing anything of the server", "server/domain/example.ts", "../db/client.ts"],
    ["production code importing test support", "server/lineage/example.ts", "../testing/lineage.ts"],
  ])("refuses %s", async (_what, file, target) => {
    expect(await ruleIds(importing(target), file)).toContain("boundaries/dependencies");
  });

  it.each([
    ["a capability importing one further down", "server/lineage/example.ts", "../content/pins.ts"],
    ["a capability importing the database", "server/acquire/example.ts", "../db/client.ts"],
    ["a router importing a capability", "server/trpc/routers/example.ts", "../../lineage/snapshots.ts"],
    ["the CLI importing a capability", "cli/example.ts", "../server/capture/capture-publish.ts"],
    ["a service importing its engine", "server/restore/example.ts", "./engine/restore.ts"],
    [
      "the restore engine importing the capture engine",
      "server/restore/engine/example.ts",
      "../../capture/engine/omitted.ts",
    ],
    ["an engine importing git", "server/capture/engine/example.ts", "../../git/runner.ts"],
    ["a page importing a component by the ~/ alias", "app/(dashboard)/example/page.tsx", "~/components/nav.tsx"],
    ["a component importing the domain by the ~/ alias", "components/example.tsx", "~/server/domain/scope.ts"],
    ["a test importing test support", "server/lineage/example.test.ts", "../testing/lineage.ts"],
  ])("allows %s", async (_what, file, target) => {
    const ids = await ruleIds(importing(target), file);
    expect(ids.filter((id) => id.startsWith("boundaries/") || id === "no-restricted-imports")).toEqual([]);
  });
});

/** A module that runs a raw query through the handle it imports from `client`. */
const rawQuery = (client: string, call: string) =>
  `import type { Db } from "${client}";\nexport const run = (db: Db) => ${call};\n`;

describe("raw SQL", () => {
  it.each([
    [
      "$queryRawUnsafe in a capability",
      "server/gc/example.ts",
      rawQuery("../db/client.ts", `db.$queryRawUnsafe("SELECT 1")`),
    ],
    [
      "$executeRaw in a capability",
      "server/content/example.ts",
      rawQuery("../db/client.ts", "db.$executeRaw`DELETE FROM pins`"),
    ],
    [
      "$queryRaw by a computed name",
      "server/lineage/example.ts",
      rawQuery("../db/client.ts", `db["$queryRaw"]\`SELECT 1\``),
    ],
    ["$queryRawTyped in the CLI", "cli/example.ts", rawQuery("../server/db/client.ts", "db.$queryRawTyped")],
  ])("refuses %s", async (_what, file, code) => {
    expect(await ruleIds(code, file)).toContain("no-restricted-syntax");
  });

  it.each([
    [
      "a statement module",
      "server/db/statements/example.ts",
      rawQuery("../client.ts", `db.$queryRawUnsafe("SELECT 1")`),
    ],
    ["a test", "server/gc/example.test.ts", rawQuery("../db/client.ts", `db.$queryRawUnsafe("SELECT 1")`)],
  ])("allows it in %s", async (_what, file, code) => {
    expect(await ruleIds(code, file)).not.toContain("no-restricted-syntax");
  });
});
