// The container network sidecar for local development (`wrangler dev`), in place of the one Cloudflare
// publishes, which machines without a route to its image registry cannot pull. workerd starts it beside each
// sandbox container (the sandbox joins its network namespace) with
//   --http-egress-port P --http-ingress-address 0.0.0.0:39001 --docker-gateway-cidr C --dns-enabled
//   --tls-intercept [--disable-ipv6]
// and speaks to it on the ingress address:
//   PUT /egress {port, dns: {allowHostnames}, internet: {enabled}}: where workerd's egress listener is and
//     what the container may reach;
//   GET /ca: a PEM certificate workerd copies into the container (for HTTPS interception, which this
//     sidecar does not do: plain HTTP only);
//   CONNECT with X-Dst-Addr host:port: a tunnel to a port of the container (the Durable Object's
//     getTcpPort); 400 means nothing listens there yet.
// Egress: the container's TCP to port 80 is redirected here (iptables, this namespace). Each request asks
// workerd's egress listener (CONNECT to its original destination, X-Hostname) whether the Worker intercepts it
// (interceptOutboundHttp): 200, the request goes to the Worker through that tunnel; otherwise it leaves
// for the internet only when internet is enabled. Any other egress leaves only when internet is enabled.
import http from 'node:http';
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const flag = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const ingress = flag('--http-ingress-address', '0.0.0.0:39001');
const cidr = flag('--docker-gateway-cidr', '');
let egress = { port: Number(flag('--http-egress-port', '0')), internet: false, allow: [] };
const REDIRECT_PORT = 3180;
const log = (...a) => console.log('[sandbox-proxy]', ...a);

// The gateway: the first address of the network workerd's egress listener binds on.
const gateway = (() => {
  const ip = cidr.split('/')[0];
  if (!ip) return 'host.docker.internal';
  const p = ip.split('.').map(Number);
  p[3] += 1;
  return p.join('.');
})();

function iptables(internet) {
  const run = (...a) => { try { execFileSync('iptables', a, { stdio: 'ignore' }); } catch { /* already so */ } };
  run('-t', 'nat', '-F', 'OUTPUT');
  run('-F', 'OUTPUT');
  // Plain HTTP from the container comes here, except to the egress listener itself.
  run('-t', 'nat', '-A', 'OUTPUT', '-p', 'tcp', '--dport', '80', '-j', 'REDIRECT', '--to-ports', String(REDIRECT_PORT));
  if (!internet) {
    // Redirected packets keep their first output device here, so they are matched by what they became.
    run('-A', 'OUTPUT', '-d', '127.0.0.0/8', '-j', 'ACCEPT');
    run('-A', 'OUTPUT', '-m', 'conntrack', '--ctstate', 'DNAT', '-j', 'ACCEPT');
    run('-A', 'OUTPUT', '-p', 'tcp', '-d', gateway, '--dport', String(egress.port), '-j', 'ACCEPT');
    run('-A', 'OUTPUT', '-m', 'state', '--state', 'ESTABLISHED,RELATED', '-j', 'ACCEPT');
    run('-A', 'OUTPUT', '-j', 'REJECT');
  }
}

const reply = (res, status, body = '') => { res.writeHead(status, { 'content-type': 'text/plain' }); res.end(body); };

const ingressServer = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    if (req.method === 'PUT' && req.url === '/egress') {
      try {
        const j = JSON.parse(body || '{}');
        egress = { port: Number(j.port || egress.port), internet: !!j.internet?.enabled, allow: j.dns?.allowHostnames || [] };
        iptables(egress.internet);
        log('egress', JSON.stringify(egress));
        return reply(res, 200, 'ok');
      } catch (e) { return reply(res, 400, String(e)); }
    }
    if (req.method === 'GET' && req.url === '/ca') return reply(res, 200, readFileSync(new URL('./ca.pem', import.meta.url)));
    reply(res, 404, 'not found');
  });
});
ingressServer.on('connect', (req, socket, head) => {
  const dst = String(req.headers['x-dst-addr'] || req.url);
  const port = Number(dst.slice(dst.lastIndexOf(':') + 1));
  const up = net.connect(port, '127.0.0.1');
  up.once('connect', () => {
    socket.write('HTTP/1.1 200 OK\r\n\r\n');
    if (head.length) up.write(head);
    up.pipe(socket); socket.pipe(up);
  });
  up.once('error', () => socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n'));
  socket.on('error', () => up.destroy());
});

// Where a redirected connection was going: its first tuple in this namespace's connection tracking (the
// redirect hides it from the socket), as workerd matches interceptions by address (interceptAllOutboundHttp
// is 0.0.0.0/0) and by the Host name.
function originalDestination(socket) {
  try {
    const sport = `sport=${socket.remotePort} `;
    for (const line of readFileSync('/proc/net/nf_conntrack', 'utf8').split('\n')) {
      if (!line.includes(' tcp ') || !line.includes(sport)) continue;
      const m = line.match(/src=\S+ dst=(\S+) sport=(\d+) dport=(\d+)/);
      if (m && m[2] === String(socket.remotePort)) return `${m[1]}:${m[3]}`;
    }
  } catch { /* no connection tracking here: the Host name alone */ }
  return null;
}

// The redirected plain HTTP: to the Worker when it intercepts the host, else out when internet is on.
const egressServer = http.createServer((req, res) => {
  const host = String(req.headers.host || '');
  const [name, port = '80'] = host.split(':');
  const dest = originalDestination(req.socket) ?? `${name}:${port}`;
  const connect = http.request({ host: gateway, port: egress.port, method: 'CONNECT', path: dest,
    headers: { 'X-Hostname': name, host: `${name}:${port}` } });
  connect.on('connect', (answer, tunnel) => {
    if (answer.statusCode === 200 || (answer.statusCode === 202 && egress.internet)) {
      const onward = http.request({ createConnection: () => tunnel, method: req.method, path: req.url, headers: req.headers });
      onward.on('response', (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
      onward.on('error', (e) => { if (!res.headersSent) reply(res, 502, String(e)); });
      req.pipe(onward);
    } else {
      tunnel.destroy();
      reply(res, 403, `egress to ${name} is not allowed from this sandbox`);
    }
  });
  connect.on('error', (e) => reply(res, 502, `the egress listener is unreachable: ${e.message}`));
  connect.end();
});

const [ih, ip] = [ingress.slice(0, ingress.lastIndexOf(':')), Number(ingress.slice(ingress.lastIndexOf(':') + 1))];
iptables(false);
ingressServer.listen(ip, ih, () => log('ingress on', ingress, 'gateway', gateway));
egressServer.listen(REDIRECT_PORT, '127.0.0.1');
