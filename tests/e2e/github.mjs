// The fake GitHub REST API for a whole e2e run (tests/e2e/fakes.mjs, fakeGithub): run.sh starts it on the
// port it gave the server as GITHUB_API_URL; it checks the JWTs of the test GitHub App whose key is
// tests/fixtures/github-app-test-key.pem.
import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { fakeGithub } from './fakes.mjs';

const [port] = process.argv.slice(2);
const pem = readFileSync(new URL('../fixtures/github-app-test-key.pem', import.meta.url), 'utf8');
const github = await fakeGithub({ port: Number(port), publicKeyPem: createPublicKey(pem).export({ type: 'spki', format: 'pem' }) });
console.log(`fake GitHub on ${github.url}`);
