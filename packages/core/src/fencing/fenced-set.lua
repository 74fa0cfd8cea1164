--[[
  Writes a value guarded by a fencing token: refused when a newer fence already wrote.

  Input:
    KEYS[1] the guarded resource: a hash with fields `fence` and `value`
    ARGV[1] fence of the writer
    ARGV[2] value

  Output:
    1   written (fence >= the last accepted fence)
    0   refused: a writer with a newer fence came first
]]
local rcall = redis.call
local last = tonumber(rcall('hget', KEYS[1], 'fence') or '-1')
if tonumber(ARGV[1]) < last then
  return 0
end
rcall('hset', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
return 1
