/**
 * The certificates signing certificates name as their issuer's address (Authority Information
 * Access, 'CA Issuers', RFC 5280 4.2.2.1; Apple's name their WWDR intermediate so): fetched once
 * and kept in the database, so that every process and every restart completes a chain without
 * asking again. Only an answer that reads as a certificate is kept.
 */
import { X509Certificate } from 'node:crypto';
import { fetchCaIssuer, type IssuerFetcher } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import * as q from './queries.js';

const SETTING_PREFIX = 'ca_issuers ';

function readsAsCertificate(body: Buffer): boolean {
  try {
    const text = body.subarray(0, 11).toString('latin1');
    new X509Certificate(text === '-----BEGIN ' ? body.toString('utf8') : body);
    return true;
  } catch {
    return false;
  }
}

export function createKeptIssuerFetcher(deps: { db: Database; timeoutMs?: number }): IssuerFetcher {
  return async (url) => {
    const key = `${SETTING_PREFIX}${url}`;
    const kept = await q.readSetting(deps.db, key);
    if (kept !== undefined) return Buffer.from(kept, 'base64');
    const body = await fetchCaIssuer(url, { timeoutMs: deps.timeoutMs ?? 5000 });
    if (readsAsCertificate(body)) await q.writeSetting(deps.db, key, body.toString('base64'));
    return body;
  };
}
