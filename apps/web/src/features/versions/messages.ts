/** Confirmations and alerts of docs/product.md, Validation and confirmations, Calls and Errors on the decrypt and version flows, verbatim. */
export const DECRYPT_WARNING = 'Versions that are too old or certain apps may not work.';
export const FREE_USER_WARNING =
  'Free users take a long time to decrypt. Service subscription is available on My Page.';
export const NEED_PREMIUM = 'Need decrypt premium.';
/** The server's 429 sentence, said before asking when today's requests are used up. */
export const DAILY_LIMIT = 'Daily limit reached.';
export const PREMIUM_QUEUE_QUESTION = 'Move to the premium queue?';
export const NO_PERMISSION = 'Do not have permission.';
export const POPUP_BLOCKED = 'Perhaps the popup is blocked. Open on current page?';
export const RESIGN_QUESTION =
  'This app was signed before Registered on one of your devices. Do you want to request a new sign?';
export const MODAL_NOTE = 'When the decryption is complete, the normal version is visible.';

export const deleteQuestion = (name: string, isQueued: boolean) =>
  `Really want delete '${name}'${isQueued ? ' in queue?' : '?'}`;
export const blacklistQuestion = (name: string) => `Add to black list '${name}'?`;
/** Beside a failed install preflight's sentence (the server's Sideport-Remedy: sign-again). */
export const SIGN_AGAIN = 'Sign again';
