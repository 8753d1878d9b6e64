import { describe, expect, it } from 'vitest';
import { apiPaths } from './api-paths.js';

describe('apiPaths', () => {
  it('builds each path once, ids encoded, only the query parameters that are set', () => {
    expect(apiPaths.sdkEvents('wrk_1')).toBe('/v1/workers/wrk_1/sdk-events');
    expect(apiPaths.sdkEvents('wrk_1', { after_id: '5', limit: 1000 })).toBe('/v1/workers/wrk_1/sdk-events?after_id=5&limit=1000');
    expect(apiPaths.eventStream('a/b', '0')).toBe('/v1/workers/a%2Fb/sdk-events/stream?after_id=0');
    expect(apiPaths.pendingInputs('wrk_1', { after_id: '7', wait_ms: 25_000, limit: 100 })).toBe(
      '/v1/workers/wrk_1/control/pending?after_id=7&wait_ms=25000&limit=100',
    );
    expect(apiPaths.sessions({ status: undefined, limit: 1 })).toBe('/v1/sessions?limit=1');
    expect(apiPaths.sessionLogs('ses_1', { tail: 50 })).toBe('/v1/sessions/ses_1/logs?tail=50');
    expect(apiPaths.permissionRules('wrk_1')).toBe('/v1/workers/wrk_1/permission-rules');
    expect([apiPaths.messages('wrk_1'), apiPaths.interrupt('wrk 1')]).toEqual(['/v1/workers/wrk_1/messages', '/v1/workers/wrk%201/interrupt']);
  });
});
