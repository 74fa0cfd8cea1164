import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A CA and a server certificate it signed for 127.0.0.1, plus an unrelated CA, made with openssl. */
export interface Certificates {
  readonly dir: string;
  readonly ca: string;
  readonly otherCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** Contents of the CA files, for `tls: { ca }`. */
  readonly caPem: string;
  readonly otherCaPem: string;
  remove(): void;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

export function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), 's28-'));
  const path = (name: string) => join(dir, name);
  for (const name of ['ca', 'other-ca']) {
    openssl([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.crt`),
    ]);
  }
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    path('server.key'),
    '-out',
    path('server.csr'),
  ]);
  writeFileSync(path('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl([
    'x509',
    '-req',
    '-in',
    path('server.csr'),
    '-CA',
    path('ca.crt'),
    '-CAkey',
    path('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    path('san.ext'),
    '-out',
    path('server.crt'),
  ]);
  return {
    dir,
    ca: path('ca.crt'),
    otherCa: path('other-ca.crt'),
    serverCert: path('server.crt'),
    serverKey: path('server.key'),
    caPem: readFileSync(path('ca.crt'), 'utf8'),
    otherCaPem: readFileSync(path('other-ca.crt'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
