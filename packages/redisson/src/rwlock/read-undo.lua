-- The read lock's undo (see undo.lua): read-release.lua's keys and arguments, the attempt id before
-- the latch lifetime. The unlock it runs deletes the newest timeout key, which need not be the
-- attempt's: the holds left keep at least that key's TTL, the lease of the hold taken last.
local holds = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
local newest = holds and redis.call('pttl', KEYS[3] .. ':' .. holds)
local outcome = undoAttempt(KEYS[6], ARGV[2], ARGV[#ARGV - 1], unlock)
if outcome == 0 and holds and newest > 0 and tonumber(redis.call('hget', KEYS[1], ARGV[2])) == holds - 1 then
  local top = KEYS[3] .. ':' .. (holds - 1)
  if redis.call('pttl', top) < newest then
    redis.call('set', top, 1, 'px', newest)
  end
  if redis.call('pttl', KEYS[1]) < newest then
    redis.call('pexpire', KEYS[1], newest)
  end
end
return outcome
