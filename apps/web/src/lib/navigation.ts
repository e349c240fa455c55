/**
 * The router's navigate, for code outside components (the API client's 401 handling).
 * The router registers itself at start.
 */
let navigateFn: (path: string) => void = (path) => window.location.assign(path);

export function setNavigate(fn: (path: string) => void) {
  navigateFn = fn;
}

export function navigate(path: string) {
  navigateFn(path);
}

export const currentPath = () => `${window.location.pathname}${window.location.search}`;
