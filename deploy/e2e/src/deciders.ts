import type { CreateWorkerResultType } from '@svc/protocol';
import { controlClient } from './sidecar-process.js';

/** How long a person waits before asking again after a 503/504 (a client's pause, not a wait for something). */
const RETRY_PAUSE_MS = 200;

/** An APIError's body, as far as a decider reads it. */
interface AnswerBody {
  code?: string;
  details?: { decided_by?: string };
}

/** What one person was last answered on one request, and what they were told before it. */
export interface Verdict {
  person: string;
  workerId: string;
  requestId: string;
  /** 201 (their decision was stored) or 409 (someone's was). */
  status: number;
  /** With a 409: who the refusal says decided. */
  decidedBy?: string;
  /** The answers that made them ask again: `503 unavailable`, `504 timeout`, `0` (none). */
  retries: string[];
  /** When they first asked, and when the last answer came. */
  askedAt: number;
  answeredAt: number;
}

/**
 * One person allowing each request in turn, as a client should: a 503 or 504 with `Retry-After`
 * (or no answer) is asked again until the answer is 201 or 409. Any other answer fails the test.
 */
export async function decideEach(
  gatewayUrl: string,
  token: string,
  person: string,
  requests: ReadonlyArray<{ worker: CreateWorkerResultType; requestId: string }>,
  /** Counts every 201 or 409 as it comes (a test waits on it). */
  progress: { answers: number } = { answers: 0 },
): Promise<Verdict[]> {
  const client = controlClient(gatewayUrl, token);
  const verdicts: Verdict[] = [];
  for (const { worker, requestId } of requests) {
    const retries: string[] = [];
    const askedAt = Date.now();
    for (;;) {
      const answer = await client
        .decide(worker.worker_id, { request_id: requestId, decision: 'allow' })
        .then(async (response) => ({ status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as AnswerBody }))
        .catch(() => ({ status: 0, retryAfter: null, body: {} as AnswerBody }));
      if (answer.status === 201 || answer.status === 409) {
        progress.answers += 1;
        const decidedBy = answer.status === 409 ? answer.body.details?.decided_by : undefined;
        verdicts.push({ person, workerId: worker.worker_id, requestId, status: answer.status, decidedBy, retries, askedAt, answeredAt: Date.now() });
        break;
      }
      if (answer.status !== 0 && !((answer.status === 503 || answer.status === 504) && answer.retryAfter))
        throw new Error(`${person} deciding ${requestId} of ${worker.worker_id} was answered ${answer.status} ${JSON.stringify(answer.body)}`);
      retries.push(`${answer.status} ${answer.body.code ?? ''}`.trim());
      await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
    }
  }
  return verdicts;
}
