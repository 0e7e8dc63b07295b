// The backends by kind. A kind nobody registered is UNKNOWN_BACKEND: an artifact is never
// handed to a backend that did not mint it.
import { StrataError } from "../domain/errors.ts";
import type { SnapshotBackend } from "./backend.ts";
import { dirBackend } from "./dir-backend.ts";
import { gitBackend } from "./git-backend.ts";

const BACKENDS: ReadonlyMap<string, SnapshotBackend> = new Map([gitBackend, dirBackend].map((b) => [b.kind, b]));

export const BACKEND_KINDS = [...BACKENDS.keys()];

export function backendFor(kind: string): SnapshotBackend {
  const backend = BACKENDS.get(kind);
  if (!backend) {
    throw new StrataError(
      "UNKNOWN_BACKEND",
      `No backend of kind ${JSON.stringify(kind.slice(0, 100))} is known here.`,
      {
        hint: `The kinds this server knows are ${BACKEND_KINDS.join(", ")}.`,
        data: { kind: kind.slice(0, 100), known: BACKEND_KINDS },
      },
    );
  }
  return backend;
}
