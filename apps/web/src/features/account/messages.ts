/** Confirmations and notices of spec section 5 shown on the Device tab, in the spec's words. */
export const MAC_WARNING =
  'Only M1/M2 Macs are supported, an extra process follows payment, and payment is non-refundable for unsupported devices.';
export const ADD_DEVICE_NOTICE =
  'The profile is downloaded and must be installed from Settings within 10 minutes.';

/** Spec section 5's notice about the cert password: the .p12 in the zip opens with it, and it is not kept. */
export const certPasswordNotice = (password: string) =>
  `The cert password is ${password}. Enter it when Feather imports the certificate; it is shown only this once.`;
