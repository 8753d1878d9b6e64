import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeConfig, loadSidecarConfig, parseSidecarConfig, SidecarConfigError } from './config.js';

const TOKEN = 'svcw_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
const minimal = { adapter: 'claude-code', worker_id: 'wrk_1', control_plane_url: 'http://127.0.0.1:8080', auth_token: TOKEN, agent: { command: 'claude' } };

describe('sidecar config — validated at start, defaults filled, the token never shown', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-sidecar-config-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('fills the defaults of what is not given', async () => {
    const config = await parseSidecarConfig(minimal, 'config.json');
    expect(config).toMatchObject({
      autonomous: false,
      permissions: { auto_approve: [], deny: [], ask: [] },
      poll_interval_ms: 1000,
      decision_wait_ms: 25_000,
      agent: { command: 'claude', args: [], env: {} },
      token: TOKEN,
    });
  });

  it('names every bad field, and never the token', async () => {
    const bad = { ...minimal, adapter: 'gpt', worker_id: 'has space', poll_interval_ms: 0, extra: 1 };
    const error = (await parseSidecarConfig(bad, 'config.json').then(
      () => undefined,
      (err: unknown) => err,
    )) as SidecarConfigError;
    expect(error).toBeInstanceOf(SidecarConfigError);
    for (const field of ['/adapter', '/worker_id', '/poll_interval_ms']) expect(error.message).toContain(field);
    expect(error.message.startsWith('config.json: ')).toBe(true);
    expect(error.message).not.toContain(TOKEN);
    await expect(parseSidecarConfig({ ...minimal, agent: {} }, 'c')).rejects.toThrow(/\/agent\/command/);
  });

  it("reads the token from auth_token_file (the spec's /var/run/svc/token); a missing or empty one is a clear error", async () => {
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, `${TOKEN}\n`);
    const { auth_token: _inline, ...withoutToken } = minimal;
    expect((await parseSidecarConfig({ ...withoutToken, auth_token_file: tokenFile }, 'c')).token).toBe(TOKEN);
    await expect(parseSidecarConfig(withoutToken, 'c')).rejects.toThrow('/auth_token or /auth_token_file is required');
    await expect(parseSidecarConfig({ ...withoutToken, auth_token_file: path.join(dir, 'nope') }, 'c')).rejects.toThrow(/cannot be read \(ENOENT\)/);
    await writeFile(path.join(dir, 'empty'), '\n');
    await expect(parseSidecarConfig({ ...withoutToken, auth_token_file: path.join(dir, 'empty') }, 'c')).rejects.toThrow(/is empty/);
  });

  it('loads the file named by SVC_SIDECAR_CONFIG; unset, unreadable or not JSON each say so', async () => {
    const file = path.join(dir, 'sidecar.json');
    await writeFile(file, JSON.stringify(minimal));
    expect((await loadSidecarConfig({ SVC_SIDECAR_CONFIG: file })).worker_id).toBe('wrk_1');
    await expect(loadSidecarConfig({})).rejects.toThrow('SVC_SIDECAR_CONFIG is not set');
    await expect(loadSidecarConfig({ SVC_SIDECAR_CONFIG: path.join(dir, 'missing.json') })).rejects.toThrow(/cannot be read \(ENOENT\)/);
    await writeFile(path.join(dir, 'broken.json'), '{"adapter":');
    await expect(loadSidecarConfig({ SVC_SIDECAR_CONFIG: path.join(dir, 'broken.json') })).rejects.toThrow(/is not JSON/);
  });

  it('what may be logged holds no token and no agent environment values', async () => {
    const config = await parseSidecarConfig({ ...minimal, agent: { command: 'claude', env: { ANTHROPIC_API_KEY: 'sk-secret' } } }, 'c');
    const shown = JSON.stringify(describeConfig(config));
    expect(shown).not.toContain(TOKEN);
    expect(shown).not.toContain('sk-secret');
    expect(shown).toContain('ANTHROPIC_API_KEY');
  });
});
