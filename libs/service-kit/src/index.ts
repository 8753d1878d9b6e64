export * from './config.js';
export * from './logger.js';
export * from './shutdown.js';
export * from './version.js';
export * from './common-settings.js';
export * from './running-service.js';
export * from './child-processes.js';
export * from './retry.js';
