import {
  controlWithdrawnData,
  isPersonInterrupt,
  isPersonMessage,
  parseSource,
  personMessageId,
  SYSTEM_SUBTYPES,
  withdrawnRequestId,
  WORKER_POLICY_SOURCE,
  type EventData,
  type PermissionRule,
  type StoredEvent,
} from '@svc/protocol';
import type { Activity } from './activity.js';
import type { Adapter, AgentEvent, MessageForAgent } from './adapters/adapter.js';
import { imagesNotGiven, imagesOf } from './message-images.js';
import type { PermissionEngine } from '@svc/protocol';

export interface EventRoutingOptions {
  adapter: Pick<Adapter, 'name' | 'formatDecision' | 'formatMessage' | 'formatInterrupt' | 'interruptsBySignal' | 'turns' | 'takesImages'>;
  /** Close the agent's stdin after its result: its adapter's one run (`endsAfterResult`), unless the session is a conversation. */
  endsAfterResult: boolean;
  engine: Pick<PermissionEngine, 'decide'>;
  /** The agent's activity, told of its turns and of the requests waiting for a person. */
  activity: Pick<Activity, 'messageDelivered' | 'turnEnded' | 'waitingFor' | 'turnActive'>;
  /** Where every event goes (the outbox: to the control plane, in order). */
  record(event: AgentEvent): void;
  /** Writes to the agent's stdin. */
  toAgent(bytes: string): void;
  /** The agent's stdin is done with (its adapter ends after a result). */
  closeAgentInput(): void;
  /** A signal to the agent's process group. */
  signalAgent(signal: NodeJS.Signals): void;
  /** A person added an "always" rule (the decision's id is the rule's, as the control plane lists it): the engine learns it before the agent asks again. */
  onRuleAdded(rule: PermissionRule): void;
}

/** The history's word that a person's message or interrupt could not reach the agent, and why. */
export function undeliveredEvent(kind: 'message' | 'interrupt', input: StoredEvent<'system'>, why: string): AgentEvent {
  const subtype = kind === 'message' ? SYSTEM_SUBTYPES.messageUndelivered : SYSTEM_SUBTYPES.interruptUndelivered;
  const idKey = `${kind}_id`;
  return {
    type: 'system',
    data: { level: 'warn', message: `The ${kind} was not delivered: ${why}.`, subtype, details: { [idKey]: input.data.details?.[idKey] } },
  };
}

/** A person's message as an adapter formats it: its text, its id, and the images fetched for it. */
function messageOf(message: StoredEvent<'system'>): MessageForAgent {
  const id = personMessageId(message);
  const images = imagesOf(message);
  return { text: message.data.message, ...(id === undefined ? {} : { id }), ...(images.length === 0 ? {} : { images }) };
}

/** Why a message or interrupt cannot reach the agent. */
function whyNotDelivered(inputClosed: boolean, adapter: string, what: string): string {
  return inputClosed ? "the agent's input is closed (its run took one prompt)" : `the ${adapter} adapter takes no ${what} from svc yet (docs/conversations.md)`;
}

/** The rule a person's "always" decision adds (the decision's id is the rule's, as the control plane lists it). */
function ruleOf(decision: StoredEvent<'control_response'>, request: EventData<'control_request'>): PermissionRule | undefined {
  // Only a person adds rules: the source says who wrote the decision, whatever its data claims.
  const person = parseSource(decision.source);
  if (decision.data.scope !== 'always' || person.kind !== 'person') return undefined;
  return {
    rule_id: decision.id,
    tool_name: request.tool_name,
    ...(decision.data.input_pattern === undefined ? {} : { input_pattern: decision.data.input_pattern }),
    decision: decision.data.decision,
    added_by: person.sub,
    request_id: decision.data.request_id,
    added_at: decision.ts,
    ...(decision.data.rule_scope === undefined ? {} : { scope: decision.data.rule_scope }),
    ...(decision.data.rule_key === undefined ? {} : { scope_key: decision.data.rule_key }),
  };
}

/**
 * Where each event of the agent goes, and each decision: every event is recorded; a tool request
 * goes through the permission engine, and its policy decision is recorded and written to the agent
 * at once, or the request waits for a person's decision from the long poll (written to the agent
 * once, and only for a request of this agent that is still open).
 */
export function createEventRouting(options: EventRoutingOptions) {
  /** Requests a person must decide, by request id, until the decision is written. */
  const open = new Map<string, EventData<'control_request'>>();
  /** The agent's stdin was closed (one prompt, one run): nothing more reaches it. */
  let inputClosed = false;
  const closeAgentInput = () => {
    inputClosed = true;
    options.closeAgentInput();
  };
  const whyNot = (what: string) => whyNotDelivered(inputClosed, options.adapter.name, what);

  /** A tool request: decided by the permission engine at once (recorded and written to the agent), or kept for a person. */
  function request(data: EventData<'control_request'>): void {
    options.record({ type: 'control_request', data });
    const verdict = options.engine.decide(data.tool_name, data.input);
    options.activity.turnActive();
    if (verdict.decision === 'ask') {
      open.set(data.request_id, data);
      return options.activity.waitingFor(open.size);
    }
    // The policy decided: recorded like a person's decision, so the history shows it.
    const decision: EventData<'control_response'> = { request_id: data.request_id, decision: verdict.decision, message: verdict.reason, decided_by: 'policy' };
    options.record({ type: 'control_response', data: decision });
    options.toAgent(options.adapter.formatDecision(decision, data));
  }

  return {
    fromAgent(event: AgentEvent): void {
      if (event.type === 'control_request') return request(event.data);
      if (event.type === 'system') {
        const withdrawn = withdrawnRequestId(event);
        if (withdrawn !== undefined) open.delete(withdrawn);
      }
      options.record(event);
      options.activity.waitingFor(open.size);
      if (event.type === 'assistant' || event.type === 'tool_use' || (event.type === 'system' && event.data.subtype === SYSTEM_SUBTYPES.init))
        return options.activity.turnActive();
      if (event.type !== 'result') return;
      options.activity.turnEnded();
      if (options.endsAfterResult) closeAgentInput();
    },

    fromPerson(decision: StoredEvent<'control_response'>): void {
      const request = open.get(decision.data.request_id);
      // Ours (the policy's answer went to the agent already), or not this agent's request.
      if (decision.source === WORKER_POLICY_SOURCE || !request) return;
      open.delete(decision.data.request_id);
      options.toAgent(options.adapter.formatDecision(decision.data, request));
      options.activity.waitingFor(open.size);
      const rule = ruleOf(decision, request);
      if (rule) options.onRuleAdded(rule);
    },

    /** A decision, a person's message or interrupt from the control channel, each to its own. */
    fromControlChannel(input: StoredEvent): void {
      if (input.type === 'control_response') this.fromPerson(input as StoredEvent<'control_response'>);
      else if (isPersonMessage(input)) this.fromPersonMessage(input);
      else if (isPersonInterrupt(input)) this.fromPersonInterrupt(input);
    },

    /** A person's message: written to the agent once (the poller's cursor sees to that), else a warning in the history saying why not. */
    fromPersonMessage(message: StoredEvent<'system'>): void {
      const startsTurn = options.adapter.turns?.messageStartsTurn() ?? true;
      const bytes = inputClosed ? undefined : options.adapter.formatMessage?.(messageOf(message));
      // Empty bytes: the adapter holds the message and sends it itself when its agent can take it.
      if (bytes !== undefined) {
        if (!options.adapter.takesImages) imagesNotGiven(message, options.adapter.name).forEach(options.record);
        options.toAgent(bytes);
        return options.activity.messageDelivered(startsTurn);
      }
      options.record(undeliveredEvent('message', message, whyNot('messages')));
    },

    /** A person's interrupt: the adapter's bytes, or SIGINT for an agent interrupted by signal, or a warning that says why neither. */
    fromPersonInterrupt(interrupt: StoredEvent<'system'>): void {
      if (!inputClosed && options.adapter.formatInterrupt) {
        const bytes = options.adapter.formatInterrupt();
        // An adapter that knows its agent's turns says so when none runs.
        return bytes ? options.toAgent(bytes) : options.record(undeliveredEvent('interrupt', interrupt, 'no turn was running'));
      }
      if (options.adapter.interruptsBySignal) return options.signalAgent('SIGINT');
      options.record(undeliveredEvent('interrupt', interrupt, whyNot('interrupts')));
    },

    /** Closes the agent's stdin (the launch plan's `closeStdin`); a message after it is not delivered. */
    closeAgentInput,

    /** Requests waiting for a person. */
    waiting: (): number => open.size,

    /** The agent is gone: the requests still waiting are withdrawn (the viewers' prompts close; a later decision reaches nobody). */
    withdrawAll(why: string): void {
      for (const requestId of open.keys())
        options.record({ type: 'system', data: { ...controlWithdrawnData(requestId), message: `request ${requestId} withdrawn: ${why}` } });
      open.clear();
    },
  };
}
