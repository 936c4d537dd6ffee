export * from './errors.js';
export * from './native.js';
export { loadConfig, DEFAULT_CONFIG, type Config } from './config.js';
export { startServer, type RunningServer } from './http/server.js';
