"use client";
// The signed-in user, for pages that show or hide actions by role. Hiding is only a courtesy:
// every mutation checks the role again on the server.
import { createContext, useContext, type ReactNode } from "react";

type ViewerRole = "operator" | "support" | "admin";
export interface Viewer {
  email: string;
  role: ViewerRole;
}

const ViewerContext = createContext<Viewer | null>(null);

export function ViewerProvider({ viewer, children }: { viewer: Viewer; children: ReactNode }) {
  return <ViewerContext.Provider value={viewer}>{children}</ViewerContext.Provider>;
}

function useViewer(): Viewer | null {
  return useContext(ViewerContext);
}

/** Operators and admins retire; support and admins discard; admins run collection. */
export function useCan(action: "retire" | "discard" | "collect"): boolean {
  const role = useViewer()?.role;
  if (!role) return false;
  if (action === "retire") return role === "operator" || role === "admin";
  if (action === "discard") return role === "support" || role === "admin";
  return role === "admin";
}
