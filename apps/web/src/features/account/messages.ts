/** Confirmations and notices shown on the Device tab, word for word (docs/product.md, Validation and confirmations). */
export const MAC_WARNING =
  'Only M1/M2 Macs are supported, an extra process follows payment, and payment is non-refundable for unsupported devices.';
/** Beside the Register and Renew buttons: what the payment starts, and that Apple may take a while (docs/sign-service.md, Registration). */
export const REGISTRATION_WAIT_NOTICE =
  'Registration can take a while: Apple usually accepts a device within minutes, but on some accounts it takes a few hours before apps install on it.';
export const ADD_DEVICE_NOTICE =
  'The profile is downloaded and must be installed from Settings within 10 minutes.';

/** The notice about the cert password (docs/product.md, Validation and confirmations): the .p12 in the zip opens with it, and it is not kept. */
export const certPasswordNotice = (password: string) =>
  `The cert password is ${password}. Enter it when Feather imports the certificate; it is shown only this once.`;
/** Under the disabled Feather buttons, as the server's 404 says it. */
export const FEATHER_NOT_OFFERED = 'Feather is not offered on this server.';
