import type { DeviceFamily } from '@sideport/contracts';
import { isMacProduct } from './enrollment-service.js';

/**
 * The family Apple counts a device's registration in (docs/sign-service.md, A pool of developer
 * accounts), from the model identifier it sent at enrollment ('iPhone15,2', 'iPad13,1',
 * 'AppleTV11,1', 'Watch6,1', 'Mac14,2'). An iPod touch is counted with the iPhones, and a model
 * this does not know as an iPhone (or a Mac, on macOS): counting too many never overfills an
 * account.
 */
export function familyOf(device: { product: string; platform: 'IOS' | 'MAC_OS' }): DeviceFamily {
  const product = device.product.trim();
  if (/^iPad/i.test(product)) return 'iPad';
  if (/^AppleTV/i.test(product)) return 'Apple TV';
  if (/^Watch/i.test(product)) return 'Apple Watch';
  if (device.platform === 'MAC_OS' || isMacProduct(product)) return 'Mac';
  return 'iPhone';
}
