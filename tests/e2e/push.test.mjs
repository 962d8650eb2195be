// Web Push (issue 39) end to end against wrangler dev: a fake push service on loopback (allowed only by the
// development opt-in ALLOW_LOOPBACK_HTTP that run.sh sets) records the pushes; a browser's subscription is
// made here with node:crypto (ECDH P-256 and a 16-byte auth secret) and subscribed over REST; an agent's
// ask_user opens a decision, whose push this test decrypts as a browser would (RFC 8291) and whose VAPID
// token it verifies (ES256, RFC 8292) against GET /v1/push/vapid-key; pressing the notification's button
// (its one-time token) answers the waiting agent. Then headless Chromium installs the console's service
// worker (manifest linked, scope /console/), and the worker's notification-click handler, driven in the
// worker itself (Chromium's real push needs a real push service and a person's tap), opens the request.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createECDH, createPublicKey, createDecipheriv, hkdfSync, randomBytes, verify } from 'node:crypto';
import { BASE, rest, createAccount, createWorkspace, createAgent, ikey } from './helpers.mjs';
import { signedIn, SHOTS } from './browser.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const b64u = (buf) => Buffer.from(buf).toString('base64url');

async function until(what, f, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** The push service: records each POST (headers and raw body) and answers 201, or what `status` says. */
async function pushService(status = () => 201) {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ url: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status(req.url)).end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, got, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }) };
}

/** A browser's side of a subscription. */
function device(endpoint) {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return {
    ecdh, auth, endpoint,
    json: { endpoint, expirationTime: null, keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(auth) } },
  };
}

/** RFC 8291 decryption, as the user agent does it: the aes128gcm header, ECDH, HKDF, AES-128-GCM. */
function decrypt(d, body) {
  const salt = body.subarray(0, 16);
  assert.equal(body.readUInt32BE(16), 4096, 'record size');
  const idlen = body[20];
  const asPublic = body.subarray(21, 21 + idlen);
  const ct = body.subarray(21 + idlen);
  const shared = d.ecdh.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), d.ecdh.getPublicKey(), asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', shared, d.auth, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ct.subarray(ct.length - 16));
  const plain = Buffer.concat([decipher.update(ct.subarray(0, ct.length - 16)), decipher.final()]);
  assert.equal(plain[plain.length - 1], 2, 'the last record ends with the 0x02 delimiter');
  return JSON.parse(plain.subarray(0, plain.length - 1).toString());
}

/** The VAPID header, verified: ES256 over the token by the deployment's public key, for this origin. */
function checkVapid(headers, publicKey, origin) {
  assert.equal(headers['content-encoding'], 'aes128gcm');
  assert.ok(Number(headers.ttl) > 0, 'a TTL');
  assert.ok(headers.urgency, 'an Urgency');
  const m = /^vapid t=([^,]+), k=(.+)$/.exec(headers.authorization);
  assert.ok(m, headers.authorization);
  assert.equal(m[2], publicKey);
  const [h, c, s] = m[1].split('.');
  assert.deepEqual(JSON.parse(Buffer.from(h, 'base64url')), { typ: 'JWT', alg: 'ES256' });
  const claims = JSON.parse(Buffer.from(c, 'base64url'));
  assert.equal(claims.aud, origin);
  const now = Date.now() / 1000;
  assert.ok(claims.exp > now && claims.exp <= now + 24 * 3600, JSON.stringify(claims));
  assert.match(claims.sub, /^(mailto:|https:)/);
  const raw = Buffer.from(publicKey, 'base64url');
  const key = createPublicKey({ format: 'jwk', key: { kty: 'EC', crv: 'P-256', x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33, 65)) } });
  assert.ok(verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url')), 'the ES256 signature verifies');
}

describe('Web Push', () => {
  let key, ws, svc;
  before(async () => {
    ({ key } = await createAccount());
    ws = (await createWorkspace(key)).slug;
    svc = await pushService((url) => (url.includes('gone') ? 410 : 201));
  });
  after(async () => { await svc?.close(); });

  test('a decision is pushed encrypted and signed, and its button answers the waiting agent', async () => {
    const vapid = await rest('GET', '/v1/push/vapid-key', { key });
    assert.equal(vapid.status, 200, JSON.stringify(vapid.body));
    const publicKey = vapid.body.public_key;
    const phone = device(`${svc.origin}/push/phone-${ikey('p')}`);
    const gone = device(`${svc.origin}/push/gone-${ikey('g')}`);
    for (const d of [phone, gone]) {
      const r = await rest('POST', '/v1/push/subscriptions', { key, body: d.json });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const agent = await createAgent(key, { workspace: ws });
    const s = await rest('POST', '/v1/sessions', { key, body: { agent_id: agent.agent_id, message: 'pick a db', idempotency_key: ikey('push'), workspace: ws } });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    const sid = s.body.session.session_id;
    const tok = await rest('POST', `/v1/sessions/${sid}/token`, { key });
    assert.equal(tok.status, 201, JSON.stringify(tok.body));
    const asking = fetch(`${BASE}/v1/session/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok.body.token}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_user', arguments: { kind: 'decision', payload: { prompt: 'Which db?', options: ['pg', 'sqlite'] } } } }),
    }).then((r) => r.json());

    const pushed = await until('the push', () => svc.got.find((g) => phone.endpoint.endsWith(g.url)));
    checkVapid(pushed.headers, publicKey, svc.origin);
    const said = decrypt(phone, pushed.body);
    assert.match(said.title, /asks/);
    assert.equal(said.body, 'Which db?');
    assert.equal(said.task_id, sid);
    assert.equal(said.url, `/console/w/${ws}#request-${said.request_id}`);
    assert.deepEqual(said.actions.map((a) => a.title), ['pg', 'sqlite']);
    assert.throws(() => decrypt(gone, pushed.body), 'another browser cannot read it');

    // The push service said the other one is gone: it is removed.
    await until('the gone subscription removed', async () => {
      const list = await rest('GET', '/v1/push/subscriptions', { key });
      return !list.body.subscriptions.some((x) => x.endpoint === gone.endpoint) && list.body.subscriptions.some((x) => x.endpoint === phone.endpoint);
    });

    // The notification's second button, as the service worker sends it: no cookie, the one-time token.
    const press = (token) => fetch(`${BASE}/console/push/answer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    const r = await press(said.actions[1].token);
    assert.equal(r.status, 200, await r.clone().text());
    const answered = await asking;
    assert.match(JSON.stringify(answered), /sqlite/);
    assert.equal((await press(said.actions[1].token)).status, 404, 'once');
    assert.equal((await press(said.actions[0].token)).status, 404, "the request's other buttons go with it");
    const audit = await rest('GET', `/v1/audit?workspace=${ws}&limit=100`, { key });
    assert.match(JSON.stringify(audit.body), /via push/);
  });

  test('the console installs its service worker and a notification click opens the request', async () => {
    const { browser, page } = await signedIn(key);
    try {
      await page.goto(`${BASE}/console/w/${ws}/devices`);
      await page.screenshot({ path: `${SHOTS}push-02-devices.png`, fullPage: true });
      const manifest = await page.getAttribute('link[rel=manifest]', 'href');
      assert.equal(manifest, '/console/manifest.webmanifest');
      const m = await (await fetch(`${BASE}${manifest}`)).json();
      assert.equal(m.display, 'standalone');
      assert.equal(m.start_url, '/console');
      assert.ok(m.icons.some((i) => i.sizes.includes('512')));
      const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
      assert.equal(scope, `${BASE}/console/`);
      // Controlled once the worker claims the page.
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 10_000 });
      const workers = page.context().serviceWorkers();
      assert.ok(workers.length >= 1, 'a service worker runs');
      const sw = workers.find((w) => w.url().endsWith('/console/sw.js'));
      assert.ok(sw, workers.map((w) => w.url()).join());
      // The click handler, as a tap on a notification without a button runs it.
      const target = `/console/w/${ws}#request-req_e2e`;
      await sw.evaluate((url) => new Promise((done) => {
        self.agentsky.onClick({ action: '', notification: { data: { url }, close() {} }, waitUntil: (p) => p.then(done, done) });
      }), target);
      await page.waitForURL(`**${target}`, { timeout: 10_000 });
      assert.equal(new URL(page.url()).pathname, `/console/w/${ws}`);
      // The push handler shows a notification with the request's buttons.
      await page.context().grantPermissions(['notifications'], { origin: BASE });
      const shown = await sw.evaluate(() => new Promise((done) => {
        const data = { title: 'D asks', body: 'Which db?', url: '/console', request_id: 'req_x', actions: [{ action: 'a0', title: 'pg', token: 't' }] };
        self.agentsky.onPush({ data: { json: () => data }, waitUntil: (p) => p.then(async () => {
          const n = await self.registration.getNotifications({ tag: 'request-req_x' });
          done(n.map((x) => ({ title: x.title, body: x.body, actions: x.actions.map((a) => a.title) })));
        }, (e) => done(String(e))) });
      }));
      assert.deepEqual(shown, [{ title: 'D asks', body: 'Which db?', actions: ['pg'] }]);
    } finally { await browser.close(); }
  });

  test('on a phone the navigation stays one short row above the content', async () => {
    const { browser, page } = await signedIn(key);
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${BASE}/console/w/${ws}`);
      const nav = await page.locator('nav.side').boundingBox();
      const main = await page.locator('main').boundingBox();
      assert.ok(nav.height < 80, `the nav is ${nav.height}px tall`);
      assert.ok(main.y < 844 / 2, `the content starts at ${main.y}px`);
      await page.screenshot({ path: `${SHOTS}push-01-phone.png` });
      const first = await page.locator('nav.side a').first().textContent();
      assert.match(first, /^Approvals/);
    } finally { await browser.close(); }
  });
});
