import { useEffect, useState } from 'react';
import { apiPaths } from '@svc/protocol';
import { ApiError } from './api.js';
import { useConsole } from './console-context.js';
import { useObjectUrl } from './use-object-url.js';

export type MessageImageState = { kind: 'loading' } | { kind: 'shown'; url: string } | { kind: 'gone' } | { kind: 'failed'; reason: string };

/**
 * An image of a person's message, read with the signed-in person's token (an `<img src>` cannot
 * carry it) and shown through a `blob:` URL while the caller shows it. `gone`: the control plane
 * no longer keeps it (its history keeps only its name).
 */
export function useMessageImage(workerId: string, sha256: string): MessageImageState {
  const { api } = useConsole();
  const [blob, setBlob] = useState<Blob>();
  const [failure, setFailure] = useState<MessageImageState>();
  useEffect(() => {
    let stopped = false;
    api
      .blob(apiPaths.messageImage(workerId, sha256))
      .then((read) => !stopped && setBlob(read))
      .catch((err: unknown) => {
        if (stopped) return;
        if (err instanceof ApiError && err.code === 'image_not_found') setFailure({ kind: 'gone' });
        else setFailure({ kind: 'failed', reason: err instanceof Error ? err.message : String(err) });
      });
    return () => {
      stopped = true;
    };
  }, [api, workerId, sha256]);
  const url = useObjectUrl(blob);
  if (failure) return failure;
  return url ? { kind: 'shown', url } : { kind: 'loading' };
}
