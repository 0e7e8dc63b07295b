// The providers' capabilities (STRATA_PROVIDERS), read once: `strata serve` checked them at start.
import type { ProviderSettings } from "../backends/providers.ts";
import { loadConfig } from "../config/config.ts";

let providers: ProviderSettings | undefined;

export function configuredProviders(): ProviderSettings {
  return (providers ??= loadConfig().providers);
}
