// The embedded catalog is an ordinary SQLite file: operators open, read and `.backup` it with the
// distribution's own sqlite3 (Debian 12: 3.40) and Python's sqlite3 module. Both refuse a whole
// schema that holds one construct they do not know ("malformed database schema"), so this runs
// them on a catalog with every migration applied and some rows written, on this machine's tools.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestCatalog, type TestCatalog } from "../testing/databases.ts";
import { makeAgent } from "../testing/lineage.ts";
import { removeTemporaryDirectories, temporaryDirectory } from "../testing/repos.ts";

afterAll(removeTemporaryDirectories);

function run(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

describe("the SQLite catalog with the system's sqlite3 and Python's sqlite3", () => {
  let catalog: TestCatalog;
  let file: string;

  beforeAll(async () => {
    catalog = await createTestCatalog("sqlite");
    file = catalog.url.replace(/^file:/, "");
    await makeAgent(catalog.db, "inspected");
    await makeAgent(catalog.db, "inspected");
    // The catalog stays open in WAL mode, as a running server holds it.
  });
  afterAll(async () => {
    await catalog.drop();
  });

  it("opens, checks, reads and backs up with sqlite3", () => {
    const version = run("sqlite3", ["-version"]);
    expect(version).toMatch(/^3\.\d+/);
    expect(run("sqlite3", ["-readonly", file, "PRAGMA integrity_check;"]).trim()).toBe("ok");
    expect(run("sqlite3", ["-readonly", file, "SELECT count(*) FROM agents;"]).trim()).toBe("2");
    // Every trigger and index of the schema parses (a schema the tool cannot read fails here).
    const objects = Number(run("sqlite3", ["-readonly", file, "SELECT count(*) FROM sqlite_schema;"]).trim());
    expect(objects).toBeGreaterThan(50);

    const copy = join(temporaryDirectory("strata-sqlite-backup-"), "copy.db");
    run("sqlite3", [file, `.backup '${copy}'`]);
    expect(run("sqlite3", [copy, "PRAGMA integrity_check;"]).trim()).toBe("ok");
    expect(run("sqlite3", [copy, "SELECT count(*) FROM agents;"]).trim()).toBe("2");
    // The copy holds the catalog's rules too: a snapshot state never moves backwards.
    expect(run("sqlite3", [copy, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger';"]).trim()).not.toBe("0");
  });

  it("opens, reads and backs up with Python's sqlite3", () => {
    const copy = join(temporaryDirectory("strata-sqlite-py-"), "copy.db");
    const script = [
      "import sqlite3, sys",
      "src = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)",
      "print(src.execute('PRAGMA integrity_check').fetchone()[0])",
      "print(src.execute('SELECT count(*) FROM agents').fetchone()[0])",
      "dst = sqlite3.connect(sys.argv[2])",
      "src.backup(dst)",
      "print(dst.execute('SELECT count(*) FROM agents').fetchone()[0])",
    ].join("\n");
    expect(run("python3", ["-c", script, file, copy]).trim().split("\n")).toEqual(["ok", "2", "2"]);
  });
});
