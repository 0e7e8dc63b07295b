"use client";
// The browser's tRPC client, exposed through @tanstack/react-query.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import superjson from "superjson";
import type { AppRouter } from "~/server/trpc/root.ts";
import { OFFLINE_RETRY_MS, connectionLink, isOutage } from "./connection.ts";

const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();
export { useTRPC };

/** A failure the server says is for good (a StrataError that is not retryable: not found, bad input, …). */
function isFinal(error: unknown): boolean {
  const strata = (error as { data?: { strata?: { retryable?: unknown } | null } | null } | null)?.data?.strata;
  return strata?.retryable === false;
}

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            staleTime: 5_000,
            // An outage (the server unreachable, or its catalog UNAVAILABLE) is retried every few
            // seconds until it ends, keeping the data shown (the offline banner says so); a final
            // answer (not found, bad input) is shown at once; anything else is retried once.
            retry: (failures, error) => isOutage(error) || (!isFinal(error) && failures < 1),
            retryDelay: (attempt, error) =>
              isOutage(error) ? OFFLINE_RETRY_MS : Math.min(1000 * 2 ** attempt, 30_000),
          },
        },
      }),
  );
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [connectionLink(), httpBatchLink({ url: "/api/trpc", transformer: superjson })],
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
