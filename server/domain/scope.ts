// Who is calling. These types can only be made by the authentication gate
// (server/auth/agents.ts for agents; dashboard sign-in for users), so a service that takes
// an AgentScope knows the id was proven by a token, not taken from input.

/** How often an agent token's use is recorded (`lastUsedAt`): at most once in this window. */
export const TOKEN_USE_RECORDED_EVERY_MS = 60_000;

// The brands are plain property names (not unique symbols) so that the SDK's generated type
// declarations (client/) can name these types wherever they appear.
export type AgentScope = { readonly agentId: string; readonly agentName: string } & { readonly __agentScope: true };

export type UserRole = "operator" | "support" | "admin";
export const USER_ROLES: readonly UserRole[] = ["operator", "support", "admin"];

/**
 * The roles each dashboard action needs. The server checks them on every call (the procedures
 * of server/trpc/init.ts); pages only hide what the viewer's role may not do (components/viewer.tsx).
 */
export const ROLES = {
  /** Read the dashboard's pages. */
  view: USER_ROLES,
  /** Preview and retire snapshots and lineages. */
  retire: ["operator", "admin"],
  /** Fork new work contexts from a ready checkpoint (an authorized retry or fan-out). */
  fork: ["operator", "admin"],
  /** Discard a degraded or unrestored restore from the queue. */
  discard: ["support", "admin"],
  /** Run and inspect garbage collection. */
  collect: ["admin"],
} as const satisfies Record<string, readonly UserRole[]>;
export type StaffAction = keyof typeof ROLES;

export function roleMay(role: UserRole, action: StaffAction): boolean {
  return (ROLES[action] as readonly UserRole[]).includes(role);
}

export type UserScope = { readonly userId: string; readonly email: string; readonly role: UserRole } & {
  readonly __userScope: true;
};

/** For the authentication gates and tests only. */
export function trustAgent(agentId: string, agentName: string): AgentScope {
  return { agentId, agentName } as AgentScope;
}

/** For the authentication gates and tests only. */
export function trustUser(userId: string, email: string, role: UserRole): UserScope {
  return { userId, email, role } as UserScope;
}
