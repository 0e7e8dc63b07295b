// A service's options are the client's input plus context its caller adds (agent, user, now).
// Input schemas are strict, so a service validates only the client's part.

/** `opts` without the context keys, for parsing with the service's strict input schema. */
export function clientFields<T extends object, K extends keyof T>(opts: T, ...context: K[]): Omit<T, K> {
  const fields = { ...opts } as Record<PropertyKey, unknown>;
  for (const key of context) delete fields[key];
  return fields as Omit<T, K>;
}
