import { expect, test as base, type APIRequestContext, type Page } from "@playwright/test";

/**
 * The specs' `test`: every page a test opens must log no console error and throw no
 * uncaught exception (checked when the test ends).
 */
export const test = base.extend<{ consoleErrors: string[] }>({
  consoleErrors: [
    async ({ page }, use) => {
      const errors: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error") errors.push(`${page.url()}: ${message.text()}`);
      });
      page.on("pageerror", (error) => errors.push(`${page.url()}: ${error.message}`));
      await use(errors);
      expect(errors, "console errors on the pages this test opened").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

/**
 * Calls a tRPC procedure over HTTP: with a page's cookies, as a browser would, or through a
 * request context (an agent's, with its bearer token).
 */
export async function callTrpc(
  client: Page | APIRequestContext,
  procedure: string,
  input: unknown,
  kind: "query" | "mutation",
) {
  const request = "request" in client ? client.request : client;
  const response =
    kind === "query"
      ? await request.get(`/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`)
      : await request.post(`/api/trpc/${procedure}`, { data: { json: input } });
  const body = (await response.json()) as {
    result?: { data: { json: unknown } };
    error?: { json: { message: string; data: { code: string; httpStatus: number; strata: { code: string } | null } } };
  };
  return { status: response.status(), result: body.result?.data.json, error: body.error?.json };
}
