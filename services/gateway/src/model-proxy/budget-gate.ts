import type { ModelUsageLedger } from '@svc/bus';
import { budgetReached, type ModelBudget, type ModelUsage } from '@svc/protocol';
import type { Reservation } from './request-body.js';

/** A request let through: it holds its reservation until `release`. */
interface Admitted {
  admitted: true;
  release(): void;
}

/**
 * A request refused for the budget: `exhausted` when the totals reached it (refused until the
 * budget changes), else the budget's rest is held by requests in flight (worth retrying).
 */
export interface Refused {
  admitted: false;
  exhausted: boolean;
  reason: string;
  usage: ModelUsage;
}

export interface BudgetGate {
  /**
   * Lets a request of a budgeted worker through if the worker's totals, plus what its requests in
   * flight on this replica hold, leave the budget unreached; it then holds `reservation` until it
   * is released. A refusal is counted in the totals (`refused`).
   */
  admit(workerId: string, budget: ModelBudget, reservation: Reservation): Promise<Admitted | Refused>;
}

/**
 * The budget check with reservations (docs/model-proxy.md, "Budgets"). Admissions of one worker
 * run one at a time on this replica, so two requests cannot both pass on the same totals: each
 * sees what the ones before it hold. What a replica holds is its own; the multi-replica bound is
 * in the docs.
 */
export function createBudgetGate(deps: { ledger: ModelUsageLedger; written(workerId: string): Promise<void> }): BudgetGate {
  const held = new Map<string, Set<Reservation>>();
  const queues = new Map<string, Promise<unknown>>();

  async function decide(workerId: string, budget: ModelBudget, reservation: Reservation): Promise<Admitted | Refused> {
    // Taken before the totals are read: a request that ends meanwhile (its usage written, then its
    // reservation released) is counted twice at worst, never missed.
    const holding = [...(held.get(workerId) ?? [])];
    await deps.written(workerId);
    const usage = await deps.ledger.get(workerId);
    const exhausted = budgetReached(usage, budget);
    if (exhausted) {
      const totals = await deps.ledger.update(workerId, (current) => ({ ...current, refused: current.refused + 1, budget_exhausted: true }));
      return { admitted: false, exhausted: true, reason: exhausted, usage: totals };
    }
    const heldTokens = holding.reduce((sum, each) => sum + each.tokens, 0);
    const heldCost = holding.reduce((sum, each) => sum + each.cost_usd, 0);
    // Reached only with what is in flight: this request waits its turn (the one that crosses the
    // cap still runs, as without reservations: its size is known at its end).
    if (holding.length > 0 && budgetReached({ ...usage, input_tokens: usage.input_tokens + heldTokens, cost_usd: usage.cost_usd + heldCost }, budget)) {
      const totals = await deps.ledger.update(workerId, (current) => ({ ...current, refused: current.refused + 1 }));
      const used = usage.input_tokens + usage.output_tokens;
      const caps = [
        budget.max_tokens !== undefined ? `${used} + ${heldTokens} held of max_tokens ${budget.max_tokens}` : undefined,
        budget.max_cost_usd !== undefined ? `$${usage.cost_usd.toFixed(4)} + $${heldCost.toFixed(4)} held of max_cost_usd $${budget.max_cost_usd}` : undefined,
      ].filter((cap) => cap !== undefined);
      const reason = `the rest of the worker's budget is held by ${holding.length} model request${holding.length > 1 ? 's' : ''} in flight (${caps.join('; ')}); retry when ${holding.length > 1 ? 'they end' : 'it ends'}`;
      return { admitted: false, exhausted: false, reason, usage: totals };
    }
    let mine = held.get(workerId);
    if (!mine) held.set(workerId, (mine = new Set()));
    mine.add(reservation);
    let released = false;
    return {
      admitted: true,
      release() {
        if (released) return;
        released = true;
        mine.delete(reservation);
        if (mine.size === 0 && held.get(workerId) === mine) held.delete(workerId);
      },
    };
  }

  return {
    admit(workerId, budget, reservation) {
      const previous = queues.get(workerId) ?? Promise.resolve();
      const next = previous.then(() => decide(workerId, budget, reservation));
      const settled = next.catch(() => undefined);
      queues.set(workerId, settled);
      void settled.then(() => {
        if (queues.get(workerId) === settled) queues.delete(workerId);
      });
      return next;
    },
  };
}
