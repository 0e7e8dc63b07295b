"use client";
// The browser's tRPC client, exposed through @tanstack/react-query.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import superjson from "superjson";
import type { AppRouter } from "~/server/trpc/root.ts";
import { CATALOG_RETRY_MS, isCatalogUnavailable } from "./catalog-unavailable.tsx";

const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();
export { useTRPC };

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            staleTime: 5_000,
            // A catalog outage (UNAVAILABLE) is retried every few seconds until it ends, keeping the
            // data shown (CatalogStatusNotice says so); any other failure is retried once.
            retry: (failures, error) => isCatalogUnavailable(error) || failures < 1,
            retryDelay: (attempt, error) =>
              isCatalogUnavailable(error) ? CATALOG_RETRY_MS : Math.min(1000 * 2 ** attempt, 30_000),
          },
        },
      }),
  );
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: "/api/trpc", transformer: superjson })],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
