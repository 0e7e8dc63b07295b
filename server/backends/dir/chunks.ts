// Content-defined chunking of large files (a gear rolling hash, as FastCDC uses): a cut falls
// where the content says, not at fixed offsets, so an edit in a 100 MB file changes the pieces
// around the edit and every other piece keeps its digest and is not stored again. Files up to
// SINGLE_PIECE_BYTES are one piece.
import { createHash } from "node:crypto";

export const SINGLE_PIECE_BYTES = 1024 * 1024;
const MIN_PIECE = 256 * 1024;
const MAX_PIECE = 4 * 1024 * 1024;
/** 20 bits: a cut every 1 MiB on average past the minimum. */
const CUT_MASK = (1 << 20) - 1;

/** 256 fixed pseudo-random 32-bit values (derived, so every build cuts the same places). */
const GEAR = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    table[i] = createHash("sha256").update(`strata gear ${i}`).digest().readUInt32BE(0);
  }
  return table;
})();

/** The end offsets of the pieces of `bytes` (the last is bytes.length). */
export function pieceEnds(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  const length = bytes.length;
  if (length <= SINGLE_PIECE_BYTES) return [length];
  let start = 0;
  while (start < length) {
    const limit = Math.min(start + MAX_PIECE, length);
    let cut = limit;
    let hash = 0;
    for (let i = start + MIN_PIECE; i < limit; i++) {
      hash = ((hash << 1) + GEAR[bytes[i]!]!) >>> 0;
      if ((hash & CUT_MASK) === 0) {
        cut = i + 1;
        break;
      }
    }
    ends.push(cut);
    start = cut;
  }
  return ends;
}

export interface Piece {
  digest: string;
  bytes: Buffer;
}

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A file's pieces with their digests, and the digest of the whole file. */
export function splitPieces(bytes: Buffer): { digest: string; pieces: Piece[] } {
  const digest = sha256(bytes);
  const ends = pieceEnds(bytes);
  if (ends.length === 1) return { digest, pieces: [{ digest, bytes }] };
  let start = 0;
  const pieces = ends.map((end) => {
    const piece = bytes.subarray(start, end);
    start = end;
    return { digest: sha256(piece), bytes: piece };
  });
  return { digest, pieces };
}
