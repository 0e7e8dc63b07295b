// Walks a zod input schema: the objects in it that would silently drop unknown keys, and the
// keys an object at a given path knows (for "did you mean" suggestions).
import type { z } from "zod";

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  items?: z.ZodType[];
  rest?: z.ZodType | null;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  getter?: () => z.ZodType;
};

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schemas directly inside `schema` (object fields, array elements, union options…). */
function children(def: Def): z.ZodType[] {
  switch (def.type) {
    case "object":
      return Object.values(def.shape ?? {});
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
    case "nonoptional":
      return def.innerType ? [def.innerType] : [];
    case "pipe":
      return [def.in, def.out].filter((s): s is z.ZodType => Boolean(s));
    case "array":
      return def.element ? [def.element] : [];
    case "union":
      return def.options ?? [];
    case "intersection":
      return [def.left, def.right].filter((s): s is z.ZodType => Boolean(s));
    case "tuple":
      return [...(def.items ?? []), ...(def.rest ? [def.rest] : [])];
    case "record":
    case "map":
      return [def.keyType, def.valueType].filter((s): s is z.ZodType => Boolean(s));
    case "lazy":
      return def.getter ? [def.getter()] : [];
    default:
      return [];
  }
}

/** Paths of the object schemas in `schema` that accept unknown keys (empty when all are strict). */
export function laxInputObjects(schema: z.ZodType, path = "input", seen = new Set<z.ZodType>()): string[] {
  if (seen.has(schema)) return [];
  seen.add(schema);
  const def = defOf(schema);
  const lax: string[] = [];
  if (
    def.type === "object" &&
    defOf(def.catchall ?? ({ _zod: { def: { type: "unknown" } } } as never)).type !== "never"
  ) {
    lax.push(path);
  }
  if (def.type === "record" || def.type === "unknown" || def.type === "any") lax.push(`${path} (${def.type})`);
  const shape = def.type === "object" ? (def.shape ?? {}) : null;
  for (const child of children(def)) {
    const key = shape ? Object.entries(shape).find(([, s]) => s === child)?.[0] : undefined;
    const childPath = key ? `${path}.${key}` : def.type === "array" ? `${path}[]` : path;
    lax.push(...laxInputObjects(child, childPath, seen));
  }
  return lax;
}

/** The keys an object in `schema` at `path` knows (every option's, under a union). */
export function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const keys = new Set<string>();
  const visit = (s: z.ZodType, rest: readonly PropertyKey[], depth: number) => {
    if (depth > 64) return;
    const def = defOf(s);
    if (def.type === "object") {
      if (rest.length === 0) {
        for (const k of Object.keys(def.shape ?? {})) keys.add(k);
        return;
      }
      const next = def.shape?.[String(rest[0])];
      if (next) visit(next, rest.slice(1), depth + 1);
      return;
    }
    if (def.type === "array" || def.type === "tuple") {
      if (rest.length === 0) return;
      for (const child of children(def)) visit(child, rest.slice(1), depth + 1);
      return;
    }
    for (const child of children(def)) visit(child, rest, depth + 1);
  };
  visit(schema, path, 0);
  return [...keys];
}
