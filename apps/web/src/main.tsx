// First: the server's Content-Security-Policy forbids eval, and zod must not even probe for it.
import '@sideport/contracts/without-eval';
import 'bootstrap/dist/css/bootstrap.min.css';
// Its fonts are bundled into dist/assets and served from our own origin (no CDN).
import 'bootstrap-icons/font/bootstrap-icons.min.css';
import './app/styles.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from 'react-router';
import { router } from './app/router';
import { whenRehydrated } from './lib/store';

const queryClient = new QueryClient({
  defaultOptions: { queries: { refetchOnWindowFocus: false, staleTime: 10_000 } },
});

// The persisted auth and country state is loaded before the first render (5000 ms at most).
await whenRehydrated();
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
