import { describe, expect, it } from 'vitest';
import { CodedError, ERROR_CODES, isErrorCode } from './errors.js';
import { createChecker } from './validation.js';
import { APIErrorSchema } from './errors.js';

describe('protocol v1 errors', () => {
  it('every code is snake_case with an HTTP error status', () => {
    for (const [code, status] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
    }
  });

  it('a coded error becomes a valid APIError body, omitting empty details', () => {
    const checker = createChecker(APIErrorSchema);
    const plain = new CodedError('worker_not_found', 'worker wrk_1 does not exist').toBody();
    expect(plain).toEqual({ code: 'worker_not_found', message: 'worker wrk_1 does not exist' });
    expect(checker.check(plain).ok).toBe(true);
    const detailed = new CodedError('invalid_request', 'bad', [{ field: '/x', message: 'is required' }]);
    expect(detailed.status).toBe(400);
    expect(checker.check(detailed.toBody()).ok).toBe(true);
  });

  it('an APIError with an unknown code is invalid', () => {
    const result = createChecker(APIErrorSchema).check({ code: 'oops', message: 'x' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((e) => e.field)).toContain('/code');
    expect(isErrorCode('oops')).toBe(false);
    expect(isErrorCode('already_decided')).toBe(true);
  });
});
