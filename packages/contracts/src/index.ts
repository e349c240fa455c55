export * from './auth.js';
export * from './account.js';
export * from './catalog.js';
export * from './decrypt.js';
export * from './sign.js';
export * from './agent.js';
export * from './admin.js';
export * from './devices.js';
