<?php
// One process of the PHP service, as one PHP-FPM request would be: `php worker.php <json>`.
// It makes `sales` sales of the goods, each a read-modify-write of the sold counter under the
// seed's Lock. It prints `ready` once connected, waits for `go` on stdin (so that every worker
// starts at once), then prints one JSON line per sale, its times on CLOCK_MONOTONIC in ms.

// The seed's lock() calls sleep(0.3), which PHP 8 runs as sleep(0) with a deprecation notice
// (hazard B7 in packages/thinkphp): kept quiet so that the demo's output stays readable.
error_reporting(E_ALL & ~E_DEPRECATED);
require '/usr/share/php/Predis/autoload.php'; // Debian's php-predis
// The port of seed 001's class that the @lock/thinkphp interop tests run: the seed's scripts,
// constants and retry loop, given its client and LOCK_EXPIRE instead of reading ThinkPHP's Env.
require __DIR__ . '/../../../packages/thinkphp/test/php/Lock.php';

$args = json_decode($argv[1], true);
$client = new Predis\Client($args['url']);
$client->connect();
$lock = new Lock($client, $args['key'], $args['expire']);
echo "ready\n";
if (trim((string) fgets(STDIN)) !== 'go') exit(1);

$giveUpAt = hrtime(true) + $args['patience'] * 1e9;
for ($sold = 0; $sold < $args['sales'];) {
    usleep(mt_rand(20, 40) * 1000); // the next request arrives
    if (!$lock->lock()) {
        // The seed gives up after three tries; a busy PHP service answers "try again" to its
        // client, which is what this loop stands for.
        if (hrtime(true) > $giveUpAt) {
            fwrite(STDERR, "{$args['name']}: {$args['key']} still busy after {$args['patience']} s\n");
            exit(1);
        }
        continue;
    }
    $start = hrtime(true) / 1e6;
    $seen = (int) $client->get($args['counter']);
    usleep(50 * 1000); // the slow part of a sale
    $client->set($args['counter'], $seen + 1);
    $end = hrtime(true) / 1e6;
    $lock->unlock(); // the seed's unlock() frees nothing before the lease ends (B3)
    echo json_encode(['start' => $start, 'end' => $end, 'counter' => $seen + 1]), "\n";
    $sold++;
}
