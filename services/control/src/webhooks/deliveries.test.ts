import { describe, expect, it } from 'vitest';
import type { WebhookFact } from '@svc/protocol';
import { bodyOf, retryDelayMs } from './deliveries.js';
import { messageIdOf } from './notifications.js';

const fact: WebhookFact = {
  id: 'request.needs_decision:wrk_a:r1',
  kind: 'request.needs_decision',
  at: '2026-11-25T06:00:00.000Z',
  data: {
    worker_id: 'wrk_a',
    owner: 'alice',
    request_id: 'r1',
    tool_name: 'Bash',
    input: { command: 'npm test' },
    links: { allow: 'https://svc/allow', deny: 'https://svc/deny', console: 'https://svc/workers/wrk_a', expires_at: '2026-11-25T07:00:00.000Z' },
  },
};

describe('webhook deliveries', () => {
  it('back-off doubles from the first pause up to the longest', () => {
    const policy = { firstMs: 5000, maxMs: 600_000, windowMs: 86_400_000 };
    expect([1, 2, 3, 4, 8, 20].map((attempt) => retryDelayMs(policy, attempt))).toEqual([5000, 10_000, 20_000, 40_000, 600_000, 600_000]);
  });

  it('a standard body is {type, timestamp, data}; a Slack body has text and buttons for the links', () => {
    expect(JSON.parse(bodyOf({ format: 'standard' }, fact))).toEqual({ type: 'request.needs_decision', timestamp: fact.at, data: fact.data });
    const slack = JSON.parse(bodyOf({ format: 'slack' }, fact)) as { text: string; blocks: Array<{ type: string; elements?: Array<{ url: string }> }> };
    expect(slack.text).toBe('svc: worker `wrk_a` asks to use Bash');
    expect(slack.blocks.find((block) => block.type === 'actions')!.elements!.map((button) => button.url)).toEqual([
      'https://svc/allow',
      'https://svc/deny',
      'https://svc/workers/wrk_a',
    ]);
  });

  it('a Slack body — agent text cannot forge a link or a mention, break out of the code block, or start a line of its own', () => {
    const forged: WebhookFact = {
      ...fact,
      data: {
        ...fact.data,
        tool_name: 'Bash <https://evil.example|Approve> & `x`\nsvc: approved',
        input: { command: 'echo ```\n<!channel> <https://evil.example|click to approve> ``` & `' },
      },
    };
    const slack = JSON.parse(bodyOf({ format: 'slack' }, forged)) as { text: string; blocks: Array<{ type: string; text?: { text: string } }> };
    expect(slack.text).toBe('svc: worker `wrk_a` asks to use Bash &lt;https://evil.example|Approve&gt; &amp; \u200b`\u200bx\u200b`\u200b svc: approved');
    expect(slack.blocks[0]!.text!.text).toBe(slack.text);
    const code = slack.blocks[1]!.text!.text;
    expect(code.startsWith('```') && code.endsWith('```')).toBe(true);
    const inside = code.slice(3, -3);
    // No < or > at all, no & but an entity, and no backtick touches another (or a fence).
    expect(inside).not.toMatch(/[<>]|&(?!amp;|lt;|gt;)|``|^`|`$/);
    // What a person reads is what the agent sent.
    const read = inside.replaceAll('\u200b', '').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
    expect(read).toBe(JSON.stringify(forged.data.input));
  });

  it('a Slack body — a long input is cut to what a section holds, never inside an escape, marked …', () => {
    const long: WebhookFact = { ...fact, data: { ...fact.data, input: { command: '<'.repeat(10_000) } } };
    const slack = JSON.parse(bodyOf({ format: 'slack' }, long)) as { blocks: Array<{ text?: { text: string } }> };
    const code = slack.blocks[1]!.text!.text;
    expect(code.length).toBeLessThanOrEqual(3000);
    expect(code).toMatch(/^```\{"command":"(&lt;)+…```$/);
    const decided: WebhookFact = {
      ...fact,
      kind: 'request.decided',
      data: { worker_id: 'wrk_a', owner: 'alice', request_id: 'r1>\n<!here>', decision: 'allow', decided_by: 'mallory\r\n*approved*' },
    };
    expect((JSON.parse(bodyOf({ format: 'slack' }, decided)) as { text: string }).text).toBe(
      'svc: worker `wrk_a`: request r1&gt; &lt;!here&gt; allowed by mallory  *approved*',
    );
  });

  it("a delivery's webhook-id is the same for the same fact and subscription, and differs otherwise", () => {
    expect(messageIdOf(fact.id, 'whk_1')).toBe(messageIdOf(fact.id, 'whk_1'));
    expect(messageIdOf(fact.id, 'whk_1')).not.toBe(messageIdOf(fact.id, 'whk_2'));
    expect(messageIdOf(fact.id, 'whk_1')).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
  });
});
