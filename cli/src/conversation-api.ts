import { apiPaths, type PostInterruptResponseType, type PostMessageBodyType, type PostMessageResponseType } from '@svc/protocol';
import type { Api } from './api.js';

/** Sends a message to a worker's agent: `svc send` and the composer of `svc attach`. */
export function sendMessage(api: Api, workerId: string, message: PostMessageBodyType): Promise<PostMessageResponseType> {
  return api.request<PostMessageResponseType>('POST', apiPaths.messages(workerId), message);
}

/** Ends the agent's current turn (not the worker): `svc interrupt` and the interrupt key of `svc attach`. */
export function interruptTurn(api: Api, workerId: string): Promise<PostInterruptResponseType> {
  return api.request<PostInterruptResponseType>('POST', apiPaths.interrupt(workerId));
}
