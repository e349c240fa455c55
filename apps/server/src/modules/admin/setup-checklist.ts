/**
 * The admin console's setup checklist: what this server runs with, each step with the one command
 * or setting that completes it. It reads the configuration and asks two live questions (is the
 * store answering, has an agent been seen); nothing here changes anything.
 */
import type { SetupItem } from '@sideport/contracts';
import { AppError } from '../../platform/errors.js';
import { createMicroCache } from '../../platform/micro-cache.js';
import type { Config } from '../../platform/config.js';
import { PART_LABELS, type FaultTracker } from '../../platform/faults.js';
import type { AgentService } from '../agents/service.js';
import type { ItunesClient } from '../catalog/itunes.js';

export interface SetupChecklistDeps {
  config: Pick<Config, 'PUBLIC_URL' | 'FEATHER_IPA' | 'ITUNES_BASE_URL'>;
  itunes: Pick<ItunesClient, 'lookup'>;
  agents: Pick<AgentService, 'presence'>;
  identityKind: 'dev' | 'apple';
  billingProvider: 'dev' | 'stripe';
  storage: { kind: 'local' | 's3'; description: string };
  /** What this process last found failing (platform/faults.ts). */
  faults?: Pick<FaultTracker, 'down'>;
}

/** A store answer is reused this long: an admin reloading the console does not ask Apple each time. */
const STORE_CHECK_CACHE_MS = 60_000;
/** Any app id will do: an answer, even an empty one, shows the store is reachable. */
const PROBE_APP_ID = 284882215;

const ADMIN_AGENT_STEPS =
  "Create an agent on the Agents tab (or npx sideport agent:create <name>), then on the agent's machine: SIDEPORT_AGENT_TOKEN=<token> npx sideport-agent --server <this site> --command '<your decrypt command>'. npm run demo shows one at work.";

export function createSetupChecklist(deps: SetupChecklistDeps) {
  const { config } = deps;
  const storeCache = createMicroCache<{ problem: string | null }>({ ttlMs: STORE_CHECK_CACHE_MS, max: 1 });

  async function storeItem(): Promise<SetupItem> {
    const { problem } = await storeCache.get('store', async () => {
      try {
        await deps.itunes.lookup('us', PROBE_APP_ID);
        return { problem: null };
      } catch (err) {
        return { problem: err instanceof AppError ? err.message : 'It did not answer.' };
      }
    });
    return {
      key: 'store',
      label: 'App Store catalogue reachable',
      state: problem === null ? 'done' : 'todo',
      detail:
        problem === null ? `${config.ITUNES_BASE_URL} answers.` : `${config.ITUNES_BASE_URL}: ${problem}`,
      action:
        problem === null
          ? null
          : 'Let this server reach itunes.apple.com, or set ITUNES_BASE_URL to a server speaking its API (npx sideport itunes:serve fixtures/itunes/*.json serves recorded answers).',
    };
  }

  /** The outside parts this process found failing in the last minute, each named with when and why. */
  function partsItem(): SetupItem {
    const down = deps.faults?.down() ?? [];
    return {
      key: 'parts',
      label: 'Outside parts answering',
      state: down.length === 0 ? 'done' : 'todo',
      detail:
        down.length === 0
          ? 'The database, the file store, the disk and the outside services answer this process.'
          : down
              .map(
                (d) =>
                  `${PART_LABELS[d.part]} is failing since ${d.since.toISOString()} (${d.reason.replace(/\.$/, '')}).`,
              )
              .join(' '),
      action:
        down.length === 0
          ? null
          : 'Requests that need it are answered 503 with Retry-After and background work waits; both resume by themselves once it answers. Check it from this server (sideport_dependency_up in /metrics says which).',
    };
  }

  async function agentItem(): Promise<SetupItem> {
    const { online, lastSeenAt } = await deps.agents.presence();
    const seen = lastSeenAt ? `last seen ${lastSeenAt.toISOString()}` : 'none seen yet';
    return {
      key: 'agent',
      label: 'A decrypt agent online',
      state: online > 0 ? 'done' : 'todo',
      detail:
        online > 0
          ? `${online} online, ${seen}.`
          : `No agent online (${seen}): decrypt requests wait in the queue as Enqueued... until one claims them.`,
      action: online > 0 ? null : ADMIN_AGENT_STEPS,
    };
  }

  function identityItem(): SetupItem {
    const isApple = deps.identityKind === 'apple';
    return {
      key: 'identity',
      label: 'Signing identity',
      state: isApple ? 'done' : 'todo',
      detail: isApple
        ? 'Your Apple developer account registers devices and signs.'
        : 'The dev identity: the whole pipeline runs, but real devices will not install what it signs.',
      action: isApple
        ? null
        : 'Set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY (an App Store Connect API key with the Admin role).',
    };
  }

  function billingItem(): SetupItem {
    const isStripe = deps.billingProvider === 'stripe';
    return {
      key: 'billing',
      label: 'Billing',
      state: isStripe ? 'done' : 'todo',
      detail: isStripe
        ? 'Stripe takes the payments.'
        : 'Test mode: the checkout is a local page marked TEST MODE and nobody pays.',
      action: isStripe
        ? null
        : 'Set STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET and the six STRIPE_PRICE_* ids, and add the webhook POST /api/webhooks/stripe in Stripe.',
    };
  }

  function storageItem(): SetupItem {
    const isS3 = deps.storage.kind === 's3';
    return {
      key: 'storage',
      label: 'Storage',
      state: isS3 ? 'done' : 'optional',
      detail: isS3
        ? `IPAs are kept in the ${deps.storage.description}.`
        : `IPAs are kept on ${deps.storage.description}: fine for one machine.`,
      action: isS3
        ? null
        : 'For several machines, set STORAGE_URL=s3://bucket?endpoint=https://...&region=... (with DATABASE_URL).',
    };
  }

  function publicUrlItem(): SetupItem {
    const isHttps = config.PUBLIC_URL?.startsWith('https:') ?? false;
    return {
      key: 'public_url',
      label: 'PUBLIC_URL on https',
      state: isHttps ? 'done' : 'todo',
      detail: isHttps
        ? `${config.PUBLIC_URL} is the site's address.`
        : `${config.PUBLIC_URL ? `${config.PUBLIC_URL} is not https` : 'PUBLIC_URL is not set'}: iOS enrolls devices and installs apps only over HTTPS with a certificate it trusts.`,
      action: isHttps
        ? null
        : 'Set PUBLIC_URL=https://<your site> (behind a reverse proxy with a real certificate).',
    };
  }

  function featherItem(): SetupItem {
    const isSet = config.FEATHER_IPA !== undefined;
    return {
      key: 'feather',
      label: 'Feather',
      state: isSet ? 'done' : 'optional',
      detail: isSet ? `Feather is offered from ${config.FEATHER_IPA}.` : 'Feather Install is not offered.',
      action: isSet ? null : 'Set FEATHER_IPA to the path of the Feather IPA to offer it on My page.',
    };
  }

  return {
    /** Every item, in the order an operator completes them. */
    async items(): Promise<SetupItem[]> {
      const [store, agent] = await Promise.all([storeItem(), agentItem()]);
      return [
        partsItem(),
        store,
        agent,
        identityItem(),
        billingItem(),
        storageItem(),
        publicUrlItem(),
        featherItem(),
      ];
    },
  };
}

export type SetupChecklist = ReturnType<typeof createSetupChecklist>;
