// The Help Center's pages under wrangler dev: rendered at build time and deployed as the Worker's static
// assets (wrangler.toml [assets]), read through its ASSETS binding. Each page is the Worker's (its headers,
// its examples naming this server); no asset is served to a visitor directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE } from './helpers.mjs';

test('help pages come from the static assets, through the Worker', async () => {
  for (const [slug, heading] of [['keys-and-scopes', 'Keys and scopes'], ['zh-keys-and-scopes', null]]) {
    const res = await fetch(`${BASE}/help/${slug}`);
    const html = await res.text();
    assert.equal(res.status, 200, `${slug}: ${html.slice(0, 300)}`);
    if (heading) assert.match(html, new RegExp(`<h1>${heading}</h1>`));
    assert.ok(html.includes(`${BASE}/v1/keys`) && !html.includes('{{server}}'), `${slug} names this server`);
    assert.ok(res.headers.get('content-security-policy'), 'the Worker\'s headers');
  }
  const index = await fetch(`${BASE}/help`);
  assert.equal(index.status, 200);
  // The asset's own path is not a page: the Worker answers it (no such article), not the asset store.
  const raw = await fetch(`${BASE}/help/en/keys-and-scopes.html`);
  assert.equal(raw.status, 404);
  assert.ok(!(await raw.text()).includes('<h1>Keys and scopes</h1>'));
});
