--[[
  Stamps a fence counter with the master it lives on. A counter last stamped by another master
  (a replica promoted by a failover, a restart) may have lost the last increments that master
  made before it went away, and with them fences already handed out: it is raised to the next
  epoch, the next multiple of 2^32, above any value the old master can have reached.

  A counter below the highest value the caller knows it reached (fences it drew, a value an
  earlier stamp reported) lost writes, whatever its stamp says (a master that failed over and
  came back without the writes of the one in between, a restart without persistence): it is
  raised to the next multiple of 2^32 above that value, and stamped.

  Otherwise a counter that does not exist yet has handed out nothing: nothing is written (the
  acquire script that creates it stamps it). An existing counter never stamped (made by an
  earlier version) is stamped without a raise, unless the caller last saw it under another master.

  Input:
    KEYS[1] fence counter
    KEYS[2] the counter's stamp: the run id of the master that last stamped it (same slot)
    ARGV[1] the run id the caller last saw for this counter, '' for none
    ARGV[2] the highest value the caller knows the counter reached, 0 for none

  Output:
    { run_id, raised, time, counter }  this master's run id; raised = 1 when the counter moved to
                                       a new epoch; the server's TIME (its clock is checked
                                       against the caller's); the counter's value now ('0' when
                                       it does not exist)
]]
local rcall = redis.call
local master = string.match(rcall('info', 'server'), 'run_id:(%x+)')
local time = rcall('time')
local stamp = rcall('get', KEYS[2])
local counter = rcall('get', KEYS[1])
local epoch = 4294967296
local value = tonumber(counter or '0')
local known = tonumber(ARGV[2]) or 0
if value and value < known then
  counter = string.format('%.0f', (math.floor(known / epoch) + 1) * epoch)
  rcall('set', KEYS[1], counter)
  rcall('set', KEYS[2], master)
  return { master, 1, time, counter }
end
if stamp == master or not counter then
  return { master, 0, time, counter or '0' }
end
rcall('set', KEYS[2], master)
if not stamp and (ARGV[1] == '' or ARGV[1] == master) then
  return { master, 0, time, counter }
end
counter = string.format('%.0f', (math.floor(value / epoch) + 1) * epoch)
rcall('set', KEYS[1], counter)
return { master, 1, time, counter }
