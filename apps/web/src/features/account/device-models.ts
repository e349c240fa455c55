/**
 * Apple's model identifiers (the PRODUCT a device sends at enrollment) to the names people know
 * their device by. Several identifiers name one model (carrier or cellular variants).
 */
const MODELS = new Map<string, string>();
const add = (name: string, ...ids: string[]) => ids.forEach((id) => MODELS.set(id, name));

add('iPhone 6', 'iPhone7,2');
add('iPhone 6 Plus', 'iPhone7,1');
add('iPhone 6s', 'iPhone8,1');
add('iPhone 6s Plus', 'iPhone8,2');
add('iPhone SE', 'iPhone8,4');
add('iPhone 7', 'iPhone9,1', 'iPhone9,3');
add('iPhone 7 Plus', 'iPhone9,2', 'iPhone9,4');
add('iPhone 8', 'iPhone10,1', 'iPhone10,4');
add('iPhone 8 Plus', 'iPhone10,2', 'iPhone10,5');
add('iPhone X', 'iPhone10,3', 'iPhone10,6');
add('iPhone XS', 'iPhone11,2');
add('iPhone XS Max', 'iPhone11,4', 'iPhone11,6');
add('iPhone XR', 'iPhone11,8');
add('iPhone 11', 'iPhone12,1');
add('iPhone 11 Pro', 'iPhone12,3');
add('iPhone 11 Pro Max', 'iPhone12,5');
add('iPhone SE (2nd generation)', 'iPhone12,8');
add('iPhone 12 mini', 'iPhone13,1');
add('iPhone 12', 'iPhone13,2');
add('iPhone 12 Pro', 'iPhone13,3');
add('iPhone 12 Pro Max', 'iPhone13,4');
add('iPhone 13 Pro', 'iPhone14,2');
add('iPhone 13 Pro Max', 'iPhone14,3');
add('iPhone 13 mini', 'iPhone14,4');
add('iPhone 13', 'iPhone14,5');
add('iPhone SE (3rd generation)', 'iPhone14,6');
add('iPhone 14', 'iPhone14,7');
add('iPhone 14 Plus', 'iPhone14,8');
add('iPhone 14 Pro', 'iPhone15,2');
add('iPhone 14 Pro Max', 'iPhone15,3');
add('iPhone 15', 'iPhone15,4');
add('iPhone 15 Plus', 'iPhone15,5');
add('iPhone 15 Pro', 'iPhone16,1');
add('iPhone 15 Pro Max', 'iPhone16,2');
add('iPhone 16 Pro', 'iPhone17,1');
add('iPhone 16 Pro Max', 'iPhone17,2');
add('iPhone 16', 'iPhone17,3');
add('iPhone 16 Plus', 'iPhone17,4');
add('iPhone 16e', 'iPhone17,5');
add('iPod touch (7th generation)', 'iPod9,1');

add('iPad (7th generation)', 'iPad7,11', 'iPad7,12');
add('iPad (8th generation)', 'iPad11,6', 'iPad11,7');
add('iPad (9th generation)', 'iPad12,1', 'iPad12,2');
add('iPad (10th generation)', 'iPad13,18', 'iPad13,19');
add('iPad (A16)', 'iPad15,7', 'iPad15,8');
add('iPad mini (5th generation)', 'iPad11,1', 'iPad11,2');
add('iPad mini (6th generation)', 'iPad14,1', 'iPad14,2');
add('iPad mini (A17 Pro)', 'iPad16,1', 'iPad16,2');
add('iPad Air (3rd generation)', 'iPad11,3', 'iPad11,4');
add('iPad Air (4th generation)', 'iPad13,1', 'iPad13,2');
add('iPad Air (5th generation)', 'iPad13,16', 'iPad13,17');
add('iPad Air 11-inch (M2)', 'iPad14,8', 'iPad14,9');
add('iPad Air 13-inch (M2)', 'iPad14,10', 'iPad14,11');
add('iPad Air 11-inch (M3)', 'iPad15,3', 'iPad15,4');
add('iPad Air 13-inch (M3)', 'iPad15,5', 'iPad15,6');
add('iPad Pro 11-inch', 'iPad8,1', 'iPad8,2', 'iPad8,3', 'iPad8,4');
add('iPad Pro 12.9-inch (3rd generation)', 'iPad8,5', 'iPad8,6', 'iPad8,7', 'iPad8,8');
add('iPad Pro 11-inch (2nd generation)', 'iPad8,9', 'iPad8,10');
add('iPad Pro 12.9-inch (4th generation)', 'iPad8,11', 'iPad8,12');
add('iPad Pro 11-inch (3rd generation)', 'iPad13,4', 'iPad13,5', 'iPad13,6', 'iPad13,7');
add('iPad Pro 12.9-inch (5th generation)', 'iPad13,8', 'iPad13,9', 'iPad13,10', 'iPad13,11');
add('iPad Pro 11-inch (4th generation)', 'iPad14,3', 'iPad14,4');
add('iPad Pro 12.9-inch (6th generation)', 'iPad14,5', 'iPad14,6');
add('iPad Pro 11-inch (M4)', 'iPad16,3', 'iPad16,4');
add('iPad Pro 13-inch (M4)', 'iPad16,5', 'iPad16,6');

add('MacBook Air (M1, 2020)', 'MacBookAir10,1');
add('MacBook Pro (13-inch, M1, 2020)', 'MacBookPro17,1');
add('Mac mini (M1, 2020)', 'Macmini9,1');
add('iMac (24-inch, M1, 2021)', 'iMac21,1', 'iMac21,2');
add('MacBook Air (M2, 2022)', 'Mac14,2');
add('MacBook Pro (13-inch, M2, 2022)', 'Mac14,7');
add('Mac mini (M2, 2023)', 'Mac14,3');

/** 'iPhone15,2' -> 'iPhone 14 Pro'; null for an identifier this table does not know. */
export const modelName = (identifier: string): string | null => MODELS.get(identifier) ?? null;
