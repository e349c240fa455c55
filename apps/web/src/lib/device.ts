/**
 * Whether this browser runs on iOS or iPadOS, where itms-services installs and the enrollment
 * profile work. iPadOS asks for desktop pages as a Mac: a Mac with a touch screen is an iPad.
 */
export function isIosDevice(nav: Pick<Navigator, 'userAgent' | 'maxTouchPoints'> = navigator): boolean {
  if (/\b(iPhone|iPad|iPod)\b/.test(nav.userAgent)) return true;
  return /\bMacintosh\b/.test(nav.userAgent) && nav.maxTouchPoints > 1;
}
