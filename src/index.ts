export * from './errors.js';
export * from './native.js';
export { loadConfig, DEFAULT_CONFIG, type Config } from './config.js';
export { startService, type Service, type ServiceOptions } from './service.js';
export { type RunningServer } from './http/server.js';
