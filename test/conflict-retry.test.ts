// retryingConflicts: a transaction cancelled by TransactionConflict is run again; any other failure is not. The
// errors are made here, shaped as the AWS SDK throws them: neither dynalite nor the local engine's transactions
// produce TransactionConflict (they serialize transactions), so this fault cannot be caused for real on one machine.
import { describe, expect, it } from "vitest";
import { isTransactionConflict, retryingConflicts } from "#shared/stores/dynamo.ts";

const cancelled = (...codes: string[]) =>
  Object.assign(new Error("Transaction cancelled"), {
    name: "TransactionCanceledException",
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

describe("retryingConflicts", () => {
  it("runs a transaction again while it conflicts, then answers what it answered", async () => {
    let runs = 0;
    const answer = await retryingConflicts(async () => {
      runs++;
      if (runs < 3) throw cancelled("None", "TransactionConflict");
      return "done";
    });
    expect(answer).toBe("done");
    expect(runs).toBe(3);
  });

  it("passes a failed condition (even beside a conflict) and any other error straight on", async () => {
    for (const err of [cancelled("ConditionalCheckFailed", "TransactionConflict"), new Error("network")]) {
      let runs = 0;
      await expect(
        retryingConflicts(async () => {
          runs++;
          throw err;
        }),
      ).rejects.toBe(err);
      expect(runs).toBe(1);
    }
    expect(isTransactionConflict(cancelled("ConditionalCheckFailed", "TransactionConflict"))).toBe(false);
  });

  it("gives up after its attempts, with the conflict", async () => {
    let runs = 0;
    const conflict = cancelled("TransactionConflict");
    await expect(
      retryingConflicts(async () => {
        runs++;
        throw conflict;
      }, 3),
    ).rejects.toBe(conflict);
    expect(runs).toBe(4);
  });
});
