// Content identities and the rules of the layer forest, as plain data: digests, layer
// descriptors, and the checks a publish makes before it touches the database. No I/O.
import { z } from "zod";

/** Rows of blob_chunks hold at most this many bytes (a CHECK in the migrations says the same). */
export const BLOB_CHUNK_BYTES = 1024 * 1024;

/**
 * The size of the rows the blob store writes (readers accept any size up to the maximum).
 * Chosen when rows went through Prisma's client, which keeps the arguments of its last 100
 * debug calls (256 KiB rows bounded that to about 40 MiB). Rows now go straight to the driver
 * (Dialect.blobChunks), and the size stays: it bounds what one write holds in memory.
 */
export const BLOB_ROW_BYTES = 256 * 1024;

/** A blob's identity: the SHA-256 of its bytes, 64 lower-case hex characters. */
export const blobDigestSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[0-9a-f]{64}$/, "expected a sha256 hex digest (64 hex characters)");

export function isBlobDigest(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}

const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** A sealed artifact's identity, chosen by its producer and never reused for other bytes. */
export const layerUuidSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "expected a UUID")
  .refine((v) => v !== NIL_UUID, "the nil UUID names no layer");

/** What a layer is: a patch of a chain, a bundle of commits, a manifest, or a later kind. */
const layerKindSchema = z
  .string()
  .trim()
  .regex(/^[a-z][a-z0-9-]{0,31}$/, "lower-case letters, digits and '-', starting with a letter");

/**
 * One sealed artifact. Its bytes are the stored blob whose SHA-256 is `digest` (so a layer
 * references its bytes by digest, and two layers with equal bytes share one blob).
 */
export const layerDescriptorSchema = z.strictObject({
  uuid: layerUuidSchema,
  parentUuid: layerUuidSchema.nullable(),
  digest: blobDigestSchema,
  sizeBytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  kind: layerKindSchema,
});
export type LayerDescriptor = z.infer<typeof layerDescriptorSchema>;

export const publishLayersInput = z.strictObject({
  /**
   * The layers this publish relies on: every new layer, and any reused ancestor the publisher
   * wants checked. A uuid already in the catalog must match its row exactly.
   */
  layers: z.array(layerDescriptorSchema).max(10_000),
  /** The chain tops the snapshot keeps; everything beneath them is protected by reachability. */
  heads: z.array(layerUuidSchema).max(1_000),
});
export type PublishLayersInput = z.input<typeof publishLayersInput>;

/** The fields that make a layer what it is; a rebind of any of them is refused. */
export function layerDifferences(
  declared: LayerDescriptor,
  row: { parentUuid: string | null; digest: string; sizeBytes: bigint | number; kind: string },
): string[] {
  const differences: string[] = [];
  if (declared.parentUuid !== row.parentUuid) differences.push("parentUuid");
  if (declared.digest !== row.digest) differences.push("digest");
  if (BigInt(declared.sizeBytes) !== BigInt(row.sizeBytes)) differences.push("sizeBytes");
  if (declared.kind !== row.kind) differences.push("kind");
  return differences;
}

/**
 * Orders new layers so every parent comes before its children, and proves they form no cycle
 * (a parent outside `fresh` is an existing row, whose own parent is fixed). Returns the order,
 * or the uuids caught in a cycle.
 */
export function orderNewLayers(
  fresh: readonly LayerDescriptor[],
): { ok: true; order: LayerDescriptor[] } | { ok: false; cycle: string[] } {
  const byUuid = new Map(fresh.map((l) => [l.uuid, l]));
  const state = new Map<string, "visiting" | "done">();
  const order: LayerDescriptor[] = [];
  for (const start of fresh) {
    // Walk up to the first parent that is not new (or already placed), then place on the way back.
    const path: LayerDescriptor[] = [];
    let current: LayerDescriptor | undefined = start;
    while (current && state.get(current.uuid) !== "done") {
      if (state.get(current.uuid) === "visiting") {
        const from = path.findIndex((l) => l.uuid === current!.uuid);
        return { ok: false, cycle: path.slice(from).map((l) => l.uuid) };
      }
      state.set(current.uuid, "visiting");
      path.push(current);
      current = current.parentUuid ? byUuid.get(current.parentUuid) : undefined;
    }
    for (const layer of path.reverse()) {
      state.set(layer.uuid, "done");
      order.push(layer);
    }
  }
  return { ok: true, order };
}

/** The new layers no head reaches (through new layers): they would be garbage at birth. */
export function newLayersOutsideHeads(fresh: readonly LayerDescriptor[], heads: readonly string[]): string[] {
  const byUuid = new Map(fresh.map((l) => [l.uuid, l]));
  const reached = new Set<string>();
  for (const head of heads) {
    let current = byUuid.get(head);
    while (current && !reached.has(current.uuid)) {
      reached.add(current.uuid);
      current = current.parentUuid ? byUuid.get(current.parentUuid) : undefined;
    }
  }
  return fresh.filter((l) => !reached.has(l.uuid)).map((l) => l.uuid);
}

/**
 * Orders a batch of layers so that children come before their parents (collection marks
 * leaves first). Layers whose parent is outside the batch keep their relative order.
 */
export function childrenFirst<T extends { uuid: string; parentUuid: string | null }>(rows: readonly T[]): T[] {
  const inBatch = new Map(rows.map((r) => [r.uuid, r]));
  const depth = new Map<string, number>();
  const depthOf = (row: T): number => {
    const known = depth.get(row.uuid);
    if (known !== undefined) return known;
    // Iterative walk: the batch is a forest (parents are immutable and acyclic in the database).
    const chain: T[] = [];
    let current: T | undefined = row;
    let base = 0;
    while (current) {
      const d = depth.get(current.uuid);
      if (d !== undefined) {
        base = d + 1;
        break;
      }
      chain.push(current);
      current = current.parentUuid ? inBatch.get(current.parentUuid) : undefined;
      if (chain.length > inBatch.size) break;
    }
    for (let i = chain.length - 1; i >= 0; i -= 1) {
      depth.set(chain[i]!.uuid, base);
      base += 1;
    }
    return depth.get(row.uuid)!;
  };
  return [...rows].sort((a, b) => depthOf(b) - depthOf(a));
}

/** Splits rows into groups of at most `count` rows and (unless one row alone is bigger) `bytes` bytes. */
export function splitByBudget<T>(rows: readonly T[], sizeOf: (row: T) => number, count: number, bytes: number): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let total = 0;
  for (const row of rows) {
    const size = sizeOf(row);
    if (current.length > 0 && (current.length >= count || total + size > bytes)) {
      groups.push(current);
      current = [];
      total = 0;
    }
    current.push(row);
    total += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
