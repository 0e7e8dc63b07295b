// `strata import` against tampered files, on SQLite and PostgreSQL: a valid export mutated the
// ways a damaged disk or a hostile sender would (fields out of range, huge, negative or of the
// wrong type, NUL and half surrogate pairs in text, deep nesting, extra keys, truncated or
// extended framing, flipped bytes, swapped digests). Every refusal is a typed error whose exit
// code is the documented one (17 a damaged file, 12 a record failing the security checks), and
// nothing is stored: the content tables keep their row counts.
import { createHash } from "node:crypto";
import { createWriteStream, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Catalog } from "../../server/db/client.ts";
import { createTestCatalog, describeEachDatabase } from "../../server/testing/databases.ts";
import { isStrataError, StrataError } from "../../server/domain/errors.ts";
import {
  blobLine,
  endLine,
  EXPORT_MAGIC,
  MAX_EXPORT_BLOB_BYTES,
  type ExportHeader,
} from "../../server/domain/export-format.ts";
import { CHECKOUT_FIXTURES } from "../../server/testing/checkouts.ts";
import { removeTemporaryDirectories, temporaryDirectory } from "../../server/testing/repos.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../../server/content/blobs.ts";
import { exportSnapshot } from "../../server/transfer/snapshot-export.ts";
import { importSnapshotFile } from "../../server/transfer/snapshot-import.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import { publishCheckpointCapture } from "../../server/testing/restore.ts";
import { EXIT } from "../output.ts";
import { exitCodeFor, RESTORE_EXIT } from "./restore.ts";
import { runStrata } from "../../server/testing/cli.ts";

afterAll(removeTemporaryDirectories);

/** The exit codes docs/restore.md documents for a refused import. */
const REFUSED = [RESTORE_EXIT.BAD_FILE, RESTORE_EXIT.INVALID_SNAPSHOT];

async function counts(db: Catalog): Promise<Record<string, number>> {
  return {
    blobs: await db.blob.count(),
    chunks: await db.blobChunk.count(),
    grants: await db.blobGrant.count(),
    snapshots: await db.snapshot.count(),
    layers: await db.layer.count(),
    heads: await db.snapshotHead.count(),
    lineages: await db.lineage.count(),
    repositories: await db.repository.count(),
  };
}

/** Writes an export from its parts with a consistent end line, as a forger would. */
function forge(file: string, headerLine: string, blobs: ReadonlyMap<string, Buffer>, list: ExportHeader["blobs"]) {
  const parts: Buffer[] = [Buffer.from(`${EXPORT_MAGIC}\n${headerLine}\n`)];
  for (const { digest, size } of list) {
    parts.push(Buffer.from(blobLine(digest, size)), blobs.get(digest) ?? Buffer.alloc(0), Buffer.from("\n"));
  }
  parts.push(Buffer.from(endLine(createHash("sha256").update(headerLine).digest("hex"))));
  writeFileSync(file, Buffer.concat(parts));
}

function split(bytes: Buffer): { header: ExportHeader; blobs: Map<string, Buffer> } {
  const first = bytes.indexOf(0x0a);
  const second = bytes.indexOf(0x0a, first + 1);
  const header = JSON.parse(bytes.subarray(first + 1, second).toString("utf8")) as ExportHeader;
  const blobs = new Map<string, Buffer>();
  let at = second + 1;
  for (const { digest, size } of header.blobs) {
    at = bytes.indexOf(0x0a, at) + 1;
    blobs.set(digest, Buffer.from(bytes.subarray(at, at + size)));
    at += size + 1;
  }
  return { header, blobs };
}

function setAt(root: unknown, path: readonly (string | number)[], value: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
}

/** Arrays nested `depth` deep, built only when the file is written (so reports stay short). */
class Nested {
  constructor(readonly depth: number) {}
  build(): unknown {
    let v: unknown = "x";
    for (let i = 0; i < this.depth; i += 1) v = [v];
    return v;
  }
}
const nested = (depth: number) => new Nested(depth);

// Values no field of its kind may hold.
const hostileText = fc.oneof(
  fc.constantFrom("a\u0000b", "\u0000", "\ud800", "x\udc00y", "tab\there", "esc\u001b[31m", "del\u007f"),
  fc.string({ minLength: 4097, maxLength: 6000 }),
  fc.constantFrom<unknown>(42, -1, true, {}, [], ["x"], { $ne: 1 }),
  fc.integer({ min: 40, max: 3000 }).map(nested),
);
const hostileNumber = fc.constantFrom<unknown>(
  -1,
  1.5,
  2 ** 31,
  2 ** 53,
  Number.MAX_SAFE_INTEGER + 2,
  1e300,
  -1e300,
  "12",
  "1e3",
  true,
  {},
  [],
);
const hostileSize = fc.oneof(
  fc.constantFrom<unknown>(
    "99999999999999999999",
    "9223372036854775808",
    "18446744073709551616",
    "-1",
    "1e3",
    "0x10",
    " 1",
    "1.0",
    "007",
    "",
    12,
    -1,
    null,
  ),
  fc.bigInt({ min: 2n ** 63n, max: 10n ** 40n }).map(String),
);
const hostileDigest = fc.oneof(
  fc.constantFrom<unknown>("0".repeat(63), "g".repeat(64), `${"a".repeat(64)}\u0000`, 64, {}),
  hostileText,
);
const hostileJson = fc.oneof(
  fc.constantFrom<unknown>({ a: "b\u0000" }, { "k\ud800": 1 }, ["\udfff"]),
  fc.integer({ min: 40, max: 3000 }).map(nested),
);

type Mutation =
  | { kind: "field"; path: (string | number)[]; value: unknown }
  | { kind: "extra-key"; at: "top" | "snapshot" | "blob"; key: string }
  | { kind: "truncate"; at: number }
  | { kind: "extend"; bytes: Uint8Array }
  | { kind: "flip"; at: number; mask: number }
  | { kind: "swap-blobs" }
  | { kind: "swap-manifest"; index: number };

function mutations(size: number, blobCount: number): fc.Arbitrary<Mutation> {
  const field = (path: readonly (string | number)[], value: fc.Arbitrary<unknown>) =>
    value.map((v): Mutation => ({ kind: "field", path: [...path], value: v }));
  const texts = [
    ["snapshot", "id"],
    ["snapshot", "repository", "identity"],
    ["snapshot", "repository", "name"],
    ["snapshot", "backendKind"],
    ["snapshot", "baseImage"],
    ["snapshot", "workContextId"],
    ["snapshot", "headCommit"],
    ["snapshot", "treeId"],
    ["snapshot", "branch"],
    ["snapshot", "state"],
    ["snapshot", "class"],
    ["snapshot", "createdAt"],
    ["exportedAt"],
    ["heads", 0],
    ["layers", 0, "uuid"],
    ["layers", 0, "kind"],
  ];
  return fc.oneof(
    fc.constantFrom(...texts).chain((path) => field(path, hostileText)),
    fc
      .constantFrom(["snapshot", "sequence"], ["format"], ["blobs", 0, "size"], ["layers", 0, "sizeBytes"])
      .chain((path) => field(path, hostileNumber)),
    fc
      .constantFrom(["blobs", 0, "size"], ["layers", 0, "sizeBytes"])
      .chain((path) => field(path, fc.constantFrom(DEFAULT_MAX_BLOB_BYTES + 1, 2 ** 62, 2 ** 63))),
    field(["snapshot", "sizeBytes"], hostileSize),
    fc
      .constantFrom(
        ["manifestBlob"],
        ["snapshot", "manifestDigest"],
        ["snapshot", "blobDigests", 0],
        ["blobs", 0, "digest"],
      )
      .chain((path) => field(path, hostileDigest)),
    field(["snapshot", "validation"], hostileJson),
    fc
      .record({
        at: fc.constantFrom("top" as const, "snapshot" as const, "blob" as const),
        key: fc.string({ minLength: 1, maxLength: 12 }),
      })
      .filter(({ key }) => !["__proto__", "constructor"].includes(key))
      .map((m): Mutation => ({ kind: "extra-key", ...m })),
    fc.nat(size - 1).map((at): Mutation => ({ kind: "truncate", at })),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes): Mutation => ({ kind: "extend", bytes })),
    fc
      .record({ at: fc.nat(size - 1), mask: fc.integer({ min: 1, max: 255 }) })
      .map((m): Mutation => ({ kind: "flip", ...m })),
    fc.constant<Mutation>({ kind: "swap-blobs" }),
    fc.nat(blobCount - 1).map((index): Mutation => ({ kind: "swap-manifest", index })),
  );
}

/** Writes the mutated file; false when the mutation does not apply to this export. */
function applyMutation(valid: Buffer, mutation: Mutation, file: string): boolean {
  if (mutation.kind === "truncate") {
    writeFileSync(file, valid.subarray(0, mutation.at));
    return true;
  }
  if (mutation.kind === "extend") {
    writeFileSync(file, Buffer.concat([valid, mutation.bytes]));
    return true;
  }
  if (mutation.kind === "flip") {
    const bytes = Buffer.from(valid);
    bytes[mutation.at] = (bytes[mutation.at] ?? 0) ^ mutation.mask;
    writeFileSync(file, bytes);
    return true;
  }
  const { header, blobs } = split(valid);
  const list = header.blobs.map((b) => ({ ...b }));
  const mutable = JSON.parse(JSON.stringify(header)) as ExportHeader & Record<string, unknown>;
  switch (mutation.kind) {
    case "field":
      setAt(mutable, mutation.path, mutation.value instanceof Nested ? mutation.value.build() : mutation.value);
      break;
    case "extra-key": {
      const target = mutation.at === "top" ? mutable : mutation.at === "snapshot" ? mutable.snapshot : mutable.blobs[0];
      if (!target || mutation.key in target) return false;
      (target as Record<string, unknown>)[mutation.key] = "extra";
      break;
    }
    case "swap-blobs":
      if (mutable.blobs.length < 2) return false;
      mutable.blobs.reverse();
      break;
    case "swap-manifest": {
      const other = mutable.blobs[mutation.index];
      if (!other || other.digest === mutable.manifestBlob) return false;
      mutable.manifestBlob = other.digest;
      break;
    }
  }
  forge(file, JSON.stringify(mutable), blobs, list);
  return true;
}

describeEachDatabase("strata import of tampered files", (catalog, kind) => {
  let exporter: TestAgent;
  let importer: TestAgent;
  let valid: Buffer;
  let validFile: string;

  beforeAll(async () => {
    const db = catalog().db;
    exporter = await makeAgent(db, "fuzz-exporter");
    importer = await makeAgent(db, "fuzz-importer");
    const captured = await CHECKOUT_FIXTURES[2]!.make();
    const snapshotId = await publishCheckpointCapture(
      db,
      exporter.scope,
      {
        repository: { identity: `example.test/acme/${uniqueName("app")}` },
        backendKind: "modal",
        baseImage: "img",
        workContextId: uniqueName("wc"),
        observedHeadId: null,
      },
      captured.manifest,
      captured.blobs,
    );
    validFile = join(temporaryDirectory("strata-fuzz-"), "valid.strata");
    const out = createWriteStream(validFile);
    await exportSnapshot(db, { agent: exporter.scope, snapshotId, out });
    out.end();
    await finished(out);
    valid = readFileSync(validFile);
  }, 120_000);

  /** Imports the file for the importer; asserts a refusal is typed, documented, and stores nothing. */
  async function expectRefusedOrImported(file: string, label: string): Promise<"refused" | "imported"> {
    const db = catalog().db;
    const before = await counts(db);
    const outcome = await importSnapshotFile(db, { agent: importer.scope, file }).then(
      () => null,
      (e: unknown) => e,
    );
    if (outcome === null) return "imported";
    expect(isStrataError(outcome), `${label}: untyped ${String(outcome)}`).toBe(true);
    if (!isStrataError(outcome)) return "refused";
    expect(REFUSED, `${label}: ${outcome.code} ${outcome.message}`).toContain(exitCodeFor(outcome, "import"));
    expect(await counts(db), label).toEqual(before);
    return "refused";
  }

  it("bounds blobs by the blob store's own limit", () => {
    expect(MAX_EXPORT_BLOB_BYTES).toBe(DEFAULT_MAX_BLOB_BYTES);
  });

  it("refuses the header of issue 13 (sizeBytes 99999999999999999999) before storing anything", async () => {
    const file = join(temporaryDirectory("strata-fuzz-"), "huge.strata");
    applyMutation(valid, { kind: "field", path: ["snapshot", "sizeBytes"], value: "99999999999999999999" }, file);
    const db = catalog().db;
    const before = await counts(db);
    const error = await importSnapshotFile(db, { agent: importer.scope, file }).catch((e: unknown) => e);
    expect(isStrataError(error, "INVALID_INPUT")).toBe(true);
    expect(error).toMatchObject({ data: { field: "snapshot.sizeBytes" } });
    expect(exitCodeFor(error as never, "import")).toBe(RESTORE_EXIT.BAD_FILE);
    expect(await counts(db)).toEqual(before);
  });

  it("refuses every tampered file with a documented exit code and stores nothing (property)", async () => {
    const blobCount = split(valid).header.blobs.length;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(mutations(valid.length, blobCount), async (mutation) => {
        const file = join(temporaryDirectory("strata-fuzz-"), "mutated.strata");
        if (!applyMutation(valid, mutation, file)) return;
        const label = JSON.stringify(mutation, (_k, v: unknown) =>
          typeof v === "string" && v.length > 80
            ? `${v.slice(0, 80)}…(${v.length})`
            : v instanceof Uint8Array
              ? `[${v.length} bytes]`
              : v,
        ).slice(0, 400);
        const result = await expectRefusedOrImported(file, label);
        // Every mutation above makes the file invalid: none may be imported.
        expect(result, label).toBe("refused");
        refused += 1;
      }),
      { numRuns: 300, seed: kind === "sqlite" ? 13 : 1313 },
    );
    expect(refused).toBeGreaterThan(250);
  }, 300_000);

  it("stores nothing lasting when recording fails after the check pass", async () => {
    // A catalog without the file's bytes, whose snapshots table refuses the import's row: the
    // check pass passes, the blobs are stored, then the record transaction fails.
    const fresh = await createTestCatalog(kind);
    const db = fresh.db;
    try {
      const agent = await makeAgent(db, "fuzz-late-failure");
      await db.$executeRawUnsafe(
        kind === "postgres"
          ? `CREATE FUNCTION fuzz_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`
          : `CREATE TRIGGER fuzz_refuse BEFORE INSERT ON snapshots BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
      );
      if (kind === "postgres") {
        await db.$executeRawUnsafe(
          `CREATE TRIGGER fuzz_refuse BEFORE INSERT ON snapshots FOR EACH ROW EXECUTE FUNCTION fuzz_refuse()`,
        );
      }
      const before = await counts(db);
      const error = await importSnapshotFile(db, { agent: agent.scope, file: validFile }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(await counts(db)).toEqual(before);
      expect(before.blobs).toBe(0);
    } finally {
      await fresh.drop();
    }
  }, 120_000);

  it("the CLI prints a typed JSON error and exits 17 for the issue's file, 12 for an unsafe record", async () => {
    const env = { DATABASE_URL: catalog().url };
    const dir = temporaryDirectory("strata-fuzz-");
    const huge = join(dir, "huge.strata");
    applyMutation(valid, { kind: "field", path: ["snapshot", "sizeBytes"], value: "99999999999999999999" }, huge);
    const before = await counts(catalog().db);
    const run = await runStrata(["import", huge, "--agent", importer.name, "--json"], env);
    expect(run.code, run.stderr).toBe(RESTORE_EXIT.BAD_FILE);
    expect(JSON.parse(run.stdout)).toMatchObject({
      error: { code: "INVALID_INPUT", data: { field: "snapshot.sizeBytes" } },
    });
    expect(run.stderr).not.toMatch(/Prisma|at .*\.ts:/);

    // A manifest whose remote is an ext:: helper: a well-formed file, an unsafe record.
    const { header, blobs } = split(valid);
    const manifest = JSON.parse(blobs.get(header.manifestBlob)!.toString("utf8")) as { remotes: { url: string }[] };
    manifest.remotes = [{ ...(manifest.remotes[0] ?? { name: "origin" }), url: "ext::sh -c touch% /tmp/pwned" }];
    const bytes = Buffer.from(JSON.stringify(manifest));
    const digest = createHash("sha256").update(bytes).digest("hex");
    blobs.set(digest, bytes);
    const list = header.blobs.map((b) => (b.digest === header.manifestBlob ? { digest, size: bytes.length } : b));
    const forged = { ...header, manifestBlob: digest, blobs: list };
    const unsafe = join(dir, "unsafe.strata");
    forge(unsafe, JSON.stringify(forged), blobs, list);
    const refused = await runStrata(["import", unsafe, "--agent", importer.name, "--json"], env);
    expect(refused.code, refused.stderr).toBe(RESTORE_EXIT.INVALID_SNAPSHOT);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: "INVALID_SNAPSHOT" } });

    const truncated = join(dir, "truncated.strata");
    writeFileSync(truncated, valid.subarray(0, valid.length - 10));
    const short = await runStrata(["import", truncated, "--agent", importer.name], env);
    expect(short.code).toBe(RESTORE_EXIT.BAD_FILE);
    expect(short.stderr).toMatch(/\[INVALID_INPUT\]/);
    expect(await counts(catalog().db)).toEqual(before);
  }, 120_000);

  it("maps the failures that are not the file's fault to exit 1", () => {
    for (const code of ["LAYER_CONFLICT", "BLOB_MISSING", "CONFLICT", "INTERNAL", "UNAVAILABLE"] as const) {
      const expected = code === "UNAVAILABLE" ? RESTORE_EXIT.UNAVAILABLE : EXIT.FAILURE;
      expect(exitCodeFor(new StrataError(code, "x"), "import"), code).toBe(expected);
    }
    expect(exitCodeFor(new StrataError("BLOB_CORRUPT", "x"), "import")).toBe(RESTORE_EXIT.BAD_FILE);
    expect(exitCodeFor(new StrataError("INVALID_INPUT", "x"), "import")).toBe(RESTORE_EXIT.BAD_FILE);
    expect(exitCodeFor(new StrataError("INVALID_SNAPSHOT", "x"), "import")).toBe(RESTORE_EXIT.INVALID_SNAPSHOT);
  });
});
