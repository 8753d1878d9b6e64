export * from './nats.js';
export * from './postgres.js';
export * from './wait.js';
