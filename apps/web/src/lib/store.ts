import { create } from 'zustand';
import { createJSONStorage, persist } from 'zustand/middleware';
import { DEFAULT_COUNTRY, type Country } from '@sideport/contracts';

/** The one localStorage key of the client state (docs/product.md, Entities and fields). */
export const STORAGE_KEY = 'sideport';
/** docs/product.md, Constants: persisted state rehydrates within 5000 ms at most. */
export const REHYDRATE_TIMEOUT_MS = 5000;

export interface ClientState {
  isLogin: boolean;
  /** -1 signed out; above 0 is admin. */
  grade: number;
  /** Where to return after sign-in. */
  last_page: string;
  country: Country;
}

interface ClientActions {
  signedIn(grade: number): void;
  /** Back to the signed-out defaults; a 401 then stores the current path with setLastPage. */
  signedOut(): void;
  setLastPage(path: string): void;
  setCountry(country: Country): void;
}

export const DEFAULT_STATE: ClientState = {
  isLogin: false,
  grade: -1,
  last_page: '/',
  country: DEFAULT_COUNTRY,
};

export const useClientStore = create<ClientState & ClientActions>()(
  persist(
    (set) => ({
      ...DEFAULT_STATE,
      signedIn: (grade) => set({ isLogin: true, grade }),
      // docs/product.md, Entities and fields: the grade resets on sign-out; so does last_page, or the next person to sign
      // in on this browser would land on the previous one's page.
      signedOut: () => set({ isLogin: false, grade: -1, last_page: DEFAULT_STATE.last_page }),
      setLastPage: (last_page) => set({ last_page }),
      setCountry: (country) => set({ country }),
    }),
    {
      name: STORAGE_KEY,
      storage: createJSONStorage(() => localStorage),
      partialize: ({ isLogin, grade, last_page, country }) => ({ isLogin, grade, last_page, country }),
    },
  ),
);

/** Resolves once the persisted state is loaded, or after REHYDRATE_TIMEOUT_MS whatever happens. */
export function whenRehydrated(): Promise<void> {
  if (useClientStore.persist.hasHydrated()) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, REHYDRATE_TIMEOUT_MS);
    useClientStore.persist.onFinishHydration(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Where to go after a successful sign-in or sign-up (docs/product.md, States). */
export function afterSignInPath(lastPage: string): string {
  return lastPage.startsWith('/sign-in') || lastPage.startsWith('/sign-up') || !lastPage.startsWith('/')
    ? '/'
    : lastPage;
}
