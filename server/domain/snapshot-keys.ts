// The identities a snapshot is selected by: the repository, the baseline key and the
// checkpoint lineage key. Plain schemas and normalizers, no I/O.
import { z } from "zod";
import { identifierText } from "./text.ts";

/** A git object id: SHA-1 (40 hex) or SHA-256 (64 hex), lower case. */
export const objectIdSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, "expected a 40 or 64 character hex git object id");

/** An opaque id the API handed out (snapshot, lineage, restore). */
export const entityIdSchema = identifierText({ max: 200 });

const labelSchema = z
  .string()
  .trim()
  .min(1)
  .max(300)
  .regex(/^[^\s]+$/, "no whitespace");

export const repositoryRefSchema = z.strictObject({
  /** A credential-free identity, normally the remote URL without user info (github.com/acme/app). */
  identity: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .refine((s) => !/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(s), {
      message: "must not carry credentials (user info in the URL)",
    }),
  /** A display name; defaults to the last path segment of the identity. */
  name: identifierText({ max: 200 }).optional(),
});
export type RepositoryRef = z.infer<typeof repositoryRefSchema>;

export function repositoryDisplayName(ref: RepositoryRef): string {
  if (ref.name) return ref.name;
  const last =
    ref.identity
      .replace(/[/\\]+$/, "")
      .split(/[/\\:]/)
      .at(-1) ?? ref.identity;
  return last.replace(/\.git$/, "") || ref.identity;
}

/** The backend kind and base image a snapshot is only valid on. */
export const backendScopeSchema = z.strictObject({
  backendKind: labelSchema,
  /** An immutable base-image identity (a digest, not a moving tag). */
  baseImage: labelSchema,
});

/**
 * The canonical upstream ref of a baseline: a branch. `main` and `refs/heads/main` name the
 * same key, so both are accepted and stored in the full form.
 */
export const canonicalRefSchema = z
  .string()
  .trim()
  .min(1)
  .max(250)
  .transform((ref) => (ref.startsWith("refs/") ? ref : `refs/heads/${ref}`))
  .refine((ref) => /^refs\/heads\/[^\s~^:?*[\\]+$/.test(ref) && !ref.includes(".."), {
    message: "must be a branch (main or refs/heads/main)",
  });

export function branchOfCanonicalRef(canonicalRef: string): string {
  return canonicalRef.replace(/^refs\/heads\//, "");
}

/** A durable work identity, derived from task state, never from a conversation. */
export const workContextIdSchema = identifierText({ max: 200 }).regex(/^[^\s]+$/, "no whitespace");

export const baselineKeySchema = z.strictObject({
  repository: repositoryRefSchema,
  ...backendScopeSchema.shape,
  canonicalRef: canonicalRefSchema,
});
export type BaselineKey = z.infer<typeof baselineKeySchema>;

export const lineageKeySchema = z.strictObject({
  repository: repositoryRefSchema,
  ...backendScopeSchema.shape,
  workContextId: workContextIdSchema,
});
export type LineageKey = z.infer<typeof lineageKeySchema>;

/** Where a capture or a restore happened (attribution only). */
export const sourceSchema = z.strictObject({
  workspace: z.string().trim().min(1).max(500),
  host: identifierText({ max: 300 }),
});
export type Source = z.infer<typeof sourceSchema>;

/** The artifact a capture minted: the backend kind (server/backends) and its opaque reference. */
export const artifactSchema = z.strictObject({
  kind: z.string().trim().min(1).max(50),
  ref: z.string().min(1).max(200),
});
export type Artifact = z.infer<typeof artifactSchema>;
