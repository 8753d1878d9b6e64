import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { decisionResultText, type DecisionResult } from '../decide-request.js';
import { bulkSummary } from './BulkDecisionBar.js';
import { RouteNote } from './RouteNote.js';

/** The text a reader gets of some markup: its tags dropped. */
const textOf = (html: string) => html.replace(/<[^>]+>/g, '').replaceAll('&#x27;', "'");

describe('what the inbox says of routes and decisions', () => {
  it('RouteNote — the people, the rule, "escalated" once it is, and a quorum\'s count with who allowed', () => {
    expect(
      textOf(renderToStaticMarkup(<RouteNote route={{ rule: 'Write', deciders: ['user:bob'], quorum: 1, escalated: false, allows: 0, voters: [] }} />)),
    ).toBe('Routed to user:bob by the rule Write');
    const escalated = { rule: 'Bash(rm *)', deciders: ['group:release', 'group:oncall'], quorum: 2, escalated: true, allows: 1, voters: ['bob'] };
    expect(textOf(renderToStaticMarkup(<RouteNote route={escalated} />))).toBe(
      'Routed to group:release, group:oncall by the rule Bash(rm *) · escalated · 1 of 2 allowed: bob',
    );
    // A worker page knows the route, not the votes.
    expect(textOf(renderToStaticMarkup(<RouteNote route={{ rule: 'Write', deciders: ['user:bob', 'user:dave'], quorum: 2 }} />))).toBe(
      'Routed to user:bob, user:dave by the rule Write · 2 people must allow it',
    );
  });

  it('bulkSummary — counts each way the decisions ended; each result in words', () => {
    const vote: DecisionResult = { kind: 'vote', allows: 1, quorum: 2, voters: ['bob'] };
    const refused: DecisionResult = { kind: 'refused', message: 'request r1 is routed to user:bob by the rule Write' };
    expect(bulkSummary('allow', [{ kind: 'decided', decision: 'allow' }, { kind: 'decided', decision: 'allow' }, vote])).toBe(
      'Allow for 3 requests: 2 allowed, 1 vote counted.',
    );
    expect(bulkSummary('deny', [{ kind: 'decided', decision: 'deny' }, refused, { kind: 'failed', message: 'offline' }])).toBe(
      'Deny for 3 requests: 1 denied, 1 not yours to decide, 1 failed.',
    );
    expect(decisionResultText(vote)).toBe('Your vote is counted: 1 of 2. The request stays open until 2 people allow it.');
    expect(decisionResultText(refused)).toBe('Not yours to decide: request r1 is routed to user:bob by the rule Write');
  });
});
