/** The keys of `svc attach` that talk to a conversation's agent: neither clashes with y, n, q (a prompt's and the quit key). */
export const CONVERSATION_KEYS = { compose: 'm', interrupt: 'x' } as const;
