// First: the server's Content-Security-Policy forbids eval, and zod must not even probe for it.
import '@sideport/contracts/without-eval';
import 'bootstrap/dist/css/bootstrap.min.css';
import './app/styles.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { BrowserRouter } from 'react-router';
import { AppRoutes } from './app/routes';
import { readRetryDelayMs, shouldRetryRead } from './lib/api';
import { whenRehydrated } from './lib/store';

const queryClient = new QueryClient({
  defaultOptions: {
    // A 503 (the database restarting, the store busy) is tried again after the server's Retry-After.
    queries: {
      refetchOnWindowFocus: false,
      staleTime: 10_000,
      retry: shouldRetryRead,
      retryDelay: readRetryDelayMs,
    },
  },
});

// The persisted auth and country state is loaded before the first render (5000 ms at most).
await whenRehydrated();
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      {/* Declarative routing: the data router's loaders and actions are unused and weigh ~15 kB. */}
      <BrowserRouter>
        <AppRoutes />
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
