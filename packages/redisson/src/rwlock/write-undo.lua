-- The write lock's undo (see undo.lua): write-release.lua's keys and arguments, the attempt id before the latch lifetime.
return undoAttempt(KEYS[3], ARGV[3], ARGV[#ARGV - 1], unlock)
