import type { QueryClient } from '@tanstack/react-query';
import {
  signAnswer,
  signModeOf,
  urlAnswer,
  type AppEntry,
  type SignModeInfo,
  type SignStatus,
  type SignType,
} from '@sideport/contracts';
import { alertFailure, api, ApiError } from '../../lib/api';
import { applySignEvent } from '../live/apply-event';
import { RESIGN_QUESTION } from './messages';

/** The modes, their names, explanations and confirmation labels: packages/contracts, sign-modes.ts. */
export { SIGN_MODES } from '@sideport/contracts';

export const signStatusOf = (entry: AppEntry, type: SignType): SignStatus =>
  entry[signModeOf(type).statusField];

/** docs/product.md, States: No requests, Pending 'Enqueued...', Process 'Processing...', Done 'Install'. */
export const SIGN_BUTTON_LABELS: Record<SignStatus, string> = {
  No: 'Sign',
  Pending: 'Enqueued...',
  Process: 'Processing...',
  Done: 'Install',
};

/**
 * docs/product.md, Validation and confirmations, to the letter: 'Really want request sign' plus the mode in parentheses (IAP, IGG,
 * IAP + IGG or DUP; normal names none) and the app name.
 */
export const signQuestion = (mode: SignModeInfo, appName: string) =>
  `Really want request sign${mode.confirmLabel ? ` (${mode.confirmLabel})` : ''} ${appName}`;

type Version = Pick<AppEntry, 'app_id' | 'app_ver_id' | 'name'>;

/**
 * PUT /api/sign. docs/product.md, States: requesting sets the mode Pending locally, at once; live events
 * take it on (Process, Done). The answer is applied only where it is ahead of what is shown: Done
 * at once when the artifact there still serves every device, or a sign already under way, neither
 * of which any event will announce again. A refusal puts back what was shown before.
 */
async function putSign(queryClient: QueryClient, entry: Version, mode: SignModeInfo, before: SignStatus) {
  const show = (status: SignStatus, onlyForward = false) =>
    applySignEvent(
      queryClient,
      { app_id: entry.app_id, app_ver_id: entry.app_ver_id!, sign_type: mode.type, status },
      { onlyForward },
    );
  show('Pending');
  try {
    const answer = signAnswer.parse(
      await api<unknown>(`/api/sign/${entry.app_id}/${entry.app_ver_id}`, {
        method: 'PUT',
        body: { type: mode.type },
      }),
    );
    show(answer.status, true);
  } catch (error) {
    show(before);
    alertFailure(error);
  }
}

export async function requestSign(queryClient: QueryClient, entry: Version, mode: SignModeInfo) {
  if (!window.confirm(signQuestion(mode, entry.name))) return;
  await putSign(queryClient, entry, mode, 'No');
}

/**
 * Install (docs/product.md, Calls and Errors): check the sign first; a 406 means a device was registered after
 * it was signed, so a new sign is offered; otherwise go to the install URL.
 */
export async function installSigned(
  queryClient: QueryClient,
  entry: Version,
  mode: SignModeInfo,
  /** Given the itms-services URL: goes there on iOS, shows it as a QR code elsewhere. */
  open: (url: string) => void,
) {
  const path = `${entry.app_id}/${entry.app_ver_id}/${mode.type}`;
  try {
    await api(`/api/check/sign/${path}`);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 406)) return alertFailure(error);
    if (window.confirm(RESIGN_QUESTION)) await putSign(queryClient, entry, mode, 'Done');
    return;
  }
  try {
    open(urlAnswer.parse(await api<unknown>(`/api/install/${path}`)).url);
  } catch (error) {
    alertFailure(error);
  }
}
