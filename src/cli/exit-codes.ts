/** Exit codes of every command (documented in the README). */
export const EXIT = {
  ok: 0,
  /** At least one job failed, was cancelled, or did not run. */
  jobsFailed: 1,
  /** Invalid input or usage: nothing was sent. */
  invalidInput: 2,
  /** Missing or wrong configuration: nothing was sent. */
  notConfigured: 3,
  /** The estimate exceeds the budget: nothing was sent. */
  overBudget: 4,
  /** Interrupted (Ctrl-C): detached cleanly; run the command again to resume. */
  interrupted: 130,
} as const;
