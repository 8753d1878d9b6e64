import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChangesReport, ListResponseOf, StoredEvent, WorkerWorkspace } from '@svc/protocol';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

const WORKSPACE: WorkerWorkspace = {
  repo: 'https://git.example.com/app.git',
  branch: 'svc/ses_1',
  push_rules: { auto_approve: [], deny: [], ask: [] },
  autonomous: false,
};

const PATCH = [
  'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n',
  'diff --git a/src/b.txt b/src/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/src/b.txt\n@@ -0,0 +1 @@\n+b\n',
].join('');

const REPORT: ChangesReport = {
  base_commit: 'a'.repeat(40),
  head_commit: 'b'.repeat(40),
  branch: 'svc/ses_1',
  files: [
    { path: 'a.txt', status: 'modified', additions: 1, deletions: 1 },
    { path: 'src/b.txt', status: 'added', additions: 1, deletions: 0 },
  ],
  patch: PATCH,
  patch_bytes: PATCH.length,
  truncated: false,
};

describe("the workspace's changes: reported by the sidecar, read by the worker's people", () => {
  let gw: GatewayFixture;
  let alice: string;
  let bob: string;
  let worker: string;
  let bare: string;

  beforeAll(async () => {
    gw = await startGatewayFixture({}, [], { services: true });
    [alice, bob] = await Promise.all([gw.userToken('alice'), gw.userToken('bob')]);
    worker = await gw.createWorker('wrk_changes', 'alice', 'running', { workspace: WORKSPACE });
    bare = await gw.createWorker('wrk_changes_none', 'alice', 'running');
  }, 60_000);
  afterAll(() => gw?.stop());

  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const report = (body: unknown, token = worker, id = 'wrk_changes') =>
    gw.app.inject({ method: 'POST', url: `/v1/workers/${id}/changes`, headers: as(token), payload: body as Record<string, unknown> });

  it('a report is kept and told in the history; the changes, the whole diff and one file’s part are read back', async () => {
    expect((await gw.app.inject({ url: '/v1/workers/wrk_changes/changes', headers: as(alice) })).json()).toMatchObject({ code: 'changes_not_found' });
    expect((await report(REPORT)).statusCode).toBe(204);
    const changes = await gw.app.inject({ url: '/v1/workers/wrk_changes/changes', headers: as(alice) });
    expect(changes.json()).toMatchObject({ worker_id: 'wrk_changes', repo: WORKSPACE.repo, additions: 2, deletions: 1, files: REPORT.files, truncated: false });
    const diff = await gw.app.inject({ url: '/v1/workers/wrk_changes/changes/diff', headers: as(alice) });
    expect(diff.headers['content-type']).toContain('text/x-diff');
    expect(diff.body).toBe(PATCH);
    expect((await gw.app.inject({ url: '/v1/workers/wrk_changes/changes/diff?path=src/b.txt', headers: as(alice) })).body).toBe(
      PATCH.slice(PATCH.indexOf('diff --git a/src')),
    );
    expect((await gw.app.inject({ url: '/v1/workers/wrk_changes/changes/diff?path=nothing.txt', headers: as(alice) })).body).toBe('');
    const events = (await gw.app.inject({ url: '/v1/workers/wrk_changes/sdk-events', headers: as(alice) })).json<ListResponseOf<StoredEvent>>().items;
    expect(events.find((event) => event.type === 'system')).toMatchObject({
      source: 'svc:workspace',
      data: { subtype: 'workspace_changes', details: { files_count: 2 } },
    });
  });

  it('refused: a report of a worker without a repository, another worker’s, a malformed one, one past the bound; a path that leaves the workspace; someone else', async () => {
    expect((await report(REPORT, bare, 'wrk_changes_none')).json()).toMatchObject({ code: 'no_repository' });
    expect((await report(REPORT, bare)).statusCode).toBe(403);
    expect((await report({ ...REPORT, base_commit: 'main' })).statusCode).toBe(400);
    // A patch past the bound is the sidecar's to cut: refused whole, naming the field; a body past any report's size, 413.
    const uncut = await report({ ...REPORT, patch: 'x'.repeat(2 * 1024 * 1024) });
    expect(uncut.statusCode).toBe(400);
    expect(uncut.body).toContain('/body/patch');
    expect((await report({ ...REPORT, patch: 'x'.repeat(8 * 1024 * 1024) })).statusCode).toBe(413);
    for (const path of ['../etc/passwd', '/etc/passwd', 'a/./b', 'a//b']) {
      const answer = await gw.app.inject({ url: `/v1/workers/wrk_changes/changes/diff?path=${encodeURIComponent(path)}`, headers: as(alice) });
      expect(answer.statusCode, path).toBe(400);
    }
    expect((await gw.app.inject({ url: '/v1/workers/wrk_changes/changes', headers: as(bob) })).statusCode).toBe(404);
    expect((await gw.app.inject({ url: '/v1/workers/wrk_changes_none/changes', headers: as(alice) })).json()).toMatchObject({ code: 'no_repository' });
    // A person's push to a branch the template denies is refused before anything is done.
    await gw.createWorker('wrk_changes_guarded', 'alice', 'running', {
      workspace: { ...WORKSPACE, push_rules: { auto_approve: [], deny: ['git_push(refs/heads/main)'], ask: [] } },
    });
    const guarded = await gw.app.inject({
      method: 'POST',
      url: '/v1/workers/wrk_changes_guarded/changes/push',
      headers: as(alice),
      payload: { branch: 'main' },
    });
    expect(guarded.statusCode).toBe(403);
    expect(guarded.json()).toMatchObject({ code: 'forbidden', message: expect.stringContaining('git_push(refs/heads/main)') });
    // What was kept is as it was.
    expect((await gw.app.inject({ url: '/v1/workers/wrk_changes/changes/diff', headers: as(alice) })).body).toBe(PATCH);
  });
});
