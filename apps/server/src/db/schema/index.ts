export * from './accounts.js';
export * from './catalog.js';
export * from './billing.js';
export * from './developer-accounts.js';
export * from './devices.js';
export * from './decrypt.js';
export * from './sign.js';
export * from './identity.js';
