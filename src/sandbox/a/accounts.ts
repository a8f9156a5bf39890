import { AApiError } from "./errors.js";

/** spec A Authentication 3: the enterprise plan has its own key, paired with its own base path. */
export type APlan = "standard" | "enterprise";

export interface AAccount {
  apiKey: string;
  plan: APlan;
}

export class AAccounts {
  private readonly byKey = new Map<string, AAccount>();

  constructor(standardKeys: readonly string[], enterpriseKeys: readonly string[]) {
    for (const apiKey of standardKeys) this.byKey.set(apiKey, { apiKey, plan: "standard" });
    for (const apiKey of enterpriseKeys) this.byKey.set(apiKey, { apiKey, plan: "enterprise" });
  }

  /** spec A Authentication 1: every call carries `Authorization: Bearer <API_KEY>`; anything else is 401. */
  authenticate(authorization: string | string[] | undefined): AAccount {
    const header = Array.isArray(authorization) ? authorization[0] : authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new AApiError(401, "AuthenticationError", "missing or malformed Authorization: Bearer header");
    const account = this.byKey.get(match[1]!);
    if (!account) throw new AApiError(401, "AuthenticationError", "the API key is not valid");
    return account;
  }

  /**
   * spec A Errors: "Enterprise key on the standard base path or the reverse:
   * fails or incurs extra charges". The sandbox chooses to fail, with 403, so
   * a client that mixes them finds out in tests rather than on an invoice.
   */
  requirePlan(account: AAccount, pathPlan: APlan): void {
    if (account.plan === pathPlan) return;
    const wanted = account.plan === "enterprise" ? "/api/plan/v3" : "/api/v3";
    throw new AApiError(
      403,
      "KeyPlanMismatch",
      `a ${account.plan} key must be used on the ${wanted} base path, not the ${pathPlan} one`,
    );
  }
}
