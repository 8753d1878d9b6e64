import { describe, expect, it } from 'vitest';
import { parseTemplate } from '../templates/template.js';
import { egressPolicyOf } from './pipeline.js';

describe('spawn pipeline — egress policy', () => {
  it("egress policy — the template's egress list, and only the network tool's deny rules", () => {
    const template = parseTemplate(
      't',
      `
[agent]
command = "/bin/echo"

[sandbox]
egress = ["registry.npmjs.org:443"]

[sidecar]
adapter = "generic"
deny = ["network(*.pastebin.com:*)", "Bash(curl *)", " network ", "networking", "net*(*:22)", "network(10.*:*)"]
`,
      'x',
    );
    expect(egressPolicyOf(template, { template: 't' })).toEqual({
      allow: ['registry.npmjs.org:443'],
      deny: ['network(*.pastebin.com:*)', ' network ', 'network(10.*:*)'],
      autonomous: false,
    });
    expect(egressPolicyOf(template, { template: 't', overrides: { autonomous: true } })?.autonomous).toBe(true);
    expect(egressPolicyOf({ ...template, sandbox: { ...template.sandbox, sealed: false } }, { template: 't' })).toBeUndefined();
  });
});
