import { describe, expect, it } from 'vitest';
import { CodedError, RULE_MAX_WILDCARDS, statusOfErrorCode } from '@svc/protocol';
import { parseTemplate } from './template.js';
import { templateRefusal } from '../../test/template-refusal.js';

const withRules = (sandbox: string, sidecar: string) => `
[agent]
command = "/bin/echo"

[sandbox]
${sandbox}

[sidecar]
adapter = "generic"
${sidecar}
`;

describe('templates — rules are capped at load', () => {
  it('templates — a network rule with 500 stars is refused with invalid_template (400) naming the file, the key and the rule', () => {
    const err = templateRefusal(withRules('', `deny = ["Bash(rm *)", "network(${'*'.repeat(500)})"]`));
    expect(err).toBeInstanceOf(CodedError);
    expect(err.code).toBe('invalid_template');
    expect(statusOfErrorCode(err.code)).toBe(400);
    expect(err.message).toBe(
      `templates/t.toml: /sidecar/deny/1 (the rule "network(${'*'.repeat(72)}…") has 500 wildcards (* and ?); a rule may have at most ${RULE_MAX_WILDCARDS}`,
    );
    expect(err.details).toMatchObject({ file: 'templates/t.toml', fields: [{ field: '/sidecar/deny/1' }] });
  });

  it('templates — every list is checked: egress, auto_approve, deny and ask, each bad rule named', () => {
    const tooMany = `${'*.'.repeat(RULE_MAX_WILDCARDS + 1)}example.com:443`;
    const err = templateRefusal(withRules(`egress = ["${tooMany}"]`, `auto_approve = ["Read(${'?'.repeat(65)})"]\nask = ["Bash", "Bash(${'*'.repeat(70)})"]`));
    expect(err.code).toBe('invalid_template');
    expect(err.message).toMatch(/^templates\/t\.toml: \/sandbox\/egress\/0 \(the rule "\*\.\*\.[^"]*"\) has 65 wildcards/);
    expect(err.message).toContain('; /sidecar/auto_approve/0 (the rule "Read(???');
    expect(err.message).toMatch(/; \/sidecar\/ask\/1 \(the rule "Bash\(\*+\)"\) has 70 wildcards \(\* and \?\); a rule may have at most 64$/);
    expect((err.details as { fields: unknown[] }).fields).toHaveLength(3);
  });

  it('templates — rules of 64 wildcards and up to 1024 characters load', () => {
    const sixtyFour = `network(${'*.'.repeat(RULE_MAX_WILDCARDS - 2)}*:*)`;
    const template = parseTemplate('t', withRules(`egress = ["*.npmjs.org:443"]`, `deny = ["${sixtyFour}"]\nask = ["Bash(${'x'.repeat(1018)})"]`), 'x');
    expect(template.sidecar?.deny).toEqual([sixtyFour]);
  });

  it('templates — an egress rule or a network rule may name an IP address or a CIDR; a CIDR that is none is named', () => {
    const template = parseTemplate(
      't',
      withRules('egress = ["127.0.0.1:5432", "10.0.0.0/8:443", "[fd00::/8]:*", "[fd00::]/8:22"]', 'deny = ["network(10.9.0.0/16:*)", "Bash(ls a/b:1)"]'),
      'x',
    );
    expect(template.sandbox.egress).toEqual(['127.0.0.1:5432', '10.0.0.0/8:443', '[fd00::/8]:*', '[fd00::]/8:22']);
    expect(templateRefusal(withRules('egress = ["10.0.0.0/33:443"]', '')).message).toBe(
      'templates/t.toml: /sandbox/egress/0 (the rule "10.0.0.0/33:443") names "10.0.0.0/33", which is no CIDR (10.0.0.0/8, [fd00::]/8)',
    );
    expect(templateRefusal(withRules('egress = ["example.com/8:443"]', '')).message).toMatch(/\/sandbox\/egress\/0/);
    expect(templateRefusal(withRules('', 'deny = ["network(10.0.0.0/40:*)"]')).message).toBe(
      'templates/t.toml: /sidecar/deny/0 (the rule "network(10.0.0.0/40:*)") names "10.0.0.0/40", which is no CIDR (10.0.0.0/8, [fd00::]/8)',
    );
  });

  it('templates — a network pattern or egress entry names host:port (IPv6 in brackets); network and network(*) name every target', () => {
    const loaded = parseTemplate(
      't',
      withRules(
        'egress = ["[2001:db8::1]:443", "[fd00::]/8:*"]',
        'deny = ["network", "network(*)", "network(*:22)", "network([2001:db8::*]:22)", "network(example.com:44?)", "Bash(ls a:b)", "Read(x)"]',
      ),
      'x',
    );
    expect(loaded.sidecar?.deny).toHaveLength(7);
    const examples = '(*.example.com:443, *:22, [2001:db8::1]:443, 10.0.0.0/8:*)';
    expect(templateRefusal(withRules('', 'deny = ["network(example.com)"]')).message).toBe(
      `templates/t.toml: /sidecar/deny/0 (the rule "network(example.com)") names no port: a network pattern is host:port ${examples}, or * alone for every target`,
    );
    const err = templateRefusal(
      withRules(
        'egress = ["2001:db8::1:443"]',
        'deny = ["network()", "network([2001:db8::1])", "network(2001:db8::1:22)", "network(example.com:https)", "network([::1:22)"]\nask = ["network(*.example.com)"]',
      ),
    );
    expect(err.code).toBe('invalid_template');
    expect(statusOfErrorCode(err.code)).toBe(400);
    expect((err.details as { fields: Array<{ field: string }> }).fields.map(({ field }) => field)).toEqual([
      '/sandbox/egress/0',
      '/sidecar/deny/0',
      '/sidecar/deny/1',
      '/sidecar/deny/2',
      '/sidecar/deny/3',
      '/sidecar/deny/4',
      '/sidecar/ask/0',
    ]);
    expect(err.message).toContain(
      '/sandbox/egress/0 (the rule "2001:db8::1:443") names the host "2001:db8::1" with a ":" outside brackets: an IPv6 address goes in brackets',
    );
    expect(err.message).toContain('/sidecar/deny/0 (the rule "network()") names no port');
    expect(err.message).toContain('/sidecar/deny/1 (the rule "network([2001:db8::1])") names no port');
    expect(err.message).toContain('/sidecar/deny/3 (the rule "network(example.com:https)") has the port "https"');
    expect(err.message).toContain('/sidecar/deny/4 (the rule "network([::1:22)") names the host "[::1", whose brackets are not one pair');
    expect(err.message).toContain('/sidecar/ask/0 (the rule "network(*.example.com)") names no port');
  });
});
