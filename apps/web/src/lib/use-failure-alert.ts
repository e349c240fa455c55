import { useEffect } from 'react';
import { alertFailure } from './api';

/** Shows a query's failure once, as docs/product.md (Errors) asks: the server's sentence or 'Please retry later.'. */
export function useFailureAlert(error: unknown) {
  useEffect(() => {
    if (error) alertFailure(error);
  }, [error]);
}
