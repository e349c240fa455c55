import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

const repositoryRoot = path.resolve(import.meta.dirname, '../../../..');

describe('loadConfig', () => {
  it('gives working defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ PORT: 8080, HOST: '0.0.0.0', DATA_DIR: path.join(repositoryRoot, 'data'), FREE_DAILY_LIMIT: 3 });
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

  it('resolves a relative DATA_DIR from the repository root, whichever folder the process runs in', () => {
    const started = process.cwd();
    try {
      // npm start runs in apps/server, npx sideport in the repository root: both must meet one ./data.
      const seen = [repositoryRoot, path.join(repositoryRoot, 'apps/server'), '/'].map((dir) => {
        process.chdir(dir);
        return [loadConfig({}).DATA_DIR, loadConfig({ DATA_DIR: 'var/sideport' }).DATA_DIR];
      });
      expect(new Set(seen.map((pair) => pair.join('|'))).size).toBe(1);
      expect(seen[0]).toEqual([path.join(repositoryRoot, 'data'), path.join(repositoryRoot, 'var/sideport')]);
      expect(loadConfig({ DATA_DIR: '/srv/sideport' }).DATA_DIR).toBe('/srv/sideport');
    } finally {
      process.chdir(started);
    }
  });

  it('requires SECRET_KEY in production, naming it beside every other problem', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true' })).toThrow(/SECRET_KEY: must be set in production/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRET_KEY: must be set[\s\S]*STRIPE_SECRET_KEY: must be set/);
    expect(() => loadConfig({ SECRET_KEY: 'short' })).toThrow(/SECRET_KEY: must be at least 32 characters/);
    expect(loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true', SECRET_KEY: 'k'.repeat(32) }).SECRET_KEY).toBe('k'.repeat(32));
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).PORT).toBe(8080);
  });
});
