/** Confirmations of spec section 5 shown on the Device tab. */
export const MAC_WARNING =
  'Only M1/M2 Macs are supported. An extra process follows payment. Payment is non-refundable for unsupported devices. Continue?';
export const ADD_DEVICE_NOTICE =
  'The device profile will be downloaded. Install it from Settings within 10 minutes.';
