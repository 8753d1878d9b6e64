export * from './worker-token.js';
