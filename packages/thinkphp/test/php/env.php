<?php
// `php env.php <json list of .env texts>`: for each text, the settings ThinkPHP's Env holds after
// load() of a file with that content (parse_ini_file raw, sections flattened to SECTION_NAME,
// names upper-cased), as one JSON line: a list of objects of name => raw string.
ini_set('display_errors', 'stderr');

$loaded = [];
foreach (json_decode($argv[1], true) as $text) {
    $file = tempnam(sys_get_temp_dir(), 'env');
    file_put_contents($file, $text);
    $env = parse_ini_file($file, true, INI_SCANNER_RAW) ?: [];
    unlink($file);
    $data = [];
    foreach (array_change_key_case($env, CASE_UPPER) as $key => $val) {
        if (is_array($val)) {
            foreach ($val as $k => $v) {
                $data[$key . '_' . strtoupper($k)] = $v;
            }
        } else {
            $data[$key] = $val;
        }
    }
    $loaded[] = (object) $data;
}
echo json_encode($loaded), "\n";
