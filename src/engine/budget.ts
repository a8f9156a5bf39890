import { BudgetError } from "../core/errors.js";
import { formatMicroUsd } from "../core/money.js";

export interface EstimatedItem {
  label: string;
  estimateMicroUsd: number | null;
}

export interface BudgetCheck {
  totalMicroUsd: number;
  unpriced: string[];
}

/** How a refusal names the budget, so that each caller reads its own words (an API client is not told of CLI flags). */
export interface BudgetWording {
  /** The budget: "the budget of $1.00". */
  budget(ceiling: string): string;
  /** Where it was set, said when it is passed: " (--budget-usd / MEDIAGATE_BUDGET_USD)". */
  setBy: string;
  /** What committed the rest: "earlier runs of this command". */
  committedBy: string;
  /** What to do about unpriced jobs. */
  unpricedRemedy: string;
}

/** A CLI command's budget (`--budget-usd` or MEDIAGATE_BUDGET_USD). */
export const COMMAND_BUDGET: BudgetWording = {
  budget: (ceiling) => `the budget of ${ceiling}`,
  setBy: " (--budget-usd / MEDIAGATE_BUDGET_USD)",
  committedBy: "earlier runs of this command",
  unpricedRemedy: "pass --allow-unpriced to run them anyway",
};

/**
 * Refuses a command or batch whose estimate exceeds the budget, before
 * anything is sent. An unpriced job has no upper bound, so with a budget set
 * it is refused too unless explicitly allowed.
 */
export function checkBudget(items: EstimatedItem[], budgetMicroUsd: number | null, allowUnpriced = false, committedMicroUsd = 0, wording: BudgetWording = COMMAND_BUDGET): BudgetCheck {
  let totalMicroUsd = 0;
  const unpriced: string[] = [];
  for (const item of items) {
    if (item.estimateMicroUsd === null) unpriced.push(item.label);
    else totalMicroUsd += item.estimateMicroUsd;
  }
  if (budgetMicroUsd === null) return { totalMicroUsd, unpriced };
  if (committedMicroUsd + totalMicroUsd > budgetMicroUsd) {
    const earlier = committedMicroUsd > 0 ? ` plus ${formatMicroUsd(committedMicroUsd)} committed by ${wording.committedBy}` : "";
    throw new BudgetError(
      committedMicroUsd + totalMicroUsd,
      budgetMicroUsd,
      `estimated cost ${formatMicroUsd(totalMicroUsd)}${earlier} exceeds ${wording.budget(formatMicroUsd(budgetMicroUsd))}${wording.setBy}; nothing was sent`,
    );
  }
  if (unpriced.length > 0 && !allowUnpriced) {
    throw new BudgetError(
      totalMicroUsd,
      budgetMicroUsd,
      `${unpriced.length} job(s) have no price (${unpriced.slice(0, 3).join(", ")}${unpriced.length > 3 ? ", …" : ""}), so ${wording.budget(formatMicroUsd(budgetMicroUsd))} cannot be guaranteed; ${wording.unpricedRemedy}; nothing was sent`,
    );
  }
  return { totalMicroUsd, unpriced };
}
