/**
 * Every error the server answers with, in one place (docs/architecture.md, API conventions), as
 * fastify keeps its own in lib/errors.js: a code, the HTTP status that carries its class, and the
 * sentence a person reads, fixed or made from the parts that vary. A code has one meaning; a new
 * refusal gets a new code here, and `fail(code, ...parts)` raises it (eslint refuses
 * `new AppError(` anywhere else).
 *
 * A few codes take a free sentence, each for one meaning, where the words are the point: input
 * that is not valid (BAD_REQUEST names the field), a state that forbids the change (CONFLICT says
 * which), a thing that does not exist or is not the caller's (NOT_FOUND names it), an agent's or
 * Apple's own reason passed on (RESULT_REFUSED, ASC_*), and the device answer's refusals.
 */

/** Bytes as a person reads them: 1.5 GB, 300 MB, 12 kB. */
function formatBytes(bytes: number): string {
  const units = ['bytes', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : Number(value.toFixed(1))} ${units[unit]}`;
}

/** A free sentence: the caller's words are the message. */
const said = (sentence: string) => sentence;

const reasonTail = (reason: string | null | undefined) => (reason ? `: ${reason.replace(/\.$/, '')}` : '');

const DOWNLOAD_AGAIN = 'download the device profile again from My page';

export const ERRORS = {
  // --- Requests in general -------------------------------------------------------------------
  /** The request's input is not valid; the sentence names the part and what is expected. */
  BAD_REQUEST: { status: 400, sentence: said },
  /** A thing named by the request does not exist, or is not the caller's to see. */
  NOT_FOUND: { status: 404, sentence: (what: string) => `${what} was not found.` },
  /** The thing exists, but its state forbids this change; the sentence says which state. */
  CONFLICT: { status: 409, sentence: said },
  BODY_IDLE_TIMEOUT: { status: 408, sentence: 'The request body stopped arriving. Send the request again.' },
  BODY_TIMEOUT: {
    status: 408,
    sentence: 'The request body took too long to arrive. Send the request again.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    sentence: (contentType: string) => `Send the IPA as the request body with Content-Type: ${contentType}.`,
  },
  HOST_INVALID: { status: 400, sentence: 'The Host header is not a valid host name.' },
  FORWARDED_PROTO_INVALID: {
    status: 400,
    sentence: 'The X-Forwarded-Proto header is neither http nor https.',
  },
  HOST_MISSING: { status: 400, sentence: 'Send a Host header naming this site.' },
  CROSS_SITE_REFUSED: { status: 403, sentence: 'Cross-site requests are not allowed.' },
  /** A state-changing call with neither Fetch Metadata nor Origin, and no proof it is the site's. */
  UNPROVEN_REFUSED: {
    status: 403,
    sentence: "This request did not show that it came from the site's own pages; open it from there.",
  },
  LINK_REFUSED: {
    status: 403,
    sentence: 'This download link is not valid or has expired. Ask for a new one.',
  },
  RANGE_NOT_SATISFIABLE: { status: 416, sentence: 'The requested range is outside the file.' },

  // --- The parts the server depends on (platform/faults.ts) ---------------------------------
  // Each 503 carries Retry-After: its `retryAfterSeconds` unless the error says when (a store's own).
  DATABASE_UNAVAILABLE: {
    status: 503,
    sentence: 'The database is not answering right now. Please retry in a few seconds.',
    retryAfterSeconds: 5,
  },
  SHUTTING_DOWN: {
    status: 503,
    sentence: 'This server is restarting. Please retry in a moment.',
    retryAfterSeconds: 2,
  },
  STORAGE_UNAVAILABLE: {
    status: 503,
    sentence: 'The file store is not answering right now. Please retry in a minute.',
    retryAfterSeconds: 30,
  },
  DISK_FULL: {
    status: 503,
    sentence: (neededBytes: number, freeBytes: number) =>
      `The server's disk is too full for this (${formatBytes(neededBytes)} needed, ${formatBytes(freeBytes)} free). Please retry later; the operator has been told.`,
    retryAfterSeconds: 300,
  },

  // --- Accounts and sessions -----------------------------------------------------------------
  NOT_SIGNED_IN: { status: 401, sentence: 'Please sign in.' },
  NOT_ADMIN: { status: 403, sentence: 'Do not have permission.' },
  WRONG_CREDENTIALS: { status: 401, sentence: 'The id or password is not correct.' },
  ID_TAKEN: { status: 409, sentence: 'This id is already taken.' },
  SIGN_UP_LIMIT: {
    status: 429,
    sentence: 'Too many accounts were created from this address. Please try again later.',
  },
  SIGN_IN_LIMIT: {
    status: 429,
    sentence: 'Too many sign-in attempts. Please wait a few minutes and try again.',
  },
  SETUP_LIMIT: { status: 429, sentence: 'Too many attempts from this address. Please wait a few minutes.' },
  SETUP_LINK_UNKNOWN: {
    status: 404,
    sentence: 'This setup link is not valid. Use the link the server printed last at start.',
  },
  SETUP_LINK_USED: {
    status: 410,
    sentence: 'An admin account exists, so this setup link no longer works. Sign in instead.',
  },
  EVENT_STREAMS_PER_SESSION: {
    status: 429,
    sentence:
      'This browser has too many live-update connections open. Close some tabs of this site and reload this one.',
  },
  EVENT_STREAMS_PER_USER: {
    status: 429,
    sentence:
      'Your account has too many live-update connections open. Close some tabs of this site, on any device, and reload this one.',
  },
  EVENT_STREAMS_FULL: {
    status: 429,
    sentence: 'The server has too many live-update connections open. Please reload this page in a minute.',
  },
  NO_SUCH_USER: { status: 404, sentence: (userId: string) => `No user with id ${userId}.` },

  // --- Catalogue and the store ---------------------------------------------------------------
  STORE_THROTTLED: {
    status: 503,
    sentence: 'The App Store is busy right now. Please retry in a minute.',
    retryAfterSeconds: 60,
  },
  STORE_TIMEOUT: {
    status: 503,
    sentence: 'The App Store did not answer in time. Please retry later.',
    retryAfterSeconds: 30,
  },
  STORE_UNREACHABLE: {
    status: 503,
    sentence: 'The App Store could not be reached. Please retry later.',
    retryAfterSeconds: 30,
  },
  /** The store answered 5xx: its outage, which passes. */
  STORE_UNAVAILABLE: {
    status: 503,
    sentence: 'The App Store is having trouble right now. Please retry later.',
    retryAfterSeconds: 30,
  },
  STORE_ERROR: { status: 502, sentence: 'The App Store answered with an error. Please retry later.' },
  APP_NOT_IN_STORE: {
    status: 404,
    sentence: (country: string, bundleId: string) =>
      `The store of ${country} has no app with the bundle id ${bundleId}.`,
  },

  // --- Decrypt requests and agents -----------------------------------------------------------
  BLACKLISTED: { status: 403, sentence: 'This app is on the black list and cannot be requested.' },
  PAID_REFUSED: { status: 403, sentence: 'Paid apps are not decrypted on this server.' },
  NEED_PREMIUM: { status: 403, sentence: 'Need decrypt premium.' },
  CANNOT_DECRYPT: {
    status: 409,
    sentence: (reason: string | null) => `This version cannot be decrypted${reasonTail(reason)}.`,
  },
  VERSION_UNKNOWN: {
    status: 404,
    sentence: "This version is not in the app's version list. Open Downgrade to load it.",
  },
  NOT_QUEUED: { status: 404, sentence: 'This request is not in the queue.' },
  NOT_DECRYPTED: { status: 404, sentence: 'This version is not decrypted yet.' },
  VERSION_GONE: { status: 404, sentence: 'This version is no longer available.' },
  ALREADY_DECRYPTED: { status: 409, sentence: 'This version is already decrypted.' },
  /** An Update asked of an app whose installed version is the store's (modules/updates). */
  UPDATE_CURRENT: { status: 409, sentence: "This app is already at the store's version." },
  ALREADY_REQUESTED: {
    status: 409,
    sentence: 'This app is already requested again; that request is in the queue.',
  },
  AGENT_TOKEN_MISSING: { status: 401, sentence: 'Send the agent token as Authorization: Bearer <token>.' },
  AGENT_TOKEN_INVALID: {
    status: 401,
    sentence: 'Send a valid agent token as Authorization: Bearer <token>.',
  },
  LEASE_LOST: { status: 409, sentence: 'This job is no longer yours: its lease ended or it was removed.' },
  JOB_FINISHED: { status: 410, sentence: 'This job is finished: the server has its result.' },
  NOT_A_VERSIONS_JOB: { status: 400, sentence: 'This job is not a versions job.' },
  JOB_TAKES_NO_IPA: { status: 400, sentence: 'This job takes no IPA.' },
  RESULT_VERSION_MISSING: {
    status: 400,
    sentence:
      'The IPA has no iTunesMetadata.plist naming its store version (softwareVersionExternalIdentifier); give the app_ver_id.',
  },
  /** An agent's upload the server will not keep; the sentence is the check that failed, kept as the attempt's reason. */
  RESULT_REFUSED: { status: 422, sentence: said },
  UPLOAD_TOO_LARGE: {
    status: 413,
    sentence: (maxBytes: number) => `The IPA is larger than this server accepts (${maxBytes} bytes).`,
  },
  UPLOAD_INTERRUPTED: { status: 400, sentence: 'The upload ended before the whole file arrived.' },

  // --- Devices and enrollment ----------------------------------------------------------------
  ENROLLMENT_LIMIT: {
    status: 429,
    sentence: (limit: number) =>
      `You downloaded ${limit} device profiles in the last 10 minutes; install one of them, or try again later.`,
  },
  ENROLLMENT_LINK_UNKNOWN: { status: 404, sentence: `This enrollment link is not known; ${DOWNLOAD_AGAIN}.` },
  ENROLLMENT_LINK_USED: {
    status: 410,
    sentence: (forAnotherDevice: boolean) =>
      `This enrollment link was already used; ${DOWNLOAD_AGAIN}${forAnotherDevice ? ' to add another device' : ''}.`,
  },
  ENROLLMENT_LINK_EXPIRED: {
    status: 410,
    sentence: `This enrollment link expired (it works for 10 minutes); ${DOWNLOAD_AGAIN}.`,
  },
  ENROLLMENT_CHALLENGE_MISMATCH: {
    status: 403,
    sentence: 'The device answer was made for another enrollment link.',
  },
  // The device answer's refusals (EnrollmentError): each sentence says what in the answer was wrong.
  ENROLLMENT_TOO_LARGE: { status: 413, sentence: said },
  ENROLLMENT_UNSIGNED: { status: 400, sentence: said },
  ENROLLMENT_MALFORMED: { status: 400, sentence: said },
  ENROLLMENT_SIGNER_UNKNOWN: { status: 400, sentence: said },
  ENROLLMENT_TAMPERED: { status: 400, sentence: said },
  ENROLLMENT_SIGNATURE_INVALID: { status: 400, sentence: said },
  ENROLLMENT_SIGNER_UNTRUSTED: { status: 400, sentence: said },
  ENROLLMENT_PLIST_UNSAFE: { status: 400, sentence: said },
  ENROLLMENT_PLIST_INVALID: { status: 400, sentence: said },
  ENROLLMENT_FIELDS_MISSING: { status: 400, sentence: said },
  DEVICE_CA_INVALID: { status: 500, sentence: 'The configured device CA holds no PEM certificate.' },
  PROFILE_SIGNING_P12_INVALID: {
    status: 500,
    sentence: (why: string) => `PROFILE_SIGNING_P12 could not be used: ${why}`,
  },
  SIMULATION_NEEDS_DEV_IDENTITY: {
    status: 409,
    sentence:
      'Simulated devices need the dev identity: with an App Store Connect key (ASC_KEY_ID) a made-up UDID would be registered on your Apple developer account.',
  },
  SIMULATION_NEEDS_TEST_BILLING: {
    status: 409,
    sentence:
      '--paid needs the test-mode billing provider (STRIPE_SECRET_KEY unset): pay for the device on My page instead.',
  },

  // --- Signing identity and the account pool -------------------------------------------------
  NO_DEV_CA: {
    status: 404,
    sentence: "Apple's certificates sign here: their CA is Apple's own, not one of this server's.",
  },
  SIGN_P12_NOT_ON_ACCOUNT: {
    status: 502,
    sentence: (certificateName: string, serial: string, keyId: string) =>
      `The certificate in SIGN_P12 ("${certificateName}", serial ${serial}) is not on the App Store Connect account of key ${keyId}: it was revoked, or belongs to another team.`,
  },
  NO_ACCOUNT_POOL: {
    status: 409,
    sentence:
      'The dev identity signs on this server: one identity with no device limits. Set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY to sign with Apple developer accounts, then add more here.',
  },
  ACCOUNT_KEY_MISSING: {
    status: 503,
    retryAfterSeconds: 300,
    sentence: (keyId: string) =>
      `This process has no key for developer account ${keyId}, which signs for this person: give it the configuration the servers have (ASC_ACCOUNTS_FILE).`,
  },
  /** No developer account has a slot for the device; the sentence says which family and when one frees. */
  NO_FREE_SLOT: { status: 409, sentence: said },
  // App Store Connect's failures (AscError): the sentence is the admin's, with Apple's own words.
  ASC_DEVICE_LIMIT: { status: 502, sentence: said },
  ASC_INVALID_UDID: { status: 502, sentence: said },
  ASC_KEY_REJECTED: { status: 502, sentence: said },
  ASC_UNAVAILABLE: { status: 503, sentence: said, retryAfterSeconds: 60 },
  ASC_OTHER: { status: 502, sentence: said },

  // --- Signing and installs ------------------------------------------------------------------
  NO_DEVICE: { status: 403, sentence: 'Register a device first on My Page.' },
  MODE_NOT_OFFERED: {
    status: 403,
    sentence: (modeName: string) => `${modeName} signing is not offered on this server.`,
  },
  NOT_SIGNED: {
    status: 404,
    sentence: 'This app is not signed for your devices yet. Request a sign first.',
  },
  SIGNED_BEFORE_DEVICE: {
    status: 406,
    sentence: 'This app was signed before Registered on one of your devices.',
  },
  ARTIFACT_GONE: {
    status: 404,
    sentence: 'This signed app is no longer available. Ask for a new install link.',
  },
  FEATHER_NOT_OFFERED: { status: 404, sentence: 'Feather is not offered on this server.' },
  FEATHER_SIGNING: {
    status: 409,
    sentence: 'Feather is still being signed for your devices. Try again in a minute.',
  },
  FEATHER_FAILED: {
    status: 409,
    sentence: (reason: string | null) =>
      `Feather could not be signed${reasonTail(reason)}. Please retry later.`,
  },
  CERT_GONE: {
    status: 404,
    sentence: 'This certificate is no longer available. Ask for a new one on My Page.',
  },
  // Install preflight (docs/sign-service.md): the sentence says what iOS would refuse and whether a sign is on its way.
  CERTIFICATE_REVOKED: { status: 409, sentence: said },
  CERTIFICATE_EXPIRED: { status: 409, sentence: said },
  CERTIFICATE_NOT_YET_VALID: { status: 409, sentence: said },
  PROFILE_EXPIRED: { status: 409, sentence: said },
  CERTIFICATE_NOT_IN_PROFILE: { status: 409, sentence: said },
  /** Before the first install from the team a user moved to: what stays with the old team, app by app. */
  TEAM_MOVED: { status: 409, sentence: said },

  // --- Billing -------------------------------------------------------------------------------
  UNKNOWN_SERVICE: { status: 400, sentence: 'Unknown service.' },
  SAME_PLAN: { status: 409, sentence: 'You already have this plan.' },
  DEVICE_BEING_REGISTERED: { status: 409, sentence: 'This device is already being registered.' },
  DAILY_LIMIT: { status: 429, sentence: 'Daily limit reached.' },
  CHECKOUT_GONE: { status: 410, sentence: 'This test checkout has expired or was canceled.' },
  INVALID_SIGNATURE: { status: 400, sentence: 'Invalid signature.' },
  PAYMENTS_UNAVAILABLE: {
    status: 503,
    sentence: 'Payments are unavailable right now. Please retry later.',
    retryAfterSeconds: 30,
  },

  // --- Secrets -------------------------------------------------------------------------------
  SECRET_UNREADABLE: {
    status: 500,
    sentence: (why: string) =>
      `A stored secret could not be opened (${why}): SECRET_KEY is not the key it was sealed with, or the stored value was changed. Restore the previous SECRET_KEY or enter the secret again.`,
  },
  SECRET_KEY_SHORT: {
    status: 500,
    sentence: (minLength: number) =>
      `SECRET_KEY must be at least ${minLength} characters (for example the output of "openssl rand -base64 32").`,
  },
  SECRET_KEY_FILE_SHORT: {
    status: 500,
    sentence: (file: string, minLength: number) =>
      `${file} holds no usable key (fewer than ${minLength} characters): restore it from a backup, or set SECRET_KEY.`,
  },
} as const satisfies Record<
  string,
  { status: number; sentence: string | ((...parts: never[]) => string); retryAfterSeconds?: number }
>;

export type ErrorCode = keyof typeof ERRORS;

/** What a code's sentence is made from: nothing for a fixed sentence. */
export type SentenceParts<C extends ErrorCode> = (typeof ERRORS)[C]['sentence'] extends (
  ...parts: infer P
) => string
  ? P
  : [];

/** How long a client is asked to wait (`Retry-After`) after a 503 of `code` that does not say itself. */
export function retryAfterSecondsOf(code: ErrorCode): number | undefined {
  const entry = ERRORS[code] as { retryAfterSeconds?: number };
  return entry.retryAfterSeconds;
}

/** The sentence of `code` made from `parts`. */
export function sentenceOf<C extends ErrorCode>(code: C, ...parts: SentenceParts<C>): string {
  const { sentence } = ERRORS[code];
  return typeof sentence === 'string' ? sentence : (sentence as (...p: unknown[]) => string)(...parts);
}
