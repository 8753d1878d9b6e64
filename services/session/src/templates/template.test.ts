import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_TEMPLATES_DIR, createTemplateCatalog } from './catalog.js';
import { parseTemplate } from './template.js';
import { INTERACTIVE_BUILT_INS, templateRefusal } from '../../test/template-refusal.js';

const minimal = `
[agent]
command = "/bin/echo"
`;

describe('templates', () => {
  it('fills in defaults; [sidecar] is optional', () => {
    const template = parseTemplate('t', minimal, 'templates/t.toml');
    expect(template).toMatchObject({ name: 't', source: 'templates/t.toml', agent: { command: '/bin/echo', args: [], env: {}, pass_env: [] }, files: [] });
    expect(template.sidecar).toBeUndefined();
    const withSidecar = parseTemplate('t', `${minimal}\n[sidecar]\nadapter = "generic"\n`, 'x');
    expect(withSidecar.sidecar).toEqual({
      adapter: 'generic',
      auto_approve: [],
      deny: [],
      ask: [],
      autonomous: false,
      decision_timeout_s: 600,
      on_timeout: 'deny',
      poll_interval_ms: 1000,
    });
  });

  it('names the file and the key of each mistake', () => {
    const badAdapter = templateRefusal(`${minimal}\n[sidecar]\nadapter = "gpt"\n`);
    expect(badAdapter.code).toBe('invalid_template');
    expect(badAdapter.message).toMatch(/^templates\/t\.toml: .*\/sidecar\/adapter/);
    expect(templateRefusal(`colour = "red"\n${minimal}`).message).toMatch(/templates\/t\.toml: .*\/colour/);
    expect(templateRefusal(`[agent]\nargs = []\n`).message).toMatch(/\/agent\/command/);
    expect(templateRefusal(`${minimal}\n[sidecar]\nadapter = "generic"\nauto_approve = "Bash"\n`).message).toMatch(/\/sidecar\/auto_approve/);
    expect(templateRefusal(`${minimal}\n[[files]]\npath = "/workspace/../etc/passwd"\ncontent = ""\n`).message).toMatch(/\/files\/0\/path/);
    expect(templateRefusal(`${minimal}\n[agent.env]\n"BAD NAME" = "x"\n`).message).toMatch(/\/agent\/env/);
  });

  it('[overrides] autonomous: admins unless the template says anyone or nobody; anything else is named', () => {
    expect(parseTemplate('t', minimal, 'x').overrides).toEqual({
      autonomous: 'admins',
      workspace_repo: 'nobody',
      workspace_ref: 'anyone',
      workspace_branch: 'anyone',
    });
    expect(parseTemplate('t', `${minimal}\n[overrides]\nautonomous = "anyone"\n`, 'x').overrides).toMatchObject({ autonomous: 'anyone' });
    expect(parseTemplate('t', `${minimal}\n[overrides]\nautonomous = "nobody"\n`, 'x').overrides).toMatchObject({ autonomous: 'nobody' });
    expect(templateRefusal(`${minimal}\n[overrides]\nautonomous = "sometimes"\n`).message).toMatch(/^templates\/t\.toml: .*\/overrides\/autonomous/);
    expect(templateRefusal(`${minimal}\n[overrides]\nenv = "anyone"\n`).message).toMatch(/\/overrides\/env/);
  });

  it('[workspace]: a repository by an http(s) URL with no credential in it, a ref and branch git takes as names; anything else is named', () => {
    const workspace = parseTemplate('t', `${minimal}\n[workspace]\nrepo = "https://git.example.com/org/app.git"\nref = "v1.2"\ndepth = 1\n`, 'x').workspace;
    expect(workspace).toEqual({ repo: 'https://git.example.com/org/app.git', ref: 'v1.2', depth: 1 });
    expect(parseTemplate('t', minimal, 'x').workspace).toBeUndefined();
    const refused = (section: string) => () => parseTemplate('t', `${minimal}\n[workspace]\n${section}\n`, 'templates/t.toml');
    expect(refused('repo = "https://bot:s3cret@git.example.com/org/app.git"')).toThrow(
      /templates\/t\.toml: \/workspace\/repo must not hold a user or password/,
    );
    expect(refused('repo = "git@git.example.com:org/app.git"')).toThrow(/\/workspace\/repo (is no URL|must be an https)/);
    expect(refused('repo = "file:///etc"')).toThrow(/\/workspace\/repo must be an https:\/\/ URL/);
    expect(refused('repo = "https://git.example.com/a.git"\nref = "--upload-pack=touch /tmp/x"')).toThrow(/\/workspace\/ref/);
    expect(refused('repo = "https://git.example.com/a.git"\nbranch = "has space"')).toThrow(/\/workspace\/branch/);
    expect(refused('repo = "https://git.example.com/a.git"\ntoken = "x"')).toThrow(/\/workspace/);
  });

  it('[session] mode: one_shot unless the template says conversation; idle_timeout_s and keep_sandbox_s default to 30 min and a day; anything else is named', () => {
    expect(parseTemplate('t', minimal, 'x').session).toEqual({ mode: 'one_shot', idle_timeout_s: 1800, keep_sandbox_s: 86_400 });
    expect(parseTemplate('t', `${minimal}\n[session]\nmode = "conversation"\nidle_timeout_s = 2\nkeep_sandbox_s = 600\n`, 'x').session).toEqual({
      mode: 'conversation',
      idle_timeout_s: 2,
      keep_sandbox_s: 600,
    });
    expect(templateRefusal(`${minimal}\n[session]\nmode = "chat"\n`).message).toMatch(/^templates\/t\.toml: .*\/session\/mode/);
    expect(templateRefusal(`${minimal}\n[session]\nidle = 3\n`).message).toMatch(/\/session\/idle/);
    expect(templateRefusal(`${minimal}\n[session]\nidle_timeout_s = 0\n`).message).toMatch(/\/session\/idle_timeout_s/);
    expect(templateRefusal(`${minimal}\n[session]\nkeep_sandbox_s = 0\n`).message).toMatch(/\/session\/keep_sandbox_s/);
  });

  it('[retention] events_days: whole days, 0 keeps them; a negative, fractional or unknown key is named', () => {
    expect(parseTemplate('t', `${minimal}\n[retention]\nevents_days = 7\n`, 'x').retention).toEqual({ events_days: 7 });
    expect(parseTemplate('t', `${minimal}\n[retention]\nevents_days = 0\n`, 'x').retention).toEqual({ events_days: 0 });
    expect(parseTemplate('t', minimal, 'x').retention).toBeUndefined();
    expect(templateRefusal(`${minimal}\n[retention]\nevents_days = -1\n`).message).toMatch(/\/retention\/events_days/);
    expect(templateRefusal(`${minimal}\n[retention]\nevents_days = 1.5\n`).message).toMatch(/\/retention\/events_days/);
    expect(templateRefusal(`${minimal}\n[retention]\ndays = 3\n`).message).toMatch(/\/retention\/days/);
  });

  it('a model API: named, with an optional budget; an unknown one is refused at load; it needs a [sidecar]', () => {
    const template = parseTemplate('t', `${minimal}\n[model]\napi = "anthropic"\nmax_tokens = 1000\n[sidecar]\nadapter = "claude-code"\n`, 'templates/t.toml');
    expect(template.model).toEqual({ api: 'anthropic', max_tokens: 1000 });
    expect(template.sandbox).toEqual({ sealed: true, egress: [] });
    const withEgress = parseTemplate('t', `${minimal}\n[sandbox]\negress = ["registry.npmjs.org:443", "*.github.com:443"]\n`, 'x');
    expect(withEgress.sandbox.egress).toEqual(['registry.npmjs.org:443', '*.github.com:443']);
    expect(templateRefusal(`${minimal}\n[sandbox]\negress = ["https://registry.npmjs.org"]\n`).message).toMatch(/^templates\/t\.toml: \/sandbox\/egress\/0/);
    const unknown = templateRefusal(`${minimal}\n[model]\napi = "mistral"\n[sidecar]\nadapter = "generic"\n`);
    expect(unknown.code).toBe('invalid_template');
    expect(unknown.message).toBe('templates/t.toml: /model/api must be one of "anthropic", "openai", "gemini"');
    expect(templateRefusal(`${minimal}\n[model]\napi = "openai"\n`).message).toBe(
      "templates/t.toml: /model needs a [sidecar] section (the sidecar serves the agent's model proxy)",
    );
    expect(templateRefusal(`${minimal}\n[model]\napi = "openai"\nmax_cost_usd = 0\n[sidecar]\nadapter = "generic"\n`).message).toMatch(/\/model\/max_cost_usd/);
  });

  it('a key passed into the sandbox (pass_env) still works, with a deprecation warning that says what to do instead', () => {
    const template = parseTemplate(
      't',
      `[agent]\ncommand = "x"\npass_env = ["ANTHROPIC_API_KEY", "HTTP_PROXY"]\npass_env_optional = ["GITHUB_TOKEN"]\n`,
      'templates/t.toml',
    );
    expect(template.warnings).toHaveLength(2);
    expect(template.warnings[0]).toMatch(
      /^templates\/t\.toml: \/agent\/pass_env hands ANTHROPIC_API_KEY to the agent inside its sandbox; this is deprecated: name the model API instead \(\[model\] api = /,
    );
    expect(template.warnings[1]).toContain('GITHUB_TOKEN');
    expect(parseTemplate('t', minimal, 'x').warnings).toEqual([]);
  });

  it('says where TOML syntax is broken', () => {
    const broken = templateRefusal('[agent\ncommand = "x"\n');
    expect(broken.code).toBe('invalid_template');
    expect(broken.message).toMatch(/^templates\/t\.toml: not valid TOML \(line 1, column \d+\)/);
  });

  it('ships built-in templates that all parse: demo, claude, codex, codex-auto, and the ACP agents gemini, claude-acp, codex-acp, opencode', async () => {
    const files = (await readdir(BUILT_IN_TEMPLATES_DIR)).filter((f) => f.endsWith('.toml')).sort();
    expect(files).toEqual(['claude-acp.toml', 'claude.toml', 'codex-acp.toml', 'codex-auto.toml', 'codex.toml', 'demo.toml', 'gemini.toml', 'opencode.toml']);
    for (const file of files) {
      const template = parseTemplate(path.basename(file, '.toml'), await readFile(path.join(BUILT_IN_TEMPLATES_DIR, file), 'utf8'), file);
      expect(template.sidecar).toBeDefined();
    }
  });

  it('finds a template in the configured directory first, then the built-in ones; an unknown or odd name is template_not_found', async () => {
    const catalog = createTemplateCatalog({ dir: '/nonexistent-dir' });
    expect((await catalog.load('demo')).source).toBe(path.join(BUILT_IN_TEMPLATES_DIR, 'demo.toml'));
    await expect(catalog.load('nope')).rejects.toMatchObject({ code: 'template_not_found' });
    await expect(catalog.load('../demo')).rejects.toMatchObject({ code: 'template_not_found' });
  });

  it('the interactive built-ins are conversations; the autonomous codex-auto runs once', async () => {
    const catalog = createTemplateCatalog({});
    for (const name of INTERACTIVE_BUILT_INS) expect([name, (await catalog.load(name)).session.mode]).toEqual([name, 'conversation']);
    expect((await catalog.load('codex-auto')).session.mode).toBe('one_shot');
  });

  it('lists every template by name: the configured directory shadows a built-in one; a broken file is listed with its problem', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-templates-'));
    try {
      await writeFile(path.join(dir, 'demo.toml'), `description = "my demo"\n${minimal}`);
      await writeFile(path.join(dir, 'broken.toml'), '[agent\n');
      await writeFile(path.join(dir, 'notes.txt'), 'not a template');
      const listed = await createTemplateCatalog({ dir }).list();
      expect(listed.map((t) => t.name)).toEqual(['broken', 'claude', 'claude-acp', 'codex', 'codex-acp', 'codex-auto', 'demo', 'gemini', 'opencode']);
      expect(listed.find((t) => t.name === 'demo')).toEqual({ name: 'demo', description: 'my demo', autonomous: false });
      expect(listed.find((t) => t.name === 'broken')!.problem).toMatch(/broken\.toml: not valid TOML/);
      expect(listed.find((t) => t.name === 'codex-auto')).toMatchObject({ adapter: 'codex', autonomous: true });
      const builtIn = await createTemplateCatalog({ dir: '/nonexistent-dir' }).list();
      expect(builtIn.find((t) => t.name === 'demo')).toMatchObject({ adapter: 'claude-code', prompt: 'Show me what you can do.', autonomous: false });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
