/**
 * The Java side's scripts, written for the test peer from protocols/redisson.md alone (not from
 * the package's .lua files): each keeps the shape Redisson's call has (same KEYS and ARGV, nil
 * or a number as the answer), so the peer talks to Redis exactly as a Java client would.
 */

/** RLock tryLock: KEYS [name]; ARGV [lease, owner]; nil when taken, else PTTL. */
export const TRY_LOCK = `
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`;

/** RLock unlock: KEYS [name, channel, latch]; ARGV [msg, lease, owner, publishCmd, latchMs]. */
export const UNLOCK = `
local latched = redis.call('get', KEYS[3]);
if latched ~= false then return tonumber(latched); end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
local result;
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  result = 0;
else
  redis.call('del', KEYS[1]);
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  result = 1;
end;
redis.call('set', KEYS[3], result, 'px', ARGV[5]);
return result;`;

/** Watchdog: KEYS [names]; ARGV [lease, owners]; 1/0 per key. */
export const RENEW = `
local out = {};
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1]);
    table.insert(out, 1);
  else
    table.insert(out, 0);
  end;
end;
return out;`;

/** Fenced: KEYS [name, tokenKey]; ARGV [lease, owner]; {-1, token} or {pttl, -1}. */
export const FENCED_TRY_LOCK = `
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  local t = redis.call('incr', KEYS[2]);
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return {-1, t};
end;
return {redis.call('pttl', KEYS[1]), -1};`;

const PURGE = `
while true do
  local first = redis.call('lindex', KEYS[2], 0);
  if first == false then break; end;
  local timeout = redis.call('zscore', KEYS[3], first);
  if timeout == false or tonumber(timeout) > tonumber(ARGV[4]) then break; end;
  redis.call('zrem', KEYS[3], first);
  redis.call('lpop', KEYS[2]);
end;`;

/** Fair tryLock (waiting): KEYS [name, queue, zset]; ARGV [lease, owner, wait, now]; nil or ttl. */
export const FAIR_TRY_LOCK = `${PURGE}
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0)
    or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2]);
  redis.call('zrem', KEYS[3], ARGV[2]);
  local members = redis.call('zrange', KEYS[3], 0, -1);
  for i = 1, #members do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), members[i]);
  end;
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
local mine = redis.call('zscore', KEYS[3], ARGV[2]);
if mine ~= false then
  local left = redis.call('pttl', KEYS[1]);
  if left < 0 then return 0; end;
  return left;
end;
local last = redis.call('lindex', KEYS[2], -1);
local ttl;
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4]);
else
  ttl = redis.call('pttl', KEYS[1]);
end;
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;`;

/** Fair acquireFailed: KEYS [queue, zset]; ARGV [owner, wait]. */
export const FAIR_ACQUIRE_FAILED = `
local queue = redis.call('lrange', KEYS[1], 0, -1);
local found = nil;
for i = 1, #queue do
  if queue[i] == ARGV[1] then found = i; end;
end;
if found ~= nil then
  for i = found + 1, #queue do
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);
  end;
end;
redis.call('zrem', KEYS[2], ARGV[1]);
redis.call('lrem', KEYS[1], 0, ARGV[1]);
return nil;`;

/** Fair unlock: KEYS [name, queue, zset, channel, latch]; ARGV [msg, lease, owner, now, publishCmd, latchMs]. */
export const FAIR_UNLOCK = `
local latched = redis.call('get', KEYS[5]);
if latched ~= false then return tonumber(latched); end;
${PURGE}
local function notify()
  local head = redis.call('lindex', KEYS[2], 0);
  if head ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1]); end;
end;
if redis.call('exists', KEYS[1]) == 0 then
  notify();
  redis.call('set', KEYS[5], 1, 'px', ARGV[6]);
  return 1;
end;
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  redis.call('set', KEYS[5], 0, 'px', ARGV[6]);
  return 0;
end;
redis.call('del', KEYS[1]);
redis.call('set', KEYS[5], 1, 'px', ARGV[6]);
notify();
return 1;`;

/** Read tryLock: KEYS [name, timeoutPrefix]; ARGV [lease, owner, owner:write]; nil or PTTL. */
export const READ_TRY_LOCK = `
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('set', KEYS[2] .. ':1', 1);
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local key = KEYS[2] .. ':' .. ind;
  redis.call('set', key, 1);
  redis.call('pexpire', key, ARGV[1]);
  local remain = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], math.max(remain, tonumber(ARGV[1])));
  return nil;
end;
return redis.call('pttl', KEYS[1]);`;

/** Read unlock: KEYS [name, channel, timeoutPrefix, keyPrefix, latch]; ARGV [msg, owner, publishCmd, latchMs]. */
export const READ_UNLOCK = `
local latched = redis.call('get', KEYS[5]);
if latched ~= false then return tonumber(latched); end;
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call(ARGV[3], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[5], 1, 'px', ARGV[4]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if counter == 0 then redis.call('hdel', KEYS[1], ARGV[2]); end;
redis.call('del', KEYS[3] .. ':' .. (counter + 1));
if redis.call('hlen', KEYS[1]) > 1 then
  local maxRemain = -3;
  local keys = redis.call('hkeys', KEYS[1]);
  for n, key in ipairs(keys) do
    local c = tonumber(redis.call('hget', KEYS[1], key));
    if type(c) == 'number' then
      for i = c, 1, -1 do
        local remain = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i);
        maxRemain = math.max(remain, maxRemain);
      end;
    end;
  end;
  if maxRemain > 0 then
    redis.call('pexpire', KEYS[1], maxRemain);
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]);
    return 0;
  end;
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]);
    return 0;
  end;
end;
redis.call('del', KEYS[1]);
redis.call(ARGV[3], KEYS[2], ARGV[1]);
redis.call('set', KEYS[5], 1, 'px', ARGV[4]);
return 1;`;

/** Write tryLock: KEYS [name]; ARGV [lease, owner:write]; nil or PTTL. */
export const WRITE_TRY_LOCK = `
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local currentExpire = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`;

/** Write unlock: KEYS [name, channel, latch]; ARGV [msg, lease, owner:write, publishCmd, latchMs]. */
export const WRITE_UNLOCK = `
local latched = redis.call('get', KEYS[3]);
if latched ~= false then return tonumber(latched); end;
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return nil;
end;
if mode == 'write' then
  if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil; end;
  local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
  if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
    return 0;
  end;
  redis.call('hdel', KEYS[1], ARGV[3]);
  if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1]);
    redis.call(ARGV[4], KEYS[2], ARGV[1]);
  else
    redis.call('hset', KEYS[1], 'mode', 'read');
  end;
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return 1;
end;
return nil;`;
