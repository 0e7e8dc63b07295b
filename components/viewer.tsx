"use client";
// The signed-in user, for pages that show or hide actions by role. Hiding is only a courtesy:
// every mutation checks the role again on the server.
import { createContext, useContext, type ReactNode } from "react";
import { roleMay, type StaffAction, type UserRole } from "~/server/domain/scope.ts";

export interface Viewer {
  email: string;
  role: UserRole;
}

const ViewerContext = createContext<Viewer | null>(null);

export function ViewerProvider({ viewer, children }: { viewer: Viewer; children: ReactNode }) {
  return <ViewerContext.Provider value={viewer}>{children}</ViewerContext.Provider>;
}

function useViewer(): Viewer | null {
  return useContext(ViewerContext);
}

/** Whether the viewer's role may do `action` (ROLES in server/domain/scope.ts). */
export function useCan(action: StaffAction): boolean {
  const role = useViewer()?.role;
  return role ? roleMay(role, action) : false;
}
