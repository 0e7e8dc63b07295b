// Request coalescing for hot database paths: calls that arrive while earlier ones are in flight
// wait and go together, so N concurrent callers cost one round trip and one commit instead of N.
// A lone call goes out at once (no timer, no added latency). A finished batch hands its slot on
// one turn of the event loop later, after the callers it answered have run: a caller that asks
// again at once then travels with the others waiting, instead of the others going without it and
// it going alone after them (with closed-loop callers that split settled into a batch of one
// between every two full ones, a round trip each). The batch function answers each
// request by position; a batch that fails with a non-retryable error is re-run one request at a
// time, so one bad request never fails its neighbours.

export interface CoalesceOptions {
  /** Most requests in one batch. */
  maxBatch: number;
  /** Most batches running at once (each holds one database connection). */
  maxInFlight: number;
  /** Errors that belong to the whole batch (conflicts): every request gets them and retries. */
  isBatchError?: (error: unknown) => boolean;
}

interface Waiting<Req, Res> {
  request: Req;
  resolve(result: Res): void;
  reject(error: unknown): void;
}

export function coalesce<Req, Res>(
  run: (batch: Req[]) => Promise<Res[]>,
  options: CoalesceOptions,
): (request: Req) => Promise<Res> {
  const queue: Waiting<Req, Res>[] = [];
  let inFlight = 0;

  async function settle(batch: Waiting<Req, Res>[]): Promise<void> {
    try {
      const results = await run(batch.map((w) => w.request));
      batch.forEach((w, i) => w.resolve(results[i] as Res));
    } catch (error) {
      if (batch.length === 1 || options.isBatchError?.(error)) {
        for (const w of batch) w.reject(error);
        return;
      }
      // Find the culprit: each request alone gets its own answer.
      for (const w of batch) await settle([w]);
    }
  }

  function pump(): void {
    while (inFlight < options.maxInFlight && queue.length > 0) {
      const batch = queue.splice(0, options.maxBatch);
      inFlight += 1;
      void settle(batch).finally(() =>
        setImmediate(() => {
          inFlight -= 1;
          pump();
        }),
      );
    }
  }

  return (request) =>
    new Promise<Res>((resolve, reject) => {
      queue.push({ request, resolve, reject });
      pump();
    });
}
