#!/bin/sh
# The hosted sandbox's command: `sky runner --hosted` (arguments passed on), trusting Cloudflare's egress CA
# first when the platform mounted one. When the Worker intercepts the container's HTTPS, Cloudflare signs it
# with a CA placed at $ca at run time only (not in the image), and the runner is not root (it cannot add to
# the system store): so a bundle of the system's CAs and that one goes in /tmp, named by the variables
# OpenSSL, git, curl, Python and codex read; Node and claude add NODE_EXTRA_CA_CERTS to their own roots.
ca=/etc/cloudflare/certs/cloudflare-containers-ca.crt
bundle=/tmp/agentsky-ca.pem
if [ -f "$ca" ] && { cat /etc/ssl/certs/ca-certificates.crt; echo; cat "$ca"; } > "$bundle"; then
  export SSL_CERT_FILE="$bundle" GIT_SSL_CAINFO="$bundle" CURL_CA_BUNDLE="$bundle" REQUESTS_CA_BUNDLE="$bundle"
  export NODE_EXTRA_CA_CERTS="$ca"
fi
exec /usr/local/bin/sky runner --hosted "$@"
