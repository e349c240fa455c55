export * from './auth.js';
export * from './account.js';
export * from './catalog.js';
