import { describe, expect, it } from "vitest";
import { coalesce } from "./coalesce.ts";

/** A batch function whose calls the test releases by hand. */
function controlled<Req, Res>(answer: (req: Req) => Res) {
  const calls: { batch: Req[]; release(): void; fail(error: unknown): void }[] = [];
  const run = (batch: Req[]) =>
    new Promise<Res[]>((resolve, reject) => {
      calls.push({ batch, release: () => resolve(batch.map(answer)), fail: reject });
    });
  return { calls, run };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
/** Long enough for a finished batch's slot to be handed on (the coalescer waits one turn of the event loop). */
const tick = async () => {
  await turn();
  await turn();
};

describe("coalesce", () => {
  it("sends a lone request at once and answers it", async () => {
    const { calls, run } = controlled((n: number) => n * 2);
    const call = coalesce(run, { maxBatch: 8, maxInFlight: 1 });
    const answer = call(21);
    expect(calls.map((c) => c.batch)).toEqual([[21]]);
    calls[0]!.release();
    expect(await answer).toBe(42);
  });

  it("gathers requests that arrive while a batch runs into the next batch, answered by position", async () => {
    const { calls, run } = controlled((n: number) => `#${n}`);
    const call = coalesce(run, { maxBatch: 8, maxInFlight: 1 });
    const first = call(1);
    const rest = [2, 3, 4].map((n) => call(n));
    expect(calls.map((c) => c.batch)).toEqual([[1]]);
    calls[0]!.release();
    expect(await first).toBe("#1");
    await tick();
    expect(calls.map((c) => c.batch)).toEqual([[1], [2, 3, 4]]);
    calls[1]!.release();
    expect(await Promise.all(rest)).toEqual(["#2", "#3", "#4"]);
  });

  it("lets callers a batch answered call again before the next batch goes, so they travel together", async () => {
    const { calls, run } = controlled((n: number) => n);
    const call = coalesce(run, { maxBatch: 8, maxInFlight: 1 });
    // A closed loop: whoever is answered asks again at once (as a busy agent does), the answer
    // first passing up through a few async functions, as it does in a service.
    const again = async (n: number): Promise<number> => {
      const v = await call(n);
      for (let hop = 0; hop < 4; hop += 1) await Promise.resolve();
      return v < 10 ? again(v + 10) : v;
    };
    const loops = [again(1), again(2), again(3)];
    expect(calls.map((c) => c.batch)).toEqual([[1]]);
    calls[0]!.release();
    await tick();
    // 11 (1's next request) waits for 2 and 3 instead of 2 and 3 going first and 11 alone after.
    expect(calls.map((c) => c.batch)).toEqual([[1], [2, 3, 11]]);
    calls[1]!.release();
    await tick();
    expect(calls.map((c) => c.batch)).toEqual([[1], [2, 3, 11], [12, 13]]);
    calls[2]!.release();
    expect(await Promise.all(loops)).toEqual([11, 12, 13]);
  });

  it("keeps batches within maxBatch and runs at most maxInFlight at once", async () => {
    const { calls, run } = controlled((n: number) => n);
    const call = coalesce(run, { maxBatch: 2, maxInFlight: 2 });
    const answers = [1, 2, 3, 4, 5, 6, 7].map((n) => call(n));
    // Two go out alone at once; the rest wait for a free slot, two at a time.
    expect(calls.map((c) => c.batch)).toEqual([[1], [2]]);
    calls[0]!.release();
    await tick();
    expect(calls.map((c) => c.batch)).toEqual([[1], [2], [3, 4]]);
    calls[1]!.release();
    calls[2]!.release();
    await tick();
    expect(calls.map((c) => c.batch)).toEqual([[1], [2], [3, 4], [5, 6], [7]]);
    calls[3]!.release();
    calls[4]!.release();
    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("re-runs a failed batch one request at a time, so only the bad request fails", async () => {
    const seen: number[][] = [];
    const call = coalesce(
      async (batch: number[]) => {
        seen.push(batch);
        if (batch.includes(13)) throw new Error("13 is refused");
        return batch.map((n) => n + 1);
      },
      { maxBatch: 8, maxInFlight: 1 },
    );
    const blocker = call(0);
    const answers = [12, 13, 14].map((n) =>
      call(n).then(
        (v) => ({ v }),
        (e: Error) => ({ e: e.message }),
      ),
    );
    await blocker;
    expect(await Promise.all(answers)).toEqual([{ v: 13 }, { e: "13 is refused" }, { v: 15 }]);
    expect(seen).toEqual([[0], [12, 13, 14], [12], [13], [14]]);
  });

  it("hands a batch-wide error (a conflict) to every request of the batch without re-running it", async () => {
    let runs = 0;
    const call = coalesce(
      async (batch: number[]) => {
        runs += 1;
        if (batch.length > 1) throw new Error("deadlock detected");
        return batch;
      },
      { maxBatch: 8, maxInFlight: 1, isBatchError: (e) => /deadlock/.test((e as Error).message) },
    );
    const blocker = call(0);
    const answers = [1, 2].map((n) => call(n).catch((e: Error) => e.message));
    await blocker;
    expect(await Promise.all(answers)).toEqual(["deadlock detected", "deadlock detected"]);
    expect(runs).toBe(2);
  });
});
