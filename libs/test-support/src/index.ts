export * from './nats.js';
export * from './postgres.js';
export * from './wait.js';
export * from './bus-fixture.js';
export * from './oidc-issuer.js';
export * from './events.js';
export * from './service-process.js';
export * from './pgbouncer.js';
