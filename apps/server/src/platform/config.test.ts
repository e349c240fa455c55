import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

describe('loadConfig', () => {
  it('gives working defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ PORT: 8080, HOST: '0.0.0.0', DATA_DIR: path.resolve('./data'), FREE_DAILY_LIMIT: 3 });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names every bad variable in one message', () => {
    expect(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', CHAT_URL: 'not a url' })).toThrow(
      /PORT: must be a number[\s\S]*DATABASE_URL: must be a postgres:\/\/ URL[\s\S]*CHAT_URL: must be an absolute URL/,
    );
  });

  it('refuses an admin id without a password, and a short admin password', () => {
    expect(() => loadConfig({ ADMIN_ID: 'root' })).toThrow(/ADMIN_PASSWORD: ADMIN_ID and ADMIN_PASSWORD must be set together/);
    expect(() => loadConfig({ ADMIN_ID: 'root', ADMIN_PASSWORD: 'short' })).toThrow(/ADMIN_PASSWORD: must be at least 8/);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).PORT).toBe(8080);
  });
});
