import type { QueryClient } from '@tanstack/react-query';
import {
  signModeOf,
  type AppEntry,
  type SignModeInfo,
  type SignStatus,
  type SignType,
} from '@sideport/contracts';
import { applySignEvent } from '../../entries/apply-event';
import { alertFailure, ApiError } from '../../lib/api';
import { confirmationAddendum } from './capabilities';
import { RESIGN_QUESTION } from './messages';
import { acknowledgeTeamMove, askSign, checkSign, installUrl } from './queries';

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

/** A mode recovery signs again (its certificate revoked or expiring: docs/sign-service.md), until it is Done. */
export const RESIGNING_LABEL = 'Re-signing';

export const isResigning = (entry: AppEntry, type: SignType) =>
  (entry.resigning ?? []).includes(type) &&
  (signStatusOf(entry, type) === 'Pending' || signStatusOf(entry, type) === 'Process');

/**
 * docs/product.md, Validation and confirmations, to the letter: 'Really want request sign' plus the mode in parentheses (IAP, IGG,
 * IAP + IGG or DUP; normal names none) and the app name.
 */
export const signQuestion = (mode: SignModeInfo, appName: string) =>
  `Really want request sign${mode.confirmLabel ? ` (${mode.confirmLabel})` : ''} ${appName}`;

type Version = Pick<AppEntry, 'app_id' | 'app_ver_id' | 'name'> & Partial<Pick<AppEntry, 'capabilities'>>;

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
      { onlyForward, isLocal: true },
    );
  show('Pending');
  try {
    const answer = await askSign(entry.app_id, entry.app_ver_id, mode.type);
    show(answer.status, true);
  } catch (error) {
    show(before);
    alertFailure(error);
  }
}

/** The question, then what signing in this mode loses of the app's capabilities, when it loses any. */
export async function requestSign(queryClient: QueryClient, entry: Version, mode: SignModeInfo) {
  if (!window.confirm(signQuestion(mode, entry.name) + confirmationAddendum(entry, mode.type))) return;
  await putSign(queryClient, entry, mode, 'No');
}

/** 'Sign again' beside a failed install preflight: the same new sign as the 406's confirmation asks for. */
export const signAgain = (queryClient: QueryClient, entry: Version, mode: SignModeInfo) =>
  putSign(queryClient, entry, mode, 'Done');

/** A failed install preflight that a new sign cures (409 with Sideport-Remedy: sign-again). */
const curedBySigning = (error: unknown): error is ApiError =>
  error instanceof ApiError && error.status === 409 && error.remedy === 'sign-again' && error.message !== '';

/**
 * Install (docs/product.md, Calls and Errors): check the sign first; a 406 means a device was registered after
 * it was signed, so a new sign is offered; a 409 that a new sign cures (the certificate revoked, the profile
 * expired: docs/sign-service.md, Install preflight) goes to `onRefused`, which shows the reason and 'Sign
 * again'; a 409 for the first install from the team the person moved to (issue 30) is asked, then
 * acknowledged; otherwise go to the install URL.
 */
export async function installSigned(
  queryClient: QueryClient,
  entry: Version,
  mode: SignModeInfo,
  /** Given the itms-services URL: goes there on iOS, shows it as a QR code elsewhere. */
  open: (url: string) => void,
  onRefused: (reason: string) => void,
) {
  try {
    await checkSign(entry.app_id, entry.app_ver_id, mode.type);
  } catch (error) {
    if (curedBySigning(error)) return onRefused(error.message);
    if (!(error instanceof ApiError && error.status === 406)) return alertFailure(error);
    if (window.confirm(RESIGN_QUESTION)) await putSign(queryClient, entry, mode, 'Done');
    return;
  }
  try {
    open((await installUrl(entry.app_id, entry.app_ver_id, mode.type)).url);
  } catch (error) {
    if (curedBySigning(error)) return onRefused(error.message);
    if (!(error instanceof ApiError && error.remedy === 'acknowledge-team-move')) return alertFailure(error);
    // The first install from the team the person moved to: what stays with the old team, app by app.
    if (!window.confirm(error.message)) return;
    try {
      await acknowledgeTeamMove();
      open((await installUrl(entry.app_id, entry.app_ver_id, mode.type)).url);
    } catch (again) {
      alertFailure(again);
    }
  }
}
