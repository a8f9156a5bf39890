import type { CommonCapabilities, CommonTask } from "../core/common-request.js";
import { PROVIDER_IDS, type ProviderAdapter, type ProviderId } from "../providers/adapter.js";
import type { Runtime } from "./runtime.js";

/** One target of a common request: `d/gen-2-pro`, or how a provider without a published list names its models (`f/<model>`). */
export interface TargetRow {
  target: string;
  provider: ProviderId;
  task: CommonTask;
  honours: CommonCapabilities["honours"];
  refuses: CommonCapabilities["refuses"];
  price_basis: string;
  configured: boolean;
  /** A model of the provider's published list (false: a row naming how its models are named). */
  listed: boolean;
}

/** The targets of a provider, each with what it honours: its listed models, or one row naming how its models are named. */
function targetRows(id: ProviderId, adapter: ProviderAdapter, configured: boolean): TargetRow[] {
  if (!adapter.commonCapabilities) return [];
  const named = (model: string, target: string, listed: boolean): TargetRow[] => {
    const capabilities = adapter.commonCapabilities!(model);
    if (!capabilities) return [];
    return [{ target, provider: id, task: capabilities.task, honours: capabilities.honours, refuses: capabilities.refuses, price_basis: capabilities.priceBasis, configured, listed }];
  };
  const models = adapter.models();
  if (models.length > 0) return models.flatMap((model) => named(model, `${id}/${model}`, true));
  // No published list (A, B, F): one row whose target says how a model is named.
  const placeholder = id === "b" ? "<vendor>/<model>/<function>" : "<model>";
  return named("", `${id}/${placeholder}`, false);
}

/** Every target of a common request of these providers (default: all), with what each honours; nothing is sent. */
export function commonTargets(runtime: Pick<Runtime, "providers">, providers: readonly ProviderId[] = PROVIDER_IDS): TargetRow[] {
  return providers.flatMap((id) => {
    const entry = runtime.providers.get(id);
    return entry?.adapter ? targetRows(id, entry.adapter, entry.missing.length === 0) : [];
  });
}
