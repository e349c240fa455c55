export * from './accounts.js';
export * from './catalog.js';
