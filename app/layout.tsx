import type { Metadata } from "next";
import type { ReactNode } from "react";
import { Providers } from "~/components/trpc.tsx";
import "./globals.css";

export const metadata: Metadata = {
  title: "Strata",
  description: "Snapshot lineage for coding-agent workspaces",
  icons: { icon: "/icon.svg" },
  manifest: "/manifest.webmanifest",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
