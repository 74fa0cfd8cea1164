import source from './expiry-guard.lua';

/**
 * The Lua of expiry-guard.lua, for other formats' scripts to prefix (@lock/redisson's acquire
 * scripts): `mayExpire(...)` and `EXPIRY_REFUSED`, so that a user the ACL refuses PEXPIRE is
 * refused before a script's first write instead of leaving keys without a TTL.
 */
export const expiryGuardLua: string = source;
