import { describe, expect, it } from "vitest";
import { BudgetError } from "../../src/core/errors.js";
import { checkBudget } from "../../src/engine/budget.js";
import { budgetError } from "../helpers/errors.js";

const priced = (label: string, estimateMicroUsd: number) => ({ label, estimateMicroUsd });
const unpriced = (label: string) => ({ label, estimateMicroUsd: null });

describe("the budget check before anything is sent", () => {
  it("adds up the priced estimates and lists the unpriced jobs", () => {
    expect(checkBudget([priced("a", 30_000), unpriced("b"), priced("c", 45_000)], null)).toEqual({ totalMicroUsd: 75_000, unpriced: ["b"] });
    expect(checkBudget([], null)).toEqual({ totalMicroUsd: 0, unpriced: [] });
  });

  it("without a budget nothing is refused, not even unpriced jobs", () => {
    expect(checkBudget([priced("a", 50_000_000), unpriced("b")], null, false, 10_000_000)).toEqual({ totalMicroUsd: 50_000_000, unpriced: ["b"] });
  });

  it("an estimate exactly at the budget is allowed; one micro-USD over is refused", () => {
    expect(checkBudget([priced("a", 1_000_000), priced("b", 1_000_000)], 2_000_000)).toEqual({ totalMicroUsd: 2_000_000, unpriced: [] });
    const error = budgetError(() => checkBudget([priced("a", 1_000_000), priced("b", 1_000_001)], 2_000_000));
    expect(error.code).toBe("over_budget");
    expect(error.estimateMicroUsd).toBe(2_000_001);
    expect(error.budgetMicroUsd).toBe(2_000_000);
    expect(error.message).toBe("estimated cost $2.000001 exceeds the budget of $2.0000 (--budget-usd / MEDIAGATE_BUDGET_USD); nothing was sent");
  });

  it("what earlier runs of the command committed counts against the budget and is named in the refusal", () => {
    expect(checkBudget([priced("a", 500_000)], 2_000_000, false, 1_500_000)).toEqual({ totalMicroUsd: 500_000, unpriced: [] });
    const error = budgetError(() => checkBudget([priced("a", 600_000)], 2_000_000, false, 1_500_000));
    expect(error.estimateMicroUsd).toBe(2_100_000);
    expect(error.message).toBe(
      "estimated cost $0.6000 plus $1.5000 committed by earlier runs of this command exceeds the budget of $2.0000 (--budget-usd / MEDIAGATE_BUDGET_USD); nothing was sent",
    );
  });

  it("with a budget, unpriced jobs are refused (they have no upper bound), naming up to three of them", () => {
    const error = budgetError(() => checkBudget([priced("a", 10_000), unpriced("b-1"), unpriced("b-2")], 5_000_000));
    expect(error.estimateMicroUsd).toBe(10_000);
    expect(error.budgetMicroUsd).toBe(5_000_000);
    expect(error.message).toBe(
      "2 job(s) have no price (b-1, b-2), so the budget of $5.0000 cannot be guaranteed; pass --allow-unpriced to run them anyway; nothing was sent",
    );
    const many = budgetError(() => checkBudget(["w", "x", "y", "z"].map(unpriced), 5_000_000));
    expect(many.message).toBe("4 job(s) have no price (w, x, y, …), so the budget of $5.0000 cannot be guaranteed; pass --allow-unpriced to run them anyway; nothing was sent");
    const three = budgetError(() => checkBudget(["x", "y", "z"].map(unpriced), 5_000_000));
    expect(three.message).toMatch(/^3 job\(s\) have no price \(x, y, z\), so/);
  });

  it("--allow-unpriced runs unpriced jobs under a budget, still counting the priced ones", () => {
    expect(checkBudget([priced("a", 10_000), unpriced("b")], 5_000_000, true)).toEqual({ totalMicroUsd: 10_000, unpriced: ["b"] });
    expect(() => checkBudget([priced("a", 6_000_000), unpriced("b")], 5_000_000, true)).toThrow(BudgetError);
  });

  it("a priced total over the budget is reported as such even when some jobs are also unpriced", () => {
    expect(budgetError(() => checkBudget([priced("a", 6_000_000), unpriced("b")], 5_000_000)).message).toMatch(/^estimated cost \$6\.0000 exceeds the budget/);
  });

  it("a free job (estimate zero) is priced, not unpriced", () => {
    expect(checkBudget([priced("a", 0)], 0)).toEqual({ totalMicroUsd: 0, unpriced: [] });
  });
});
