import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A CA and a server certificate it signed for 127.0.0.1, plus an unrelated CA, made with openssl.
 * For client authentication (`tls-auth-clients yes`): a client certificate the CA signed, and
 * one the unrelated CA signed.
 */
export interface Certificates {
  readonly dir: string;
  readonly ca: string;
  readonly otherCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** Contents of the CA files, for `tls: { ca }`. */
  readonly caPem: string;
  readonly otherCaPem: string;
  /** A client certificate and key signed by `ca` (the deployment's CA), for `tls: { cert, key }`. */
  readonly client: KeyPair;
  /** A client certificate and key signed by `otherCa`: valid, but not the deployment's. */
  readonly otherClient: KeyPair;
  remove(): void;
}

/** PEM contents of a certificate and its private key. */
export interface KeyPair {
  readonly cert: string;
  readonly key: string;
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
  /** A key and a certificate for `subject`, signed by the CA `ca`, with the extensions in `extensions`. */
  const signed = (name: string, subject: string, ca: string, extensions: string) => {
    openssl([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      subject,
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.csr`),
    ]);
    writeFileSync(path(`${name}.ext`), extensions);
    openssl([
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path(`${ca}.crt`),
      '-CAkey',
      path(`${ca}.key`),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      path(`${name}.ext`),
      '-out',
      path(`${name}.crt`),
    ]);
  };
  signed('server', '/CN=127.0.0.1', 'ca', 'subjectAltName=IP:127.0.0.1\n');
  signed('client', '/CN=locker', 'ca', 'extendedKeyUsage=clientAuth\n');
  signed('other-client', '/CN=locker', 'other-ca', 'extendedKeyUsage=clientAuth\n');
  const pair = (name: string): KeyPair => ({
    cert: readFileSync(path(`${name}.crt`), 'utf8'),
    key: readFileSync(path(`${name}.key`), 'utf8'),
  });
  return {
    dir,
    ca: path('ca.crt'),
    otherCa: path('other-ca.crt'),
    serverCert: path('server.crt'),
    serverKey: path('server.key'),
    caPem: readFileSync(path('ca.crt'), 'utf8'),
    otherCaPem: readFileSync(path('other-ca.crt'), 'utf8'),
    client: pair('client'),
    otherClient: pair('other-client'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
