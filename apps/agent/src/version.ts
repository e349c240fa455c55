/** Sent as the User-Agent and printed at start; the same as apps/agent/package.json. */
export const AGENT_VERSION = '0.1.0';
