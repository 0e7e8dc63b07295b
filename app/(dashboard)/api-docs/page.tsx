import { ApiDocsView } from "~/components/api-docs-view.tsx";
import { openApiDocument, OPENAPI_URL } from "~/server/openapi/openapi-document.ts";

export const metadata = { title: "API · Strata" };

export default function ApiDocsPage() {
  return (
    <>
      <h1>API</h1>
      <p className="lede">
        Every agent procedure is also served as REST under <code>/api/v1</code>, for agents in any language. This page
        is the <a href={OPENAPI_URL}>OpenAPI 3.1 document</a> the server generates from the procedures&apos; own
        schemas.
      </p>
      <ApiDocsView document={openApiDocument()} />
    </>
  );
}
