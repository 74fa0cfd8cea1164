--[[
  Gives an owner's hold of a token lock the fence of the hold it re-entered. RedLock writes it to
  a master that had lost the key, where the re-entry was a first acquisition and drew a fence of
  its own: a later re-entry that master answers then reports the hold's fence too. The fence
  counter is left as it is (it never goes back).

  Input:
    KEYS[1] lock key
    ARGV[1] owner
    ARGV[2] fence

  Output:
    1 written; 0 the owner does not hold the lock here (nothing changed)
]]
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('hset', KEYS[1], '', ARGV[2])
return 1
