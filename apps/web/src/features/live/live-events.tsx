import { useLiveEvents } from './use-live-events';

/** The live stream of a signed-in tab, as a component the layout loads once someone is signed in. */
export function LiveEvents() {
  useLiveEvents();
  return null;
}
