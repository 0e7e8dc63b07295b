// Workspace providers and what each can promise. A lineage key's `backendKind` is the label of
// the provider that runs the work context's workspaces ("local", "modal", "fly"…); the artifact
// backends of this folder (git, dir) are how files become snapshots, whatever the provider.
//
// Two capabilities matter to the catalog:
// - `snapshots`: the provider can mint and mount snapshot artifacts. One without them starts
//   cold when no held workspace remains (its workspaces are not restored from checkpoints).
// - `idlePersistentHolds`: the provider keeps an unreleased workspace's files while its compute
//   sleeps, so a paused work context may hold its live workspace for 14 days instead of the
//   one-hour handoff window every other provider gets. A hold is never a backup: the pause's
//   checkpoint is appended first, and restored once the hold is over.
//
// Every label has the default capabilities (snapshots, no idle persistence) unless STRATA_PROVIDERS
// says otherwise (server/config/config.ts reads and checks it once; this module only applies it).

export interface ProviderCapabilities {
  snapshots: boolean;
  idlePersistentHolds: boolean;
}

/** What STRATA_PROVIDERS set, by provider label: only the capabilities it named. */
export type ProviderSettings = Readonly<Record<string, Partial<ProviderCapabilities>>>;

const DEFAULT_CAPABILITIES: ProviderCapabilities = { snapshots: true, idlePersistentHolds: false };

const HOUR_MS = 60 * 60 * 1000;

/** How long a paused work context holds its live workspace on an idle-persistent provider. */
export const IDLE_PERSISTENT_HOLD_MS = 14 * 24 * HOUR_MS;
/** The handoff window of every other provider. */
export const HANDOFF_HOLD_MS = HOUR_MS;

/** The capabilities of the provider `label` (the defaults for a label the settings do not name). */
export function providerCapabilities(settings: ProviderSettings, label: string): ProviderCapabilities {
  const named = Object.hasOwn(settings, label) ? settings[label] : undefined;
  return { ...DEFAULT_CAPABILITIES, ...named };
}

/** How long a live hold on a workspace of a provider with these capabilities lasts. */
export function liveHoldDurationMs(capabilities: ProviderCapabilities): number {
  return capabilities.idlePersistentHolds ? IDLE_PERSISTENT_HOLD_MS : HANDOFF_HOLD_MS;
}
