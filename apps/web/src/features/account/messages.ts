/** Confirmations and notices of spec section 5 shown on the Device tab, in the spec's words. */
export const MAC_WARNING =
  'Only M1/M2 Macs are supported, an extra process follows payment, and payment is non-refundable for unsupported devices.';
export const ADD_DEVICE_NOTICE =
  'The profile is downloaded and must be installed from Settings within 10 minutes.';

