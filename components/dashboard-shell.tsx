// The signed-in dashboard around a page: the navigation, the offline banner, and the viewer's role
// for the page's actions. The dashboard layout and the 404 both draw it.
import type { ReactNode } from "react";
import { Nav } from "./nav.tsx";
import { OfflineBanner } from "./offline-banner.tsx";
import { FocusableScrollRegions } from "./scroll-regions.tsx";
import { ViewerProvider, type Viewer } from "./viewer.tsx";

export function DashboardShell({ viewer, children }: { viewer: Viewer; children: ReactNode }) {
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Nav user={viewer} />
      <main id="main" tabIndex={-1}>
        <OfflineBanner />
        <ViewerProvider viewer={viewer}>{children}</ViewerProvider>
      </main>
      <FocusableScrollRegions within="main" />
    </div>
  );
}
