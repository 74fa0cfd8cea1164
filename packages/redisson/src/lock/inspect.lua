--[[
  Reads a Redisson RLock, fair or fenced lock without changing it, in one step so that the
  holder, its count, the TTL and the fence all describe the same moment.

  KEYS[1] lock hash
  KEYS[2] fence counter redisson_lock_token:{name}

  Returns {fence, pttl, holds, holder} while held, {fence} when free; fence is the last one
  handed out on this name, -1 before the first.
]]
local fence = tonumber(redis.call('get', KEYS[2]) or '-1')
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields, 2 do
  if fields[i] ~= 'mode' then
    return {fence, redis.call('pttl', KEYS[1]), tonumber(fields[i + 1]), fields[i]}
  end
end
return {fence}
