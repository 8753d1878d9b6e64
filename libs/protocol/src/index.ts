/** The v1 wire contract. Import from '@svc/protocol'; v1 is the current and only version. */
export * from './v1/index.js';
