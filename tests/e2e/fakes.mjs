// Loopback stand-ins the openai harness talks to, started by the tests themselves:
// - a scripted OpenAI-compatible chat-completions server (node:http), and
// - a remote MCP server (the official TypeScript SDK's McpServer over a stateless
//   StreamableHTTPServerTransport), declared in an agent's `mcpServers`.
// Both record every request, so the tests can assert what the Worker sent.
import http from 'node:http';
import { createHash, createHmac, createPublicKey, randomBytes, verify } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A loopback server that keeps an idle connection open longer than a client does: Node's fetch reuses one
 * for up to 4 s and Node's server closes it at 5 s, so a request sent in that instant failed with "other
 * side closed" (seen once in narrowed.test.mjs, after a 26 s turn).
 */
function createServer(handler) {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  return server;
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
    req.on('error', reject);
  });
}

/**
 * A fake OpenAI-compatible endpoint. `script(body, index)` gets each parsed request body and returns the
 * assistant `message` to answer with (or `{ status, body }` to answer an HTTP error). Every answer
 * carries `usage` = `usage` (prompt/completion tokens). Serves POST {base}/chat/completions, base = /v1.
 */
export async function fakeOpenAI(script, { usage = { prompt_tokens: 7, completion_tokens: 3 } } = {}) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    let body = null;
    try { body = JSON.parse(text); } catch { /* recorded as null */ }
    requests.push({ method: req.method, url: req.url, headers: req.headers, body });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions' || !body) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    let answer;
    try { answer = await script(body, requests.length - 1); } catch (e) { answer = { status: 500, body: { error: { message: String(e) } } }; }
    if (answer?.status) {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: `chatcmpl-${requests.length}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', ...answer }, finish_reason: answer.tool_calls ? 'tool_calls' : 'stop' }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }));
  });
  const port = await listen(server);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`, requests,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

/**
 * A remote MCP server with one tool, `multiply {a, b}` → the product as text, over Streamable HTTP in
 * stateless mode (a new server and transport per request, no session ids). Requires `Authorization:
 * Bearer <token>` when `token` is given. Records each JSON-RPC method it was sent and each tool call.
 */
export async function fakeMcpServer({ token } = {}) {
  const methods = []; const calls = []; const auth = []; const headers = [];
  const build = () => {
    const server = new McpServer({ name: 'e2e-calc', version: '1.0.0' });
    server.registerTool('multiply', {
      description: 'Multiply two numbers and return the product.',
      inputSchema: { a: z.number(), b: z.number() },
    }, async ({ a, b }) => {
      calls.push({ a, b });
      return { content: [{ type: 'text', text: `product=${a * b}` }] };
    });
    return server;
  };
  const httpServer = createServer(async (req, res) => {
    auth.push(req.headers.authorization ?? null);
    headers.push(req.headers);
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad token' }));
      return;
    }
    if (req.method !== 'POST') { res.writeHead(405).end(); return; }
    const body = JSON.parse(await readBody(req));
    for (const m of [body].flat()) methods.push(m.method);
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  const port = await listen(httpServer);
  return {
    url: `http://127.0.0.1:${port}/mcp`, methods, calls, auth, headers,
    close: () => new Promise((r) => { httpServer.closeAllConnections?.(); httpServer.close(() => r()); }),
  };
}

/**
 * A fake Stripe API speaking the documented shapes: form-encoded requests with `Authorization: Bearer
 * sk_…`, JSON objects with `id` and `object` back, errors as `{error: {type, message}}`, and a repeated
 * `Idempotency-Key` answering the first result. Serves POST /v1/customers, POST and GET
 * /v1/checkout/sessions[/{id}], GET /v1/setup_intents/{id}, POST and GET /v1/payment_intents[/{id}].
 * A setup-mode session comes with its SetupIntent and a card (`pm_…`) already attached, as if the person
 * had entered it. run.sh starts one for the whole run (tests/e2e/stripe.mjs); tests read its objects back
 * through the list endpoints and "complete" a checkout by posting a signed event ([stripeEvent]).
 */
export async function fakeStripe({ port = 0, key }) {
  const objects = { customer: [], 'checkout.session': [], setup_intent: [], payment_intent: [] };
  const byKey = new Map();
  let n = 0;
  const id = (prefix) => `${prefix}_${Date.now().toString(36)}${(++n).toString(36).padStart(4, '0')}`;
  const send = (res, status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
  const error = (res, status, type, message) => send(res, status, { error: { type, message } });
  const metadata = (form) => Object.fromEntries(
    [...form].filter(([k]) => k.startsWith('metadata[')).map(([k, v]) => [k.slice(9, -1), v]));
  const create = {
    '/v1/customers': (f) => ({ id: id('cus'), object: 'customer', name: f.get('name'), metadata: metadata(f) }),
    '/v1/checkout/sessions': (f, base) => {
      const mode = f.get('mode');
      if (!['payment', 'setup'].includes(mode)) return null;
      const sid = id('cs_test');
      let setup = null;
      if (mode === 'setup') {
        setup = { id: id('seti'), object: 'setup_intent', customer: f.get('customer'), payment_method: id('pm'), status: 'succeeded', usage: 'off_session' };
        objects.setup_intent.push(setup);
      }
      const unit = Number(f.get('line_items[0][price_data][unit_amount]') ?? 0);
      const quantity = Number(f.get('line_items[0][quantity]') ?? 0);
      return {
        id: sid, object: 'checkout.session', mode, status: 'open', payment_status: mode === 'setup' ? 'no_payment_required' : 'unpaid',
        url: `${base}/c/pay/${sid}`, client_reference_id: f.get('client_reference_id'), metadata: metadata(f),
        customer: f.get('customer'), currency: f.get('line_items[0][price_data][currency]') ?? f.get('currency'),
        amount_total: mode === 'payment' ? unit * quantity : null, success_url: f.get('success_url'),
        cancel_url: f.get('cancel_url'), setup_intent: setup?.id ?? null, payment_intent: null,
      };
    },
    '/v1/payment_intents': (f) => {
      if (f.get('confirm') !== 'true' || !f.get('payment_method') || !f.get('customer')) return null;
      const amount = Number(f.get('amount'));
      return {
        id: id('pi'), object: 'payment_intent', amount, amount_received: amount, currency: f.get('currency'),
        customer: f.get('customer'), payment_method: f.get('payment_method'), status: 'succeeded',
        off_session: f.get('off_session'), metadata: metadata(f),
      };
    },
  };
  const kinds = { '/v1/customers': 'customer', '/v1/checkout/sessions': 'checkout.session', '/v1/setup_intents': 'setup_intent', '/v1/payment_intents': 'payment_intent' };
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.headers.authorization !== `Bearer ${key}`) return error(res, 401, 'invalid_request_error', 'Invalid API Key provided');
    const path = req.url.split('?')[0];
    if (req.method === 'POST' && create[path]) {
      if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
        return error(res, 400, 'invalid_request_error', 'requests are form-encoded');
      }
      const idem = req.headers['idempotency-key'];
      if (idem && byKey.has(`${path} ${idem}`)) return send(res, 200, byKey.get(`${path} ${idem}`));
      const made = create[path](new URLSearchParams(text), `http://${req.headers.host}`);
      if (!made) return error(res, 400, 'invalid_request_error', `missing or invalid parameters for ${path}`);
      objects[made.object].push(made);
      if (idem) byKey.set(`${path} ${idem}`, made);
      return send(res, 200, made);
    }
    const [, list, one] = path.match(/^(\/v1\/[a-z_]+(?:\/sessions)?)(?:\/([A-Za-z0-9_]+))?$/) ?? [];
    const kind = kinds[list];
    if (req.method === 'GET' && kind && one) {
      const found = objects[kind].find((o) => o.id === one);
      return found ? send(res, 200, found) : error(res, 404, 'invalid_request_error', `No such ${kind}: '${one}'`);
    }
    if (req.method === 'GET' && kind) {
      return send(res, 200, { object: 'list', url: list, has_more: false, data: [...objects[kind]].reverse() });
    }
    error(res, 404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${path})`);
  });
  const bound = await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
  return { url: `http://127.0.0.1:${bound}`, objects, close: () => new Promise((r) => server.close(() => r())) };
}

/** The `Stripe-Signature` header of `body` signed at `t` (seconds): `t=…,v1=HMAC-SHA256("t.body")`. */
export function stripeSignature(body, secret, t = Math.floor(Date.now() / 1000)) {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/** A Stripe event object around `object`, as Stripe sends it to a webhook endpoint. */
export function stripeEvent(type, object) {
  return {
    id: `evt_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, object: 'event', api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000), type, livemode: false, pending_webhooks: 1, data: { object },
  };
}

/**
 * A fake of the two GitHub REST endpoints a GitHub App uses here, checking the app's JWT as GitHub does:
 * RS256 over the app's private key (`publicKeyPem` verifies it), `iss` the app id, issued in the past and
 * valid for at most ten minutes. `GET /repos/acme/:repo/installation` finds installation 42 of app `appId`;
 * `POST /app/installations/42/access_tokens` mints a token for the `repositories` and `permissions` asked,
 * for an hour. `GET /_e2e/tokens` lists what was minted (a token's sha256, never the token);
 * `POST /_e2e/refuse {"on": true}` makes it refuse the app (401) until turned off.
 */
export async function fakeGithub({ port = 0, publicKeyPem, appId = '7' }) {
  const key = createPublicKey(publicKeyPem);
  const minted = [];
  let refusing = false;
  const send = (res, status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
  const b64 = (s) => Buffer.from(s, 'base64url');
  const appJwt = (req) => {
    const [h, p, sig] = (req.headers.authorization ?? '').replace(/^Bearer /, '').split('.');
    if (!sig) return false;
    const header = JSON.parse(b64(h)); const claims = JSON.parse(b64(p)); const now = Date.now() / 1000;
    return header.alg === 'RS256' && verify('sha256', Buffer.from(`${h}.${p}`), key, b64(sig))
      && claims.iss === appId && claims.iat <= now && claims.exp > now && claims.exp - claims.iat <= 660;
  };
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = req.url.split('?')[0];
    if (path === '/_e2e/tokens') return send(res, 200, minted);
    if (path === '/_e2e/refuse') { refusing = JSON.parse(raw).on; return send(res, 200, { refusing }); }
    if (path === '/') return send(res, 200, { ok: true });
    if (refusing || !appJwt(req)) return send(res, 401, { message: 'A JSON web token could not be decoded' });
    if (req.headers['x-github-api-version'] !== '2022-11-28') return send(res, 400, { message: 'Unsupported API version' });
    const repo = path.match(/^\/repos\/acme\/([\w.-]+)\/installation$/);
    if (req.method === 'GET' && repo) return send(res, 200, { id: 42, app_id: Number(appId), account: { login: 'acme' } });
    if (req.method === 'POST' && path === '/app/installations/42/access_tokens') {
      const body = JSON.parse(raw || '{}');
      const levels = Object.values(body.permissions ?? {});
      if (!levels.length || levels.some((l) => !['read', 'write'].includes(l))) return send(res, 422, { message: 'Invalid permissions' });
      if (body.repositories && !body.repositories.every((r) => typeof r === 'string' && !r.includes('/'))) {
        return send(res, 422, { message: 'repositories are names without the owner' });
      }
      const token = `ghs_${randomBytes(18).toString('hex')}`;
      const expires_at = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
      minted.push({ sha256: createHash('sha256').update(token).digest('hex'), permissions: body.permissions, repositories: body.repositories ?? null, expires_at });
      return send(res, 201, { token, expires_at, permissions: body.permissions, repository_selection: body.repositories ? 'selected' : 'all' });
    }
    send(res, 404, { message: 'Not Found' });
  });
  const bound = await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
  return { url: `http://127.0.0.1:${bound}`, minted, close: () => new Promise((r) => server.close(() => r())) };
}

/** AWS Signature Version 4's signature of a request, computed as AWS documents it. */
export function sigv4Signature({ secret, day, region, service, method, path, query, headers, signed, body, amzDate }) {
  const hmac = (key, data) => createHmac('sha256', key).update(data).digest();
  const canonicalHeaders = signed.map((h) => `${h}:${String(headers[h]).trim()}\n`).join('');
  const canonical = [method, path, query, canonicalHeaders, signed.join(';'), createHash('sha256').update(body).digest('hex')].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key = hmac(`AWS4${secret}`, day);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(toSign).digest('hex');
}

/**
 * A fake of AWS STS's `AssumeRole` query API: a POST signed with SigV4 by the key pair `accessKeyId` /
 * `secret` (checked as AWS does: the signed headers must include host and x-amz-date), with the form fields
 * AWS documents; answered in STS's XML with fresh credentials for `DurationSeconds`, or its error XML.
 * `GET /_e2e/assumed` lists what was assumed (the session token's sha256, never a secret).
 */
export async function fakeSts({ port = 0, accessKeyId, secret }) {
  const assumed = [];
  const xml = (res, status, body) => { res.writeHead(status, { 'content-type': 'text/xml' }); res.end(body); };
  const error = (res, status, code, message) => xml(res, status,
    `<ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>e2e</RequestId></ErrorResponse>`);
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = req.url.split('?')[0];
    if (path === '/_e2e/assumed') { res.writeHead(200, { 'content-type': 'application/json' }); return res.end(JSON.stringify(assumed)); }
    if (req.method !== 'POST') { res.writeHead(200); return res.end('ok'); }
    const m = (req.headers.authorization ?? '').match(/^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/sts\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/);
    if (!m || m[1] !== accessKeyId) return error(res, 403, 'InvalidClientTokenId', 'The security token included in the request is invalid.');
    const [, , day, region, signedList, signature] = m;
    const signed = signedList.split(';');
    const amzDate = req.headers['x-amz-date'] ?? '';
    if (!signed.includes('host') || !signed.includes('x-amz-date') || !amzDate.startsWith(day)) {
      return error(res, 403, 'SignatureDoesNotMatch', 'host and x-amz-date must be signed');
    }
    const want = sigv4Signature({ secret, day, region, service: 'sts', method: 'POST', path: '/', query: '', headers: req.headers, signed, body: raw, amzDate });
    if (want !== signature) return error(res, 403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
    const f = new URLSearchParams(raw);
    if (f.get('Action') !== 'AssumeRole' || f.get('Version') !== '2011-06-15') return error(res, 400, 'InvalidAction', 'Could not find operation');
    const duration = Number(f.get('DurationSeconds'));
    if (!(duration >= 900 && duration <= 43200)) return error(res, 400, 'ValidationError', 'DurationSeconds out of range');
    let policy;
    try { policy = JSON.parse(f.get('Policy')); } catch { return error(res, 400, 'MalformedPolicyDocument', 'The policy is not JSON'); }
    const token = `e2e-session-${randomBytes(16).toString('hex')}`;
    const expiration = new Date(Date.now() + duration * 1000).toISOString();
    assumed.push({ roleArn: f.get('RoleArn'), session: f.get('RoleSessionName'), externalId: f.get('ExternalId'), duration, policy, region,
      sha256: createHash('sha256').update(token).digest('hex') });
    xml(res, 200, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><AssumedRoleUser><AssumedRoleId>AROAE2E:${f.get('RoleSessionName')}</AssumedRoleId><Arn>${f.get('RoleArn')}</Arn></AssumedRoleUser><Credentials><AccessKeyId>ASIAE2E${assumed.length}</AccessKeyId><SecretAccessKey>${randomBytes(20).toString('hex')}</SecretAccessKey><SessionToken>${token}</SessionToken><Expiration>${expiration}</Expiration></Credentials></AssumeRoleResult><ResponseMetadata><RequestId>e2e</RequestId></ResponseMetadata></AssumeRoleResponse>`);
  });
  const bound = await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
  return { url: `http://127.0.0.1:${bound}`, assumed, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * A fake of the three Google endpoints a service account's grant goes through, each checking what Google
 * checks: `POST /token` takes a JWT assertion (RFC 7523) signed with the account's key (`publicKeyPem`),
 * `aud` this endpoint; `POST /v1/projects/-/serviceAccounts/{email}:generateAccessToken` takes that token
 * and a `lifetime` of at most an hour; `POST /v1/token` exchanges a token for one downscoped by a Credential
 * Access Boundary. `GET /_e2e/google` lists what was generated and exchanged (a token's sha256, never it).
 */
export async function fakeGoogle({ port = 0, publicKeyPem, email }) {
  const key = createPublicKey(publicKeyPem);
  const seen = [];
  const own = new Set(); const generated = new Set();
  const send = (res, status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
  const token = (prefix) => `${prefix}.${randomBytes(16).toString('hex')}`;
  const hash = (t) => createHash('sha256').update(t).digest('hex');
  let base = '';
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = req.url.split('?')[0];
    if (path === '/_e2e/google') return send(res, 200, seen);
    if (req.method !== 'POST') return send(res, 200, { ok: true });
    const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (path === '/token') {
      const f = new URLSearchParams(raw);
      const [h, p, sig] = (f.get('assertion') ?? '').split('.');
      const claims = p ? JSON.parse(Buffer.from(p, 'base64url')) : {};
      const valid = sig && verify('sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(sig, 'base64url'))
        && f.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' && claims.iss === email && claims.aud === `${base}/token`
        && claims.exp - claims.iat <= 3600;
      if (!valid) return send(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
      const t = token('ya29.own'); own.add(t);
      return send(res, 200, { access_token: t, expires_in: 3599, token_type: 'Bearer' });
    }
    if (path === `/v1/projects/-/serviceAccounts/${email}:generateAccessToken`) {
      if (!own.has(bearer)) return send(res, 401, { error: { code: 401, message: 'Request had invalid authentication credentials.' } });
      const body = JSON.parse(raw);
      const secs = Number(String(body.lifetime).replace(/s$/, ''));
      if (!(secs >= 1 && secs <= 3600) || !Array.isArray(body.scope)) return send(res, 400, { error: { code: 400, message: 'Invalid lifetime or scope' } });
      const t = token('ya29.grant'); generated.add(t);
      seen.push({ kind: 'generate', scope: body.scope, lifetime: secs, sha256: hash(t) });
      return send(res, 200, { accessToken: t, expireTime: new Date(Date.now() + secs * 1000).toISOString() });
    }
    if (path === '/v1/token') {
      const f = new URLSearchParams(raw);
      if (f.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange' || !generated.has(f.get('subject_token'))) {
        return send(res, 400, { error: 'invalid_grant', error_description: 'The subject token is invalid.' });
      }
      const t = token('ya29.downscoped');
      seen.push({ kind: 'exchange', options: JSON.parse(f.get('options')), sha256: hash(t) });
      return send(res, 200, { access_token: t, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3000 });
    }
    send(res, 404, { error: { code: 404, message: 'Not Found' } });
  });
  const bound = await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
  base = `http://127.0.0.1:${bound}`;
  return { url: base, seen, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * A fake of Slack's Web API as a Slack app calls it: every method checks the bot token (`Authorization:
 * Bearer`) and answers `{ok: false, error: "invalid_auth"}` otherwise, as Slack does. `auth.test` names
 * team `team`; `chat.postMessage` answers a channel and a `ts`; `chat.update` and `chat.postEphemeral`
 * need a channel (and a ts / user). `GET /_e2e/calls` lists every call (method and JSON body).
 */
export async function fakeSlack({ port = 0, token, team = 'T0E2E' }) {
  const calls = [];
  let n = 0;
  const send = (res, body) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = req.url.split('?')[0];
    if (path === '/_e2e/calls') return send(res, calls);
    if (path === '/') return send(res, { ok: true });
    const method = path.replace(/^\/+/, '');
    let body = {};
    try { body = JSON.parse(raw || '{}'); } catch { return send(res, { ok: false, error: 'invalid_json' }); }
    calls.push({ method, body });
    if (req.headers.authorization !== `Bearer ${token}`) return send(res, { ok: false, error: 'invalid_auth' });
    switch (method) {
      case 'auth.test': return send(res, { ok: true, team_id: team, user_id: 'UBOT' });
      case 'chat.postMessage':
        if (!body.channel || !Array.isArray(body.blocks)) return send(res, { ok: false, error: 'invalid_arguments' });
        n += 1;
        return send(res, { ok: true, channel: body.channel, ts: `1700000000.${String(n).padStart(6, '0')}` });
      case 'chat.update': return send(res, body.channel && body.ts ? { ok: true } : { ok: false, error: 'invalid_arguments' });
      case 'chat.postEphemeral': return send(res, body.channel && body.user ? { ok: true } : { ok: false, error: 'invalid_arguments' });
      default: return send(res, { ok: false, error: 'unknown_method' });
    }
  });
  const bound = await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
  return { url: `http://127.0.0.1:${bound}`, calls, close: () => new Promise((r) => server.close(() => r())) };
}
