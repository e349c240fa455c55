import { QueryClient, type InfiniteData } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import { NO_SIGN_STATUSES, type AppEntry, type VersionEvent } from '@sideport/contracts';
import { infoQuery } from '../features/account/queries';
import { adminDevicesQuery, adminQueueQuery } from '../features/admin/queries';
import { listQuery, searchQuery } from '../features/catalog/queries';
import { historyQuery, versionsQuery } from '../features/versions/queries';
import {
  applyLiveEvent,
  applySignEvent,
  applyVersionEvent,
  reconcileWithLedger,
  refreshAfterGap,
  removeEntry,
} from './apply-event';

const entry = (app_id: string, app_ver_id: string | null, status: AppEntry['status']): AppEntry => ({
  app_id,
  app_ver_id,
  country: 'KR',
  name: `App ${app_id}`,
  developer: 'Dev',
  version: '1.0',
  icon: '',
  itunes: '',
  raiting: null,
  raiting_count: null,
  bundle_id: `com.example.${app_id}`,
  require: '14.0',
  size: 10,
  premium: false,
  status,
  ...NO_SIGN_STATUSES,
  store_size: null,
  store_require: null,
  decrypted_at: null,
  reason: null,
  position: null,
});

const event = (
  app_id: string,
  app_ver_id: string | null,
  status: VersionEvent['status'],
  extra: Partial<VersionEvent> = {},
): VersionEvent => ({
  type: 'version',
  country: 'KR',
  app_id,
  app_ver_id,
  version: '1.0',
  status,
  premium: false,
  progress: null,
  ...extra,
});

type Pages = InfiniteData<{ entries: AppEntry[]; anchor: string | null }>;
const pages = (...lists: AppEntry[][]): Pages => ({
  pages: lists.map((entries) => ({ entries, anchor: null })),
  pageParams: lists.map((_, i) => i),
});

function clientWith(data: Array<[readonly unknown[], unknown]>) {
  const client = new QueryClient();
  for (const [key, value] of data) client.setQueryData(key, value);
  return client;
}
const statuses = (client: QueryClient, key: readonly unknown[]) =>
  client
    .getQueryData<Pages>(key)!
    .pages.flatMap((p) => p.entries.map((e) => `${e.app_id}/${e.app_ver_id}:${e.status}`));
const isStale = (client: QueryClient, key: readonly unknown[]) => client.getQueryState(key)!.isInvalidated;

describe('applyVersionEvent', () => {
  it('shows a working status and its progress in the queue and the search results in place', () => {
    const client = clientWith([
      [['list', 'queue'], pages([entry('1', null, 'Pending'), entry('2', null, 'Pending')])],
      [['search', 'KR', 'one'], [entry('1', null, 'Pending')]],
    ]);
    applyVersionEvent(client, event('1', null, 'Downloading', { progress: 40 }));
    expect(statuses(client, ['list', 'queue'])).toEqual(['1/null:Downloading', '2/null:Pending']);
    expect(
      client.getQueryData<Array<AppEntry & { progress: number }>>(['search', 'KR', 'one'])![0],
    ).toMatchObject({
      status: 'Downloading',
      progress: 40,
    });
  });

  it('moves an app-level entry that is Done out of the queue and refetches latest', () => {
    const client = clientWith([
      [['list', 'queue'], pages([entry('1', null, 'Process')])],
      [['list', 'latest'], pages([entry('9', '90', 'Done')])],
      [['search', 'KR', 'one'], [entry('1', null, 'Process')]],
    ]);
    applyVersionEvent(client, event('1', '880001', 'Done', { previous_app_ver_id: null, version: '1.2' }));
    expect(statuses(client, ['list', 'queue'])).toEqual([]);
    expect(isStale(client, ['list', 'latest'])).toBe(true);
    expect(client.getQueryData<AppEntry[]>(['search', 'KR', 'one'])![0]).toMatchObject({
      app_ver_id: '880001',
      status: 'Done',
      version: '1.2',
    });
  });

  it('refetches the queue when a shown entry changes status, as the places in line move', () => {
    const client = clientWith([
      [['list', 'queue'], pages([entry('1', null, 'Pending'), entry('2', null, 'Pending')])],
    ]);
    applyVersionEvent(client, event('1', null, 'Pending', { progress: 10 }));
    expect(isStale(client, ['list', 'queue'])).toBe(false);
    applyVersionEvent(client, event('1', null, 'Downloading'));
    expect(statuses(client, ['list', 'queue'])).toEqual(['1/null:Downloading', '2/null:Pending']);
    expect(isStale(client, ['list', 'queue'])).toBe(true);
  });

  it('refetches a search and a version list whose entry became Not, for the reason its requester may see', () => {
    const client = clientWith([
      [['search', 'KR', 'one'], [entry('1', null, 'Process')]],
      [['versions', 'KR', '1'], [entry('1', '10', 'Process')]],
    ]);
    applyVersionEvent(client, event('1', null, 'Not'));
    applyVersionEvent(client, event('1', '10', 'Not'));
    expect(isStale(client, ['search', 'KR', 'one'])).toBe(true);
    expect(isStale(client, ['versions', 'KR', '1'])).toBe(true);
  });

  it('refetches the queue for a new request it does not show, and not for work on one it does not show', () => {
    const client = clientWith([[['list', 'queue'], pages([entry('1', null, 'Pending')])]]);
    applyVersionEvent(client, event('5', null, 'Downloading'));
    expect(isStale(client, ['list', 'queue'])).toBe(false);
    applyVersionEvent(client, event('5', null, 'Pending'));
    expect(isStale(client, ['list', 'queue'])).toBe(true);
  });

  it('removes a deleted entry from the lists and makes its store version Available in a downgrade list', () => {
    const client = clientWith([
      [['list', 'latest'], pages([entry('1', '10', 'Done'), entry('2', '20', 'Done')])],
      [
        ['version-history', 'KR', '1'],
        { name: 'App 1', version_list: [entry('1', '11', 'Available'), entry('1', '10', 'Done')] },
      ],
      [['versions', 'KR', '1'], [entry('1', '10', 'Done')]],
    ]);
    applyVersionEvent(client, event('1', '10', 'Deleted'));
    expect(statuses(client, ['list', 'latest'])).toEqual(['2/20:Done']);
    expect(
      client
        .getQueryData<{ version_list: AppEntry[] }>(['version-history', 'KR', '1'])!
        .version_list.map((e) => e.status),
    ).toEqual(['Available', 'Available']);
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])).toEqual([]);
  });

  it('updates the open version list of that app only, and refetches it when a version is Done', () => {
    const client = clientWith([
      [['versions', 'KR', '1'], [entry('1', '10', 'Pending')]],
      [['versions', 'KR', '2'], [entry('2', '10', 'Pending')]],
    ]);
    applyVersionEvent(client, event('1', '10', 'Process'));
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]!.status).toBe('Process');
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '2'])![0]!.status).toBe('Pending');
    expect(isStale(client, ['versions', 'KR', '1'])).toBe(false);
    applyVersionEvent(client, event('1', '10', 'Done'));
    expect(isStale(client, ['versions', 'KR', '1'])).toBe(true);
    expect(isStale(client, ['versions', 'KR', '2'])).toBe(false);
  });

  it("keeps another country's app-level request apart", () => {
    const client = clientWith([[['list', 'queue'], pages([entry('1', null, 'Pending')])]]);
    applyVersionEvent(client, event('1', null, 'Process', { country: 'US' }));
    expect(statuses(client, ['list', 'queue'])).toEqual(['1/null:Pending']);
    // Its request becoming a version does not touch this country's request either.
    applyVersionEvent(client, event('1', '10', 'Done', { country: 'US', previous_app_ver_id: null }));
    expect(statuses(client, ['list', 'queue'])).toEqual(['1/null:Pending']);
  });

  it("shows a store version Done in one country in every country's lists of the app, with their own names", () => {
    const us = (e: AppEntry): AppEntry => ({ ...e, country: 'US', name: 'US name' });
    const client = clientWith([
      [['versions', 'US', '1'], [us(entry('1', '10', 'Pending'))]],
      [['versions', 'US', '2'], [us(entry('2', '20', 'Pending'))]],
      [['search', 'US', 'one'], [us(entry('1', null, 'Available'))]],
      [['list', 'latest', 'US'], pages([us(entry('1', '10', 'Done'))])],
    ]);
    applyVersionEvent(client, event('1', '10', 'Done'));
    expect(client.getQueryData<AppEntry[]>(['versions', 'US', '1'])![0]).toMatchObject({
      status: 'Done',
      country: 'US',
      name: 'US name',
    });
    expect(isStale(client, ['versions', 'US', '1'])).toBe(true);
    expect(isStale(client, ['versions', 'US', '2'])).toBe(false);
    expect(isStale(client, ['search', 'US', 'one'])).toBe(true);
    applyVersionEvent(client, event('1', '10', 'Deleted'));
    expect(statuses(client, ['list', 'latest', 'US'])).toEqual([]);
  });

  it("ends a country's app-level request as the version it turned out to be", () => {
    const client = clientWith([
      [['list', 'queue'], pages([entry('1', null, 'Process')])],
      [['versions', 'KR', '1'], [entry('1', null, 'Process')]],
    ]);
    applyVersionEvent(client, event('1', '10', 'Done', { previous_app_ver_id: null }));
    expect(statuses(client, ['list', 'queue'])).toEqual([]);
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]).toMatchObject({
      app_ver_id: '10',
      status: 'Done',
    });
  });
});

describe('an answer that lands after a live event', () => {
  it('is brought up to the event: a refetch answering from before Done does not bring the entry back as working', async () => {
    const client = new QueryClient();
    let answer: AppEntry[] = [entry('1', null, 'Process'), entry('2', null, 'Pending')];
    const key = ['list', 'queue'];
    await client.prefetchInfiniteQuery({
      queryKey: key,
      initialPageParam: 0,
      queryFn: () => ({ entries: answer, anchor: null }),
    });
    const stop = client.getQueryCache().subscribe((e) => {
      if (e.type === 'updated' && e.action.type === 'success' && !e.action.manual)
        reconcileWithLedger(client, e.query.queryKey);
    });
    applyLiveEvent(client, event('1', '10', 'Done', { previous_app_ver_id: null }));
    expect(statuses(client, key)).toEqual(['2/null:Pending']);
    // The server's answer was computed before the Done (reused for LIST_CACHE_MS, or in flight).
    await client.refetchQueries({ queryKey: key });
    expect(statuses(client, key)).toEqual(['2/null:Pending']);
    // A later change the ledger has not heard of stands as the server says.
    answer = [entry('2', null, 'Process')];
    await client.refetchQueries({ queryKey: key });
    expect(statuses(client, key)).toEqual(['2/null:Process']);
    // After a gap the ledger is forgotten: what the server says next is newer than it.
    refreshAfterGap(client);
    answer = [entry('1', '10', 'Pending')];
    await client.refetchQueries({ queryKey: key });
    expect(statuses(client, key)).toEqual(['1/10:Pending']);
    stop();
  });
});

describe('removeEntry', () => {
  it('takes a deleted entry out of search results too', () => {
    const client = clientWith([
      [
        ['search', 'KR', 'one'],
        [entry('1', '10', 'Done'), entry('2', null, 'Available')],
      ],
    ]);
    removeEntry(client, { country: 'KR', app_id: '1', app_ver_id: '10' });
    expect(client.getQueryData<AppEntry[]>(['search', 'KR', 'one'])!.map((e) => e.app_id)).toEqual(['2']);
  });
});

describe('sign and device events', () => {
  it("sets that mode's status on the version in the modal", () => {
    const client = clientWith([[['versions', 'KR', '1'], [entry('1', '10', 'Done')]]]);
    applySignEvent(client, { app_id: '1', app_ver_id: '10', sign_type: 3, status: 'Process' });
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]).toMatchObject({
      both_sign: 'Process',
      iap_sign: 'No',
    });
  });

  it('leaves a status that is ahead alone when told to go only forward', () => {
    const client = clientWith([
      [['versions', 'KR', '1'], [{ ...entry('1', '10', 'Done'), normal_sign: 'Process' }]],
    ]);
    const sign = { app_id: '1', app_ver_id: '10', sign_type: 0 } as const;
    applySignEvent(client, { ...sign, status: 'Pending' }, { onlyForward: true });
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]!.normal_sign).toBe('Process');
    applySignEvent(client, { ...sign, status: 'Done' }, { onlyForward: true });
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]!.normal_sign).toBe('Done');
    applySignEvent(client, { ...sign, status: 'Pending' });
    expect(client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]!.normal_sign).toBe('Pending');
  });

  it('shows a mode recovery signs again as re-signing until a live event says otherwise, whatever this tab guesses', () => {
    const client = clientWith([
      [['versions', 'KR', '1'], [{ ...entry('1', '10', 'Done'), normal_sign: 'Done', dup_sign: 'Done' }]],
    ]);
    const shown = () => client.getQueryData<AppEntry[]>(['versions', 'KR', '1'])![0]!;
    applyLiveEvent(client, {
      type: 'sign',
      app_id: '1',
      app_ver_id: '10',
      sign_type: 4,
      status: 'Pending',
      resigning: true,
    });
    applyLiveEvent(client, {
      type: 'sign',
      app_id: '1',
      app_ver_id: '10',
      sign_type: 0,
      status: 'Pending',
      resigning: true,
    });
    expect(shown()).toMatchObject({ normal_sign: 'Pending', dup_sign: 'Pending', resigning: [0, 4] });
    applySignEvent(
      client,
      { app_id: '1', app_ver_id: '10', sign_type: 0, status: 'Pending' },
      { isLocal: true },
    );
    expect(shown().resigning).toEqual([0, 4]);
    applyLiveEvent(client, { type: 'sign', app_id: '1', app_ver_id: '10', sign_type: 4, status: 'Done' });
    expect(shown()).toMatchObject({ dup_sign: 'Done', resigning: [0] });
    applyLiveEvent(client, { type: 'sign', app_id: '1', app_ver_id: '10', sign_type: 0, status: 'Done' });
    expect(shown()).not.toHaveProperty('resigning');
  });

  it("refetches the account (its devices), an admin's devices waiting and the developer accounts on a device event", () => {
    const client = clientWith([
      [['info'], { Id: 'x' }],
      [['admin', 'devices'], []],
      [['admin', 'accounts'], []],
      [['admin', 'queue'], []],
    ]);
    applyLiveEvent(client, { type: 'device' });
    expect(isStale(client, ['info'])).toBe(true);
    expect(isStale(client, ['admin', 'devices'])).toBe(true);
    expect(isStale(client, ['admin', 'accounts'])).toBe(true);
    expect(isStale(client, ['admin', 'queue'])).toBe(false);
  });
});

describe('the caches the pages fill', () => {
  // Seeded under the keys of the features' own queries: a key renamed there is still reached here.
  const queue = listQuery('queue', 'KR').queryKey;
  const latest = listQuery('latest', 'KR').queryKey;
  const search = searchQuery('KR', 'one').queryKey;
  const versions = versionsQuery('KR', '1').queryKey;
  const history = historyQuery('KR', '1').queryKey;
  const adminQueue = adminQueueQuery.queryKey;

  it('all show a working status a live event brings', () => {
    const client = clientWith([
      [queue, pages([entry('1', '10', 'Pending')])],
      [latest, pages([entry('1', '10', 'Pending')])],
      [search, [entry('1', '10', 'Pending')]],
      [versions, [entry('1', '10', 'Pending')]],
      [history, { name: 'App 1', version_list: [entry('1', '10', 'Pending')] }],
      [adminQueue, pages([entry('1', '10', 'Pending')])],
    ]);
    applyVersionEvent(client, event('1', '10', 'Process'));
    for (const key of [queue, latest, adminQueue]) expect(statuses(client, key)).toEqual(['1/10:Process']);
    expect(client.getQueryData<AppEntry[]>(search)![0]!.status).toBe('Process');
    expect(client.getQueryData<AppEntry[]>(versions)![0]!.status).toBe('Process');
    expect(client.getQueryData<{ version_list: AppEntry[] }>(history)!.version_list[0]!.status).toBe(
      'Process',
    );
  });

  it('are asked again after a device event or a gap in the stream, as they may have missed one', () => {
    const seeded = (): Array<[readonly unknown[], unknown]> => [
      [queue, pages([])],
      [search, []],
      [versions, []],
      [adminQueue, pages([])],
      [adminDevicesQuery.queryKey, []],
      [infoQuery.queryKey, { Id: 'x' }],
    ];
    const afterDevice = clientWith(seeded());
    applyLiveEvent(afterDevice, { type: 'device' });
    expect(isStale(afterDevice, infoQuery.queryKey)).toBe(true);
    expect(isStale(afterDevice, adminDevicesQuery.queryKey)).toBe(true);

    const afterGap = clientWith(seeded());
    refreshAfterGap(afterGap);
    for (const [key] of seeded()) expect(isStale(afterGap, key)).toBe(true);
  });
});
