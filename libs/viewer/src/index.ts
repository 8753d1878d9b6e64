export * from './worker-view.js';
export * from './event-stream.js';
export * from './summary.js';
export * from './history.js';
