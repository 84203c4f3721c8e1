#!/usr/bin/env node
// Signs a component artifact in an OCI registry the way the Sigstore
// ecosystem does, with its own libraries (pinned in package-lock.json):
// @sigstore/sign builds a Sigstore bundle over the artifact's manifest,
// @sigstore/oci attaches it to the manifest as an OCI referrer (with the
// referrers tag fallback registries without the API need). For keyless
// signing, @sigstore/mock runs a Fulcio CA, its CT log and a Rekor log in
// this process (no network), and the trusted root they make is written for
// the verifier.
//
//   node sign.mjs keyless --registry HOST:PORT --repo REPO --digest sha256:… \
//       --identity EMAIL --issuer URL --trusted-root OUT.json
//   node sign.mjs key --registry HOST:PORT --repo REPO --digest sha256:… \
//       --key-dir DIR [--rekor --trusted-root OUT.json]
//
// `key` makes DIR/key.pem and DIR/key.pub on first use and signs with them;
// with --rekor the signature is also entered in the mock Rekor log, whose
// trusted root is written. --sign-other signs another artifact's bytes
// instead (a signature for the wrong digest). Prints one JSON line.

import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.TOOLHOST_SIGNER_DIR || path.join(here, '..', '..', 'target', 'registry-signer');
const require = createRequire(path.join(modules, 'package.json'));
const { MessageSignatureBundleBuilder, FulcioSigner, RekorWitness } = require('@sigstore/sign');
const { bundleToJSON } = require('@sigstore/bundle');
const { attachArtifactToImage } = require('@sigstore/oci');
const { initializeCA, initializeCTLog, initializeTLog, fulcioHandler, rekorHandler } = require('@sigstore/mock');
const nock = createRequire(require.resolve('@sigstore/mock'))('nock');

const BUNDLE_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const FULCIO = 'https://fulcio.mock.toolhost';
const REKOR = 'https://rekor.mock.toolhost';

function args(argv) {
  const opts = { mode: argv[0] };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--rekor' || a === '--sign-other') opts[a.slice(2)] = true;
    else if (a.startsWith('--')) opts[a.slice(2)] = argv[++i];
  }
  for (const k of ['registry', 'repo', 'digest']) {
    if (!opts[k]) throw new Error(`--${k} is required`);
  }
  return opts;
}

// Serves a mock handler (Fulcio's or Rekor's) at `base`, in process.
function serve(base, handler) {
  nock(base)
    .persist()
    .post(handler.path)
    .reply(async (_uri, body) => {
      const req = typeof body === 'string' ? body : JSON.stringify(body);
      const { statusCode, response, contentType } = await handler.fn(req);
      return [statusCode, response, { 'Content-Type': contentType || 'text/plain' }];
    });
}

const der = (key) => key.export({ format: 'der', type: 'spki' });
const b64 = (bytes) => Buffer.from(bytes).toString('base64');

function logEntry(base, publicKey, keyId) {
  return {
    baseUrl: base,
    hashAlgorithm: 'SHA2_256',
    publicKey: {
      rawBytes: b64(publicKey),
      keyDetails: 'PKIX_ECDSA_P256_SHA_256',
      validFor: { start: new Date(Date.now() - 3600_000).toISOString() },
    },
    logId: { keyId: b64(keyId) },
  };
}

async function fetchManifest(opts) {
  const url = `http://${opts.registry}/v2/${opts.repo}/manifests/${opts.digest}`;
  const res = await fetch(url, {
    headers: { Accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' },
  });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  const got = 'sha256:' + crypto.createHash('sha256').update(bytes).digest('hex');
  if (got !== opts.digest) throw new Error(`${url}: served ${got}`);
  return bytes;
}

async function main() {
  const opts = args(process.argv.slice(2));
  const manifest = await fetchManifest(opts);
  const signed = opts['sign-other'] ? Buffer.concat([manifest, Buffer.from(' ')]) : manifest;
  const root = {
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [],
    certificateAuthorities: [],
    ctlogs: [],
    timestampAuthorities: [],
  };
  const witnesses = [];
  if (opts.mode === 'keyless' || opts.rekor) {
    const tlogKey = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const tlog = await initializeTLog(REKOR, tlogKey);
    serve(REKOR, rekorHandler(tlog, { strict: true }));
    witnesses.push(new RekorWitness({ rekorBaseURL: REKOR }));
    root.tlogs.push(logEntry(REKOR, tlog.publicKey, crypto.createHash('sha256').update(tlog.publicKey).digest()));
  }
  let signer;
  let who;
  if (opts.mode === 'keyless') {
    const caKey = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const ctlog = await initializeCTLog(caKey);
    const ca = await initializeCA(caKey, ctlog);
    serve(FULCIO, fulcioHandler(ca, { strict: true, subjectClaim: "email" }));
    root.certificateAuthorities.push({
      subject: { organization: 'toolhost.mock', commonName: 'toolhost mock fulcio' },
      uri: FULCIO,
      certChain: { certificates: [{ rawBytes: b64(ca.rootCertificate) }] },
      validFor: { start: new Date(Date.now() - 3600_000).toISOString() },
    });
    root.ctlogs.push(logEntry('https://ctfe.mock.toolhost', ctlog.publicKey, ctlog.logID));
    // An OIDC token as the identity provider would hand it over (the mock
    // Fulcio reads its claims; nothing checks its signature here).
    const claims = { iss: opts.issuer, sub: opts.identity, email: opts.identity, email_verified: true, aud: 'sigstore' };
    const part = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
    signer = new FulcioSigner({ fulcioBaseURL: FULCIO, identityProvider: { getToken: async () => token } });
    who = `${opts.identity} (${opts.issuer})`;
  } else if (opts.mode === 'key') {
    const dir = opts['key-dir'];
    const pemPath = path.join(dir, 'key.pem');
    if (!fs.existsSync(pemPath)) {
      const pair = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(pemPath, pair.privateKey.export({ format: 'pem', type: 'pkcs8' }));
      fs.writeFileSync(path.join(dir, 'key.pub'), pair.publicKey.export({ format: 'pem', type: 'spki' }));
    }
    const privateKey = crypto.createPrivateKey(fs.readFileSync(pemPath));
    const publicKey = crypto.createPublicKey(privateKey);
    const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    signer = {
      sign: async (data) => ({
        signature: crypto.sign('sha256', data, privateKey),
        key: { $case: 'publicKey', publicKey: pem, hint: crypto.createHash('sha256').update(der(publicKey)).digest('hex') },
      }),
    };
    who = 'key';
  } else {
    throw new Error(`unknown mode ${opts.mode}`);
  }
  if (opts['trusted-root']) fs.writeFileSync(opts['trusted-root'], JSON.stringify(root, null, 2));
  const bundle = await new MessageSignatureBundleBuilder({ signer, witnesses }).create({ data: signed });
  const json = Buffer.from(JSON.stringify(bundleToJSON(bundle)));
  // The registry is real: let @sigstore/oci reach it.
  nock.enableNetConnect(opts.registry);
  const descriptor = await attachArtifactToImage({
    imageName: `${opts.registry}/${opts.repo}`,
    imageDigest: opts.digest,
    artifact: json,
    mediaType: BUNDLE_TYPE,
    // An anonymous registry: no sign-in (@sigstore/oci takes the 202 of its
    // probe for a challenge).
    credentials: undefined,
  });
  console.log(JSON.stringify({ signer: who, referrer: descriptor.digest, bundleBytes: json.length }));
}

main().catch((e) => {
  console.error(`sign.mjs: ${e.stack || e}`);
  for (let c = e.cause; c; c = c.cause) console.error(`caused by: ${c.stack || c}`);
  process.exit(1);
});
