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

/**
 * Refuses a command or batch whose estimate exceeds the budget, before
 * anything is sent. An unpriced job has no upper bound, so with a budget set
 * it is refused too unless explicitly allowed.
 */
export function checkBudget(items: EstimatedItem[], budgetMicroUsd: number | null, allowUnpriced = false, committedMicroUsd = 0): BudgetCheck {
  let totalMicroUsd = 0;
  const unpriced: string[] = [];
  for (const item of items) {
    if (item.estimateMicroUsd === null) unpriced.push(item.label);
    else totalMicroUsd += item.estimateMicroUsd;
  }
  if (budgetMicroUsd === null) return { totalMicroUsd, unpriced };
  if (committedMicroUsd + totalMicroUsd > budgetMicroUsd) {
    const earlier = committedMicroUsd > 0 ? ` plus ${formatMicroUsd(committedMicroUsd)} committed by earlier runs of this command` : "";
    throw new BudgetError(
      committedMicroUsd + totalMicroUsd,
      budgetMicroUsd,
      `estimated cost ${formatMicroUsd(totalMicroUsd)}${earlier} exceeds the budget of ${formatMicroUsd(budgetMicroUsd)} (--budget-usd / MEDIAGATE_BUDGET_USD); nothing was sent`,
    );
  }
  if (unpriced.length > 0 && !allowUnpriced) {
    throw new BudgetError(
      totalMicroUsd,
      budgetMicroUsd,
      `${unpriced.length} job(s) have no price (${unpriced.slice(0, 3).join(", ")}${unpriced.length > 3 ? ", …" : ""}), so the budget of ${formatMicroUsd(budgetMicroUsd)} cannot be guaranteed; pass --allow-unpriced to run them anyway; nothing was sent`,
    );
  }
  return { totalMicroUsd, unpriced };
}
