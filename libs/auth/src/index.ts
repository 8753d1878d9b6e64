export * from './worker-token.js';
export * from './principal.js';
export * from './oidc.js';
export * from './local-issuer.js';
export * from './worker-directory.js';
export * from './decision-links.js';
export * from './user-assertion.js';
