/** The made-up apps of a chaos run, as the local iTunes server lists them and the command labels them. */
export const CHAOS_FIRST_APP_ID = 7100;

export const chaosAppId = (index: number) => CHAOS_FIRST_APP_ID + index;
export const chaosBundleId = (appId: number) => `com.example.chaos${appId}`;
/** The store version id the command reports for an app (real ones come from the store). */
export const chaosAppVerId = (appId: number) => appId * 100 + 1;
/** The display name the command gives the IPA a job produced (`12-1`: the job's lease id). */
export const chaosDisplayName = (jobLease: string) => `Chaos job ${jobLease}`;
