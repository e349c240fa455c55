/**
 * A UDID is hex digits (and dashes): the same device may be written in either letter case (iOS
 * shows upper case, older tools lower case), and Apple treats both as one device. Sideport keeps
 * one form, upper case, from the boundary on (a device's answer, a row written, a list compared),
 * and the devices table refuses any other (`devices_udid_canonical`).
 */
export const canonicalUdid = (udid: string): string => udid.toUpperCase();

/** Whether two UDIDs name the same device, whatever their letter case. */
export const isSameUdid = (a: string, b: string): boolean => canonicalUdid(a) === canonicalUdid(b);
