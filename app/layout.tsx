import type { Metadata } from "next";
import type { ReactNode } from "react";
import { Nav } from "../components/nav.tsx";
import { Providers } from "../components/trpc.tsx";
import "./globals.css";

export const metadata: Metadata = {
  title: "Strata",
  description: "Snapshot lineage for coding-agent workspaces",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>
          <div className="shell">
            <Nav />
            <main>{children}</main>
          </div>
        </Providers>
      </body>
    </html>
  );
}
