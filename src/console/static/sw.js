// agentsky console's service worker (scope /console/): shows a pushed request as a notification (Web
// Push; the payload arrives decrypted by the browser), opens the request when the notification is tapped,
// and answers it when one of its buttons is (a one-time token the push carried, sent to
// /console/push/answer; no cookie needed).
'use strict';
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));

const tagOf = (d) => (d.request_id ? `request-${d.request_id}` : 'agentsky');

function onPush(e) {
  let d;
  try { d = e.data ? e.data.json() : {}; } catch { d = { title: 'agentsky', body: e.data ? e.data.text() : '' }; }
  const actions = (d.actions || []).slice(0, 2).map((a) => ({ action: a.action, title: a.title }));
  e.waitUntil(self.registration.showNotification(d.title || 'agentsky', {
    body: d.body || '', tag: tagOf(d), data: d, actions, requireInteraction: actions.length > 0,
  }));
}

// The request's page: a console window already showing it is focused, another console window is sent
// there, else a new one opens.
async function openUrl(url) {
  const target = new URL(url || '/console', self.location.origin).href;
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const same = windows.find((c) => c.url === target);
  if (same) return same.focus();
  for (const c of windows) {
    if (!new URL(c.url).pathname.startsWith('/console') || !('navigate' in c)) continue;
    try { const n = await c.navigate(target); if (n) return n.focus(); } catch { /* not controlled: open one */ }
  }
  return self.clients.openWindow(target);
}

async function answer(d, a) {
  let said = '';
  try {
    const r = await fetch('/console/push/answer', {
      method: 'POST', credentials: 'omit', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: a.token }),
    });
    if (r.ok) {
      await self.registration.showNotification(`Answered: ${a.title}`, { body: d.title || '', tag: tagOf(d), data: { url: d.url } });
      return;
    }
    said = ((await r.json()).error || {}).message || '';
  } catch { /* offline: open the request */ }
  await self.registration.showNotification('Not answered', { body: said || 'Open the request to answer it.', tag: tagOf(d), data: { url: d.url } });
  await openUrl(d.url);
}

function onClick(e) {
  const d = (e.notification && e.notification.data) || {};
  if (e.notification) e.notification.close();
  const a = (d.actions || []).find((x) => x.action === e.action);
  e.waitUntil(a ? answer(d, a) : openUrl(d.url));
}

self.addEventListener('push', onPush);
self.addEventListener('notificationclick', onClick);
// For tests that drive the handlers without a push service or a person's tap.
self.agentsky = { onPush, onClick, openUrl };
