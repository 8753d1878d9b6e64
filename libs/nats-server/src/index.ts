export * from './nats-server-process.js';
