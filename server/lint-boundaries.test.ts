// The import boundary is a lint rule, so it is tested like code: routers and components that
// reach for the database must fail `npm run lint`.
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint();

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? "");
}

describe("import boundaries", () => {
  it.each([
    [
      "server/trpc/routers/example.ts",
      'import { openCatalog } from "../../db/client.ts";\nexport const x = openCatalog;\n',
    ],
    [
      "server/trpc/routers/example.ts",
      'import { PrismaClient } from "@prisma/client";\nexport const x = PrismaClient;\n',
    ],
    [
      "components/example.tsx",
      'import { openCatalog } from "../server/db/client.ts";\nexport const x = openCatalog;\n',
    ],
    ["components/example.tsx", 'import pg from "pg";\nexport const x = pg;\n'],
  ])("%s may not import the database (%#)", async (file, code) => {
    expect(await ruleIds(code, file)).toContain("no-restricted-imports");
  });

  it("services may use the database", async () => {
    const code = 'import { openCatalog } from "../db/client.ts";\nexport const x = openCatalog;\n';
    expect(await ruleIds(code, "server/services/example.ts")).not.toContain("no-restricted-imports");
  });
});
