//! The one rule for every URL a tenant supplies and the Worker then calls (a model endpoint from the
//! `OPENAI_BASE_URL` secret, an agent's remote MCP servers, webhooks): `https://` to a public host, no
//! user name or password in it, no IP literal in a loopback, private, link-local, shared (CGNAT),
//! metadata or otherwise reserved range, no internal host names. Plain `http://`, and loopback at all,
//! only when the deployment opts in for local development (`ALLOW_LOOPBACK_HTTP`).
//!
//! URLs are parsed the way `fetch` parses them (the WHATWG URL standard, the `url` crate), so what is
//! checked is what would be called: `http://2130706433/`, `http://0x7f.1/` and `http://[::ffff:7f00:1]/`
//! are all 127.0.0.1 here too. Redirects are the caller's to refuse ([`same_origin`]); a host name is
//! checked as written (a Worker cannot resolve names, and its egress does not reach private networks).
//!
//! Also here: [`same_server`], whether a URL names this server itself (never fetched: a request that makes
//! the server call itself can nest into several), and [`summary`], what of a tenant server's error answer
//! may be shown (never its whole body).

use std::net::{Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// Checks `raw`, the URL in `field`, and returns it parsed: what to call. `loopback_http` is the
/// deployment's opt-in for local development. Errors name the field and the rule.
pub fn check(field: &str, raw: &str, loopback_http: bool) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| format!("`{field}` is not a valid URL ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`{field}` must not hold a user name or password before the host (`user:pass@`); keep credentials in a secret"
        ));
    }
    let host = url.host().ok_or_else(|| format!("`{field}` has no host"))?;
    if is_loopback(&host) {
        return match (loopback_http, url.scheme()) {
            (true, "http" | "https") => Ok(url),
            (true, _) => Err(format!("`{field}` must be an http:// or https:// URL")),
            (false, _) => Err(format!(
                "`{field}` points at this machine (loopback), which only a local development deployment allows (ALLOW_LOOPBACK_HTTP)"
            )),
        };
    }
    if url.scheme() != "https" {
        return Err(format!("`{field}` must be an https:// URL (got {}://)", url.scheme()));
    }
    let refused = match &host {
        Host::Domain(d) => internal_name(d),
        Host::Ipv4(ip) => reserved_v4(*ip),
        Host::Ipv6(ip) => reserved_v6(*ip),
    };
    match refused {
        Some(why) => Err(format!("`{field}` points at {why} ({host}); only public hosts may be called")),
        None => Ok(url),
    }
}

fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(d) => is_loopback_name(d),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

fn is_loopback_name(d: &str) -> bool {
    let d = d.trim_end_matches('.');
    d == "localhost" || d.ends_with(".localhost")
}

/// Names that only resolve inside a network: single labels, `.internal` (cloud metadata among them),
/// `.local` (mDNS), `.home.arpa`.
fn internal_name(d: &str) -> Option<&'static str> {
    let d = d.trim_end_matches('.');
    if !d.contains('.') {
        Some("a single-label (internal) host name")
    } else if [".internal", ".local", ".home.arpa", ".localdomain"].iter().any(|s| d.ends_with(s)) {
        Some("an internal host name")
    } else {
        None
    }
}

/// IPv4 ranges no tenant URL may name: (network, prefix length, what it is).
const V4: &[([u8; 4], u8, &str)] = &[
    ([0, 0, 0, 0], 8, "an unspecified address"),
    ([10, 0, 0, 0], 8, "a private address"),
    ([100, 64, 0, 0], 10, "a shared (CGNAT) address"),
    ([127, 0, 0, 0], 8, "a loopback address"),
    ([169, 254, 0, 0], 16, "a link-local address (cloud metadata lives here)"),
    ([172, 16, 0, 0], 12, "a private address"),
    ([192, 0, 0, 0], 24, "a reserved address"),
    ([192, 0, 2, 0], 24, "a documentation address"),
    ([192, 168, 0, 0], 16, "a private address"),
    ([198, 18, 0, 0], 15, "a benchmarking address"),
    ([198, 51, 100, 0], 24, "a documentation address"),
    ([203, 0, 113, 0], 24, "a documentation address"),
    ([224, 0, 0, 0], 4, "a multicast address"),
    ([240, 0, 0, 0], 4, "a reserved address"),
];

fn reserved_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let n = u32::from(ip);
    V4.iter().find(|(net, len, _)| n >> (32 - len) == u32::from_be_bytes(*net) >> (32 - len)).map(|(_, _, why)| *why)
}

/// IPv6 ranges no tenant URL may name; `None` in the last place means "look at the IPv4 address inside".
const V6: &[([u16; 8], u8, Option<&str>)] = &[
    ([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, None),    // IPv4-mapped
    ([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, None), // NAT64
    ([0, 0, 0, 0, 0, 0, 0, 0], 96, None),         // IPv4-compatible (and :: and ::1)
    ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, Some("a discard address")),
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, Some("a Teredo address")),
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, Some("a documentation address")),
    ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, Some("a 6to4 address")),
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, Some("a unique-local (private) address")),
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, Some("a link-local address")),
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, Some("a site-local address")),
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, Some("a multicast address")),
];

fn reserved_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let n = u128::from(ip);
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    let (_, _, why) =
        V6.iter().find(|(net, len, _)| n >> (128 - len) == u128::from(Ipv6Addr::from(*net)) >> (128 - len))?;
    match why {
        Some(why) => Some(why),
        // The last 32 bits are an IPv4 address, judged as one (a public one passes).
        None => reserved_v4(Ipv4Addr::from(n as u32)),
    }
}

/// Whether a redirect from `from` to `location` stays on the same origin (scheme, host and port).
/// Anything else is not followed: a tenant's server must not steer the Worker to another host.
pub fn same_origin(from: &Url, location: &str) -> Option<Url> {
    let to = from.join(location).ok()?;
    (to.origin() == from.origin()).then_some(to)
}

/// Whether `url` reaches one of `own`, the origins this server answers on: the same host (a name's case
/// and trailing dot aside) and port, whatever the scheme. Every loopback name is this machine, so on a
/// loopback origin's port `localhost`, `127.0.0.2` and `[::1]` are this server too.
pub fn same_server(url: &Url, own: &[Url]) -> bool {
    let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else { return false };
    own.iter().any(|o| {
        let Some(own_host) = o.host() else { return false };
        o.port_or_known_default() == Some(port)
            && (host_key(&host) == host_key(&own_host) || (is_loopback(&host) && is_loopback(&own_host)))
    })
}

fn host_key(host: &Host<&str>) -> String {
    match host {
        Host::Domain(d) => d.trim_end_matches('.').to_ascii_lowercase(),
        other => other.to_string(),
    }
}

/// What of a tenant server's error answer is shown (in a transcript, an error, a log): the status and
/// a [`snippet`] of its body.
pub fn summary(status: u16, body: &[u8]) -> String {
    match snippet(&String::from_utf8_lossy(body)) {
        s if s.is_empty() => format!("HTTP {status}"),
        s => format!("HTTP {status}: {s}"),
    }
}

/// At most 100 characters of what a tenant's server said, on one line, with anything secret-looking
/// redacted.
pub fn snippet(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat: String = flat.chars().filter(|c| !c.is_control()).collect();
    let clean = super::redact::redact(&flat);
    let mut out: String = clean.chars().take(100).collect();
    if clean.chars().count() > 100 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &str = "mcpServers[].url";

    /// Unicode host names are not mapped (the `idna_adapter` pin in Cargo.toml): such a URL is refused
    /// with the field named, and its punycode spelling passes.
    #[test]
    fn a_unicode_host_is_refused_clearly_and_its_punycode_passes() {
        let e = check(F, "https://bücher.example/mcp", false).unwrap_err();
        assert!(e.contains(F), "{e}");
        assert!(check(F, "https://xn--bcher-kva.example/mcp", false).is_ok());
    }

    #[test]
    fn public_https_urls_pass_and_come_back_parsed() {
        for ok in [
            "https://tools.example.com/mcp",
            "https://api.openai.com/v1",
            "https://example.com:8443/x?y=1",
            "https://8.8.8.8/",
            "https://[2606:4700:4700::1111]/dns",
            "https://[::ffff:8.8.8.8]/",
        ] {
            assert!(check(F, ok, false).is_ok(), "{ok}: {:?}", check(F, ok, false));
        }
        assert_eq!(check(F, "https://EXAMPLE.com/a", false).unwrap().as_str(), "https://example.com/a");
    }

    #[test]
    fn every_way_of_naming_an_inside_address_is_refused() {
        for bad in [
            "http://example.com/",
            "ftp://example.com/",
            "file:///etc/passwd",
            "https://user:pass@example.com/",
            "https://token@example.com/",
            "http://127.0.0.1:80@example.com/",
            "https://127.0.0.1/",
            "https://127.1.2.3/",
            "https://2130706433/",
            "https://0x7f.1/",
            "https://017700000001/",
            "https://0x7f000001/",
            "https://localhost/",
            "https://LOCALHOST./",
            "https://api.localhost/",
            "https://[::1]/",
            "https://[::]/",
            "https://0.0.0.0/",
            "https://10.1.2.3/",
            "https://172.16.0.1/",
            "https://172.31.255.255/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://100.64.0.1/",
            "https://100.127.255.254/",
            "https://[fe80::1]/",
            "https://[fc00::1]/",
            "https://[fd00:ec2::254]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:a9fe:a9fe]/",
            "https://[::ffff:10.0.0.1]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[::127.0.0.1]/",
            "https://[2002:7f00:1::]/",
            "https://[ff02::1]/",
            "https://metadata.google.internal/computeMetadata/v1/",
            "https://metadata/",
            "https://printer.local/",
            "https://224.0.0.1/",
            "https://255.255.255.255/",
            "not a url",
            "https://",
        ] {
            let e = check(F, bad, false).expect_err(bad);
            assert!(e.contains(F), "{bad}: {e}");
        }
    }

    #[test]
    fn loopback_is_allowed_only_by_the_development_opt_in() {
        for local in ["http://127.0.0.1:8788/mcp", "http://localhost:3000/", "http://[::1]:9/", "https://127.0.0.1/"] {
            assert!(check(F, local, true).is_ok(), "{local}");
            assert!(check(F, local, false).unwrap_err().contains("ALLOW_LOOPBACK_HTTP"), "{local}");
        }
        // The opt-in is for this machine only: private ranges and plain http elsewhere stay refused.
        for still_bad in
            ["http://10.0.0.1/", "http://example.com/", "https://169.254.169.254/", "http://a:b@127.0.0.1/"]
        {
            assert!(check(F, still_bad, true).is_err(), "{still_bad}");
        }
    }

    #[test]
    fn redirects_are_followed_only_within_one_origin() {
        let from = Url::parse("https://tools.example.com/mcp").unwrap();
        assert_eq!(same_origin(&from, "/mcp/").unwrap().as_str(), "https://tools.example.com/mcp/");
        assert!(same_origin(&from, "https://tools.example.com/other").is_some());
        for away in [
            "https://evil.example.com/",
            "http://tools.example.com/mcp",
            "https://tools.example.com:444/",
            "//127.0.0.1/",
        ] {
            assert!(same_origin(&from, away).is_none(), "{away}");
        }
    }

    #[test]
    fn this_server_is_named_by_its_host_and_port_in_any_spelling() {
        let own: Vec<Url> = ["https://sky.example", "http://127.0.0.1:8787/", "https://127.0.0.1:8787/"]
            .iter()
            .map(|u| Url::parse(u).unwrap())
            .collect();
        for same in [
            "https://sky.example/oauth/authorize?client_id=x",
            "https://SKY.example.:443/c.json",
            "http://sky.example:443/",
            "http://127.0.0.1:8787/oauth/authorize",
            "http://localhost:8787/c.json",
            "http://[::1]:8787/c.json",
            "http://2130706433:8787/c.json",
            "https://127.0.0.2:8787/c.json",
        ] {
            assert!(same_server(&Url::parse(same).unwrap(), &own), "{same}");
        }
        for other in
            ["https://sky.example:8443/c.json", "https://app.sky.example/c.json", "http://127.0.0.1:9911/c.json"]
        {
            assert!(!same_server(&Url::parse(other).unwrap(), &own), "{other}");
        }
    }

    #[test]
    fn an_error_body_is_summarized_short_on_one_line_and_redacted() {
        let body =
            format!("{{\"error\": \"bad key sk-live1234567890abcdefXYZ\",\n\"trace\": \"{}\"}}", "x".repeat(500));
        let s = summary(401, body.as_bytes());
        assert!(s.starts_with("HTTP 401: "), "{s}");
        assert!(!s.contains("sk-live") && s.contains("[redacted]"), "{s}");
        assert!(!s.contains('\n'));
        assert!(s.chars().count() <= "HTTP 401: ".len() + 101, "{s}");
        assert_eq!(summary(502, b""), "HTTP 502");
    }
}
