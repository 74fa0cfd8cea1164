// Reads vitest's JSON report and prints the closing line CI reads: "N passed, N failed".
// Exits 1 when a test failed, a file failed to load, or nothing ran at all; on CI
// (CI=true) also when a test was skipped: a test CI does not run guards nothing.
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const passed = report.numPassedTests;
const failed = report.numFailedTests;
const skipped = report.numPendingTests + report.numTodoTests;
const brokenFiles = report.testResults.filter(
  (file) => file.status === 'failed' && file.assertionResults.length === 0,
);
for (const file of brokenFiles) console.log(`failed to run: ${file.name}\n${file.message}`);
const skippedOnCi = process.env.CI === 'true' && skipped > 0;
if (skippedOnCi) {
  for (const file of report.testResults) {
    for (const test of file.assertionResults) {
      if (test.status !== 'passed' && test.status !== 'failed') {
        console.log(`skipped on CI: ${test.fullName} (${file.name})`);
      }
    }
  }
}
const failedTotal = failed + brokenFiles.length;
console.log(`${passed} passed, ${failedTotal} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failedTotal > 0 || passed === 0 || skippedOnCi ? 1 : 0);
