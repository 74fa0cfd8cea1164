--[[
  Takes an owner out of a token lock's waiter queue (its waiting call ended without the lock).

  Input:
    KEYS[1] waiter queue, KEYS[2] registrations
    ARGV[1] owner
]]
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('hdel', KEYS[2], ARGV[1])
return 0
