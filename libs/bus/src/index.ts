export * from './connection.js';
export * from './streams.js';
export * from './messaging.js';
export * from './nats-server-process.js';
export * from './health.js';
export * from './stored-events.js';
export * from './durable-publisher.js';
export * from './worker-directory.js';
