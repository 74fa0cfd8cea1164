// Reads vitest's JSON report and prints the closing line CI reads: "N passed, N failed".
// Counts each test by its own status, not by the report's totals: a test whose worker died is
// left "pending" in a file marked passed, and a file whose hook failed counts no failed test.
// Exits 1 when anything failed, did not finish, or nothing ran at all; on CI (CI=true) also
// when a test was skipped: a test CI does not run guards nothing.
// Usage: test-summary.mjs <vitest.json> [vitest's exit code]
import { existsSync, readFileSync } from 'node:fs';

if (!existsSync(process.argv[2])) {
  console.log(`vitest wrote no report (${process.argv[2]}): the run failed before its tests (see above)`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const vitestStatus = Number(process.argv[3] ?? 0);
const tests = report.testResults.flatMap((file) =>
  file.assertionResults.map((test) => ({ ...test, file: file.name })),
);
const withStatus = (...statuses) => tests.filter((test) => statuses.includes(test.status));

const passed = withStatus('passed').length;
const failed = withStatus('failed').length;
const unfinished = withStatus('pending');
const skipped = withStatus('skipped', 'todo', 'disabled');
const brokenFiles = report.testResults.filter(
  (file) => file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
);

for (const file of brokenFiles) console.log(`failed outside its tests: ${file.name}\n${file.message}`);
for (const test of unfinished) console.log(`did not finish: ${test.fullName} (${test.file})`);
const skippedOnCi = process.env.CI === 'true' && skipped.length > 0;
if (skippedOnCi) {
  for (const test of skipped) console.log(`skipped on CI: ${test.fullName} (${test.file})`);
}
let failedTotal = failed + unfinished.length + brokenFiles.length;
// Vitest also fails a run for errors no test owns (an unhandled rejection, a broken config).
if (vitestStatus !== 0 && failedTotal === 0) {
  console.log(
    `vitest exited with ${vitestStatus} without a failed test: an error outside the tests (see above)`,
  );
  failedTotal = 1;
}
console.log(`${passed} passed, ${failedTotal} failed${skipped.length ? `, ${skipped.length} skipped` : ''}`);
process.exit(failedTotal > 0 || passed === 0 || skippedOnCi ? 1 : 0);
