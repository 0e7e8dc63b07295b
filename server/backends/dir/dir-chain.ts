// Reading a `dir` snapshot's record chain: the record, its parent, … down to a full record, each
// checked against its digest; applied oldest first into the directory's state, which must have
// the digest the newest record names.
import {
  applyDirManifest,
  checkDirState,
  DIR_FULL_EVERY,
  dirStateDigest,
  filePieces,
  parseDirManifest,
  type DirManifest,
  type DirState,
} from "../../domain/dir-manifest.ts";
import { StrataError } from "../../domain/errors.ts";
import { deniedPathRule } from "../../domain/deny-list.ts";
import type { BlobSource } from "../../restore/engine/restore-blobs.ts";
import { readWhole } from "../content-store.ts";
import { sha256 } from "./chunks.ts";

export interface DirChain {
  /** The newest record (the one asked for). */
  top: DirManifest;
  /** The records' digests, newest first. */
  refs: string[];
  state: DirState;
}

function invalid(message: string, ref: string): StrataError {
  return new StrataError("INVALID_SNAPSHOT", `The dir snapshot ${ref} is not usable: ${message}.`, {
    hint: "Restore an earlier snapshot, or capture again.",
    data: { ref },
  });
}

/** Reads and checks the chain ending at `ref`: BLOB_MISSING, BLOB_CORRUPT or INVALID_SNAPSHOT. */
export async function loadDirChain(source: BlobSource, ref: string, signal?: AbortSignal): Promise<DirChain> {
  const records: DirManifest[] = [];
  const refs: string[] = [];
  let next: string | null = ref;
  while (next !== null) {
    if (refs.includes(next) || records.length > DIR_FULL_EVERY)
      throw invalid("its records form a loop or a chain too long", ref);
    const bytes = await readWhole(source, next, signal);
    if (sha256(bytes) !== next) {
      throw new StrataError("BLOB_CORRUPT", `The record ${next} does not have its digest.`, {
        hint: "Upload it again from a good copy, or restore an earlier snapshot.",
        data: { digest: next },
      });
    }
    const record = parseDirManifest(bytes);
    const below = records.at(-1);
    if (below && record.depth !== below.depth - 1) throw invalid("its records' depths do not follow each other", ref);
    records.push(record);
    refs.push(next);
    next = record.parent;
  }
  if (records.at(-1)!.depth !== 0) throw invalid("its chain does not end in a full record", ref);
  const state: DirState = new Map();
  for (const record of [...records].reverse()) applyDirManifest(state, record);
  checkDirState(state);
  for (const entry of state.values()) {
    // A capture never records a secret: a record that names one was not made by a capture.
    if (deniedPathRule(entry.type === "dir" ? `${entry.path}/` : entry.path)) {
      throw invalid(`it names ${entry.path}, which the secret deny-list never captures`, ref);
    }
  }
  const top = records[0]!;
  if (dirStateDigest(state.values()) !== top.stateDigest) throw invalid("its records do not add up to its digest", ref);
  return { top, refs, state };
}

/**
 * The stored blobs of the records from `ref` down to (not including) the first record `known`
 * says is kept already: each record itself and the pieces of the entries it adds.
 */
export async function recordContent(
  source: BlobSource,
  ref: string,
  known: (ref: string) => Promise<boolean>,
): Promise<{ digests: string[]; base: string | null }> {
  const digests = new Set<string>();
  let next: string | null = ref;
  for (let links = 0; next !== null; links++) {
    if (links > DIR_FULL_EVERY) throw invalid("its records form a loop or a chain too long", ref);
    const bytes = await readWhole(source, next);
    if (sha256(bytes) !== next) throw invalid("a record does not have its digest", ref);
    const record = parseDirManifest(bytes);
    digests.add(next);
    for (const entry of record.entries)
      if (entry.type === "file") for (const p of filePieces(entry)) digests.add(p.digest);
    if (record.parent !== null && (await known(record.parent))) return { digests: [...digests], base: record.parent };
    next = record.parent;
  }
  return { digests: [...digests], base: null };
}
