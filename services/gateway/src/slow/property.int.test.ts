import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '@svc/protocol';
import { startGatewayFixture, type GatewayFixture } from '../../test/fixture.js';

describe('gateway — random input never breaks it', () => {
  let gw: GatewayFixture;
  let userToken: string;
  let workerToken: string;
  beforeAll(async () => {
    gw = await startGatewayFixture({ rateLimitMax: 100_000 }, undefined, { services: true });
    userToken = await gw.userToken('fuzzer');
    workerToken = await gw.createWorker('wrk_fuzz', 'fuzzer');
  });
  afterAll(() => gw?.stop());

  it('2,000 random bodies, headers and query strings to every route: never a 5xx, every error an APIError', async () => {
    // The test-only route that throws on purpose is the one place a 500 is the right answer.
    const routes = gw.app.registeredRoutes.filter((route) => route.url !== '/v1/test/panic' && route.url !== '*');
    const method = fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS');
    const segment = fc.oneof(fc.constant('wrk_fuzz'), fc.string({ maxLength: 80 }), fc.stringMatching(/^[A-Za-z0-9_-]{1,70}$/));
    const query = fc.dictionary(
      fc.string({ maxLength: 12 }),
      fc.oneof(fc.string({ maxLength: 40 }), fc.integer().map(String), fc.constantFrom('true', '-1', '1e309', 'null')),
      { maxKeys: 4 },
    );
    const authorization = fc.oneof(
      fc.constant(undefined),
      fc.constant(`Bearer ${userToken}`),
      fc.constant(`Bearer ${workerToken}`),
      fc.string({ maxLength: 100 }),
      fc.string({ maxLength: 300 }).map((s) => `Bearer ${s}`),
    );
    const contentType = fc.constantFrom(
      undefined,
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'application/json; charset=utf-16',
      'garbage/;;',
    );
    const body = fc.oneof(
      fc.constant(undefined),
      fc.json({ maxDepth: 4 }),
      fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 500 }),
      fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
    );
    const extraHeaders = fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), fc.stringMatching(/^[\x20-\x7e]{0,60}$/), { maxKeys: 3 });

    const request = fc.record({
      routeIndex: fc.nat({ max: routes.length - 1 }),
      method,
      segment,
      query,
      authorization,
      contentType,
      body,
      extraHeaders,
      useRouteMethod: fc.boolean(),
    });

    await fc.assert(
      fc.asyncProperty(request, async (input) => {
        const route = routes[input.routeIndex]!;
        const url = route.url.replace(/:[A-Za-z_]+/g, () => encodeURIComponent(input.segment)).replace(/\*$/, input.segment);
        const search = new URLSearchParams(input.query).toString();
        const headers: Record<string, string> = { ...input.extraHeaders };
        delete headers['host'];
        delete headers['content-length'];
        delete headers['transfer-encoding'];
        if (input.authorization !== undefined) headers['authorization'] = input.authorization;
        if (input.contentType !== undefined) headers['content-type'] = input.contentType;
        const chosenMethod: string = input.useRouteMethod ? route.method : input.method;
        const response = await gw.app.inject({
          method: chosenMethod as 'GET',
          url: search ? `${url}?${search}` : url,
          headers,
          ...(input.body !== undefined && chosenMethod !== 'GET' && chosenMethod !== 'HEAD' ? { payload: input.body } : {}),
        });
        expect(response.statusCode, `${chosenMethod} ${url}`).toBeLessThan(500);
        if (response.statusCode >= 400 && chosenMethod !== 'HEAD') {
          expect(response.headers['content-type']).toMatch(/^application\/json/);
          const error = response.json() as { code: string; message: string };
          expect(Object.keys(ERROR_CODES)).toContain(error.code);
          expect(typeof error.message).toBe('string');
        }
      }),
      { numRuns: 2000 },
    );
  }, 120_000);
});
