// The fake providers for a whole e2e run (tests/e2e/fakes.mjs): GitHub's REST API, which checks the JWTs
// of the test GitHub App whose key is tests/fixtures/github-app-test-key.pem; AWS STS, which checks SigV4
// by the test key pair; and Google's token endpoint, IAM Credentials and STS, which check the assertions
// of the test service account (tests/fixtures/gcp-service-account-test-key.pem). run.sh starts this on the
// ports it gave the server as GITHUB_API_URL, AWS_STS_URL and GCP_IAM_URL / GCP_STS_URL; and Slack's Web
// API (SLACK_API_URL), which checks the test Slack app's bot token.
import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { fakeGithub, fakeGoogle, fakeSlack, fakeSts } from './fakes.mjs';

const [githubPort, stsPort, googlePort, slackPort] = process.argv.slice(2);
const pem = readFileSync(new URL('../fixtures/github-app-test-key.pem', import.meta.url), 'utf8');
const github = await fakeGithub({ port: Number(githubPort), publicKeyPem: createPublicKey(pem).export({ type: 'spki', format: 'pem' }) });
const sts = await fakeSts({ port: Number(stsPort), accessKeyId: process.env.AGENTSKY_E2E_AWS_KEY_ID, secret: process.env.AGENTSKY_E2E_AWS_SECRET });
const saPem = readFileSync(new URL('../fixtures/gcp-service-account-test-key.pem', import.meta.url), 'utf8');
const google = await fakeGoogle({ port: Number(googlePort), publicKeyPem: createPublicKey(saPem).export({ type: 'spki', format: 'pem' }),
  email: 'agents@e2e-project.iam.gserviceaccount.com' });
const slack = await fakeSlack({ port: Number(slackPort), token: process.env.AGENTSKY_E2E_SLACK_TOKEN });
console.log(`fake GitHub on ${github.url}, fake AWS STS on ${sts.url}, fake Google on ${google.url}, fake Slack on ${slack.url}`);
