/** The content of the `.env` the worker spec's checkout holds: denied, so never captured, restored or logged. */
export const DENIED_SECRET = "e2e-denied-dotenv-3c9f7a21d85e";
