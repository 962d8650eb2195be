// agentsky console: the live parts of pages the server renders. Everything works without it (forms post
// and come back); with it, what changes on the server appears without a reload:
// - the workspace's feed: a long-poll on /console/w/<ws>/live that the server holds until something in
//   the workspace changes (woken by the change, not polled); then the page is fetched again and every
//   region marked data-live is swapped in, unless the person is typing in it;
// - a session's transcript: a long-poll on its stream that the session's own object holds until new
//   events land; they are appended;
// - the count of open requests in the title, the badge and, when the tab is hidden and the person
//   allowed it, a browser notification.
'use strict';
(() => {
  const body = document.body;
  const ws = body.dataset.workspace;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // Times in the reader's own zone, and how long ago.
  const ago = (t) => {
    const s = Math.round((Date.now() - t) / 1000);
    if (s < 45) return 'just now';
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return null;
  };
  function localize(root) {
    for (const el of root.querySelectorAll('time[datetime]')) {
      const t = Date.parse(el.getAttribute('datetime'));
      if (Number.isNaN(t)) continue;
      const d = new Date(t);
      el.title = d.toLocaleString();
      el.textContent = (t <= Date.now() && ago(t)) || d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
    }
  }

  // Destructive buttons ask first.
  document.addEventListener('submit', (e) => {
    const msg = e.target.dataset && e.target.dataset.confirm;
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  // A region is left alone while the person is typing in it, and refreshed once they leave it.
  const busy = (el) => el.contains(document.activeElement) && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)
    || [...el.querySelectorAll('input:not([type=hidden]),textarea')].some((f) => f.value !== f.defaultValue);
  let stale = false;
  async function refresh() {
    const r = await fetch(location.href, { credentials: 'same-origin', headers: { accept: 'text/html' } });
    if (r.redirected && new URL(r.url).pathname.startsWith('/console/login')) { location.href = r.url; return; }
    if (!r.ok) return;
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    stale = false;
    for (const el of document.querySelectorAll('[data-live]')) {
      const fresh = doc.querySelector(`[data-live="${CSS.escape(el.dataset.live)}"]`);
      if (!fresh) continue;
      if (busy(el)) { stale = true; continue; }
      el.replaceWith(fresh);
      localize(fresh);
    }
    setOpen(Number(doc.body.dataset.open || 0));
  }
  document.addEventListener('focusout', () => { if (stale) setTimeout(() => { if (stale) refresh(); }, 300); });

  // The open-request count: title, badge, notification.
  let open = Number(body.dataset.open || 0);
  const baseTitle = body.dataset.title || document.title;
  function setOpen(n) {
    if (n > open && document.hidden && 'Notification' in window && Notification.permission === 'granted') {
      const more = n - open;
      new Notification('agentsky', { body: `${more} new request${more > 1 ? 's' : ''} waiting for you`, tag: `agentsky-${ws}` });
    }
    open = n;
    document.title = n > 0 ? `(${n}) ${baseTitle}` : baseTitle;
    for (const b of document.querySelectorAll('[data-open-badge]')) { b.textContent = String(n); b.hidden = n === 0; }
  }
  // The console is an app: its service worker shows pushed requests even with no tab open. "Notify me"
  // subscribes this browser (Web Push, with the deployment's VAPID key) and hands the subscription to the
  // server; where push is missing, it falls back to notifications while a tab is open.
  const notify = document.querySelector('[data-notify]');
  const canPush = 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
  const registered = canPush ? navigator.serviceWorker.register('/console/sw.js', { scope: '/console/' }).catch(() => null) : Promise.resolve(null);
  const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const deviceLabel = () => {
    const ua = navigator.userAgent;
    const os = (/(iPhone|iPad|Android|Mac OS X|Windows|CrOS|Linux)/.exec(ua) || ['a device'])[0].replace('Mac OS X', 'Mac').replace('CrOS', 'ChromeOS');
    const app = (/(Edg|Firefox|Chrome|Safari)/.exec(ua) || ['browser'])[0].replace('Edg', 'Edge');
    return `${app} on ${os}`;
  };
  async function subscribe() {
    if ((await Notification.requestPermission()) !== 'granted') return false;
    const reg = (await registered) && (await navigator.serviceWorker.ready);
    if (!reg) return false;
    const k = await fetch('/v1/push/vapid-key');
    if (!k.ok) return false;
    const { public_key: key } = await k.json();
    let sub = await reg.pushManager.getSubscription();
    if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromB64u(key) });
    const j = sub.toJSON();
    const form = new URLSearchParams({ csrf: notify.dataset.csrf, back: location.pathname, endpoint: j.endpoint,
      keys: JSON.stringify(j.keys), label: deviceLabel() });
    const r = await fetch(notify.dataset.action, { method: 'POST', body: form, credentials: 'same-origin' });
    return r.ok;
  }
  if (notify && canPush) {
    registered.then(async (reg) => {
      const sub = reg && Notification.permission !== 'denied' ? await reg.pushManager.getSubscription() : null;
      notify.hidden = !reg || Notification.permission === 'denied' || (sub && Notification.permission === 'granted');
    });
    notify.addEventListener('click', async () => {
      notify.disabled = true;
      const ok = await subscribe().catch(() => false);
      notify.disabled = false;
      notify.hidden = ok;
      if (!ok) notify.textContent = 'Notify me (not allowed here)';
    });
  } else if (notify && 'Notification' in window && Notification.permission === 'default') {
    notify.hidden = false;
    notify.addEventListener('click', async () => { await Notification.requestPermission(); notify.hidden = true; });
  }

  // The workspace's feed.
  async function watch() {
    let version = body.dataset.version || '';
    for (;;) {
      try {
        const r = await fetch(`/console/w/${encodeURIComponent(ws)}/live?v=${encodeURIComponent(version)}`, { credentials: 'same-origin' });
        if (r.status === 401) { location.href = '/console/login'; return; }
        if (!r.ok) { await sleep(3000); continue; }
        const j = await r.json();
        if (j.v !== version) { version = j.v; await refresh(); }
      } catch { await sleep(3000); }
    }
  }

  // A session's transcript, appended as it grows.
  async function stream(el) {
    let cursor = el.dataset.cursor || '';
    // The page's head and controls follow the session's status as the transcript shows it change.
    let status = el.dataset.status || '';
    for (;;) {
      try {
        const r = await fetch(`${el.dataset.stream}?after=${encodeURIComponent(cursor)}`, { credentials: 'same-origin' });
        if (r.status === 401) return;
        if (!r.ok) { await sleep(3000); continue; }
        const j = await r.json();
        if (j.html) {
          const atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
          el.insertAdjacentHTML('beforeend', j.html);
          localize(el);
          if (atEnd) window.scrollTo(0, document.body.scrollHeight);
        }
        cursor = j.cursor;
        if (j.status && j.status !== status) { status = j.status; await refresh(); }
        if (j.status === 'terminated') return;
      } catch { await sleep(3000); }
    }
  }

  localize(document);
  if (ws) watch();
  for (const el of document.querySelectorAll('[data-stream]')) stream(el);
})();
