import { describe, expect, it } from 'vitest';
import { modelName } from './device-models';

describe('modelName', () => {
  it('names a device by its model identifier, each variant of a model alike', () => {
    expect(modelName('iPhone15,2')).toBe('iPhone 14 Pro');
    expect(modelName('iPhone14,5')).toBe('iPhone 13');
    expect(modelName('iPhone12,8')).toBe('iPhone SE (2nd generation)');
    expect(modelName('iPhone16,2')).toBe('iPhone 15 Pro Max');
    expect(modelName('iPad13,4')).toBe('iPad Pro 11-inch (3rd generation)');
    expect(modelName('iPad13,7')).toBe('iPad Pro 11-inch (3rd generation)');
    expect(modelName('Mac14,2')).toBe('MacBook Air (M2, 2022)');
  });

  it('knows nothing of an identifier it has no entry for', () => {
    expect(modelName('iPhone99,9')).toBeNull();
    expect(modelName('toString')).toBeNull();
  });
});
