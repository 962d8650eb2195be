//! Plain HTTP request and response values, so every face of the server is a pure function that host tests
//! can call without a runtime. The Worker edge converts to and from `worker::Request`/`Response`.

/// One request as the core sees it. Header names are lower-case.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    pub method: String,
    /// Path only, without the query string.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The transport's peer address, where the edge can see it (host tests); empty in the Worker, which
    /// sees only headers. [`client_address`] decides which address per-address limits count.
    pub client_ip: String,
    /// Where an answer may be streamed as it is made (the Worker's edge gives one). Without it a streamed
    /// answer arrives whole, as the response's body, when the request ends.
    pub stream: Option<StreamOut>,
}

/// The edge's side of a streamed answer: the head goes out at once, then each chunk as it is sent.
pub trait StreamSink {
    /// Sends the status and headers; the body follows in [`StreamSink::send`]s.
    fn open(&self, status: u16, headers: Vec<(String, String)>);
    /// Sends one chunk at once; `false` when the client has gone away (nothing more is worth making).
    fn send(&self, chunk: Vec<u8>) -> bool;
}

/// A request's [`StreamSink`], with the headers every answer carries (added by `app` before routing).
#[derive(Clone)]
pub struct StreamOut {
    sink: std::rc::Rc<dyn StreamSink>,
    headers: Vec<(String, String)>,
}

impl std::fmt::Debug for StreamOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamOut").field("headers", &self.headers).finish_non_exhaustive()
    }
}

impl StreamOut {
    pub fn new(sink: std::rc::Rc<dyn StreamSink>) -> Self {
        Self { sink, headers: Vec::new() }
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Sends the head: `headers`, then the request's own.
    pub fn open(&self, status: u16, mut headers: Vec<(String, String)>) {
        headers.extend(self.headers.iter().cloned());
        self.sink.open(status, headers);
    }

    pub fn send(&self, chunk: Vec<u8>) -> bool {
        self.sink.send(chunk)
    }
}

/// The caller's address for per-address limits. Behind Cloudflare (`trust_cf_connecting_ip`, set in
/// production only) that is `CF-Connecting-IP`, which Cloudflare's edge writes over whatever a client
/// sent. Anywhere else the header is the client's own claim (under `wrangler dev` a client-sent value
/// passes through untouched), so the transport's peer counts: under `wrangler dev` the Worker is shown
/// no peer and every caller is this machine, `local`.
pub fn client_address(req: &HttpRequest, trust_cf_connecting_ip: bool) -> String {
    let forwarded = req.header("cf-connecting-ip").map(str::trim).filter(|ip| !ip.is_empty());
    match forwarded {
        Some(ip) if trust_cf_connecting_ip => ip.to_owned(),
        _ if !req.client_ip.is_empty() => req.client_ip.clone(),
        _ => "local".to_owned(),
    }
}

impl HttpRequest {
    /// The first header with this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// One query parameter, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        form_value(&self.query, name)
    }
}

/// One response. The body is sent as is.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn new(status: u16) -> Self {
        Self { status, headers: Vec::new(), body: Vec::new() }
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self::new(status)
            .with_header("content-type", "application/json")
            .with_body(serde_json::to_vec(value).unwrap_or_default())
    }

    pub fn text(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::new(status).with_header("content-type", content_type).with_body(body.into())
    }

    /// Anything a person's browser shows (help, share links, artifacts, the device page, the console),
    /// with one rule for its safety headers: never framed, never cached (a link turned off stops
    /// rendering at once), no referrer (tokens live in these URLs), no sniffing. `csp` is the page's own
    /// policy; `frame-ancestors 'none'` is added to it.
    pub fn page(status: u16, content_type: &str, csp: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::text(status, content_type, body)
            .with_header("content-security-policy", format!("{csp}; frame-ancestors 'none'"))
            .with_header("x-frame-options", "DENY")
            .with_header("x-content-type-options", "nosniff")
            .with_header("referrer-policy", "no-referrer")
            .with_header("cache-control", "no-store")
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Sets a header, replacing any value it had.
    pub fn set_header(mut self, name: &str, value: impl Into<String>) -> Self {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(k, _)| *k != name);
        self.headers.push((name, value.into()));
        self
    }

    pub fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The first header whose value the runtime would refuse to send (it refuses the whole answer then,
    /// and the client sees a bare 500): a control character other than a tab, or a character past Latin-1.
    /// What goes into a header is checked where it is made; this is the last line behind those checks.
    pub fn unsendable_header(&self) -> Option<&str> {
        let sendable = |c: char| c == '\t' || matches!(c, ' '..='~' | '\u{80}'..='\u{ff}');
        self.headers.iter().find(|(_, v)| !v.chars().all(sendable)).map(|(k, _)| k.as_str())
    }

    /// The body parsed as JSON (tests and the edge use it); `Null` when it is not JSON.
    pub fn json_body(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// The path and the query of a URL as the runtime serializes it (WHATWG: `scheme://authority/path?query`,
/// and an http(s) path is never empty), without parsing it again.
pub fn path_and_query(url: &str) -> (&str, &str) {
    let rest = url.find("://").map_or(url, |i| &url[i + 3..]);
    let target = rest.find(['/', '?', '#']).map_or("", |i| &rest[i..]);
    let target = target.split_once('#').map_or(target, |(t, _)| t);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    (if path.is_empty() { "/" } else { path }, query)
}

/// A path segment, percent-decoded (`+` is a plus here: only forms and query strings mean a space by it).
pub fn path_segment(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// The pairs of a query string or form body, decoded as browsers encode them (`+` is a space).
pub fn form_pairs(encoded: &str) -> impl Iterator<Item = (String, String)> + '_ {
    form_urlencoded::parse(encoded.as_bytes()).into_owned()
}

/// The first value of `name` in a query string or form body.
pub fn form_value(encoded: &str, name: &str) -> Option<String> {
    form_pairs(encoded).find_map(|(k, v)| (k == name).then_some(v))
}

#[cfg(test)]
mod urls {
    use super::{path_and_query, HttpResponse};

    #[test]
    fn a_header_with_a_line_break_is_found_before_the_runtime_refuses_the_answer() {
        let split = HttpResponse::new(303).with_header("location", "/console\r\nX: 1");
        assert_eq!(split.unsendable_header(), Some("location"));
        for bad in ["a\0", "a\n", "a\u{7f}", "\u{20ac}"] {
            assert_eq!(HttpResponse::new(200).with_header("x", bad).unsendable_header(), Some("x"), "{bad:?}");
        }
        let fine = HttpResponse::new(303).with_header("location", "/console").with_header("x", "caf\u{e9}\tok");
        assert_eq!(fine.unsendable_header(), None, "a tab and Latin-1 are what a header can carry");
    }

    #[test]
    fn the_path_and_query_are_read_off_the_serialized_url_as_a_full_parse_reads_them() {
        for (url, want) in [
            ("http://127.0.0.1:8787/v1/mcp", ("/v1/mcp", "")),
            ("https://a.example/v1/mcp?x=1&y=/z", ("/v1/mcp", "x=1&y=/z")),
            ("https://u:p@a.example:8443/", ("/", "")),
            ("https://a.example/p/%2F?q#frag", ("/p/%2F", "q")),
            ("https://a.example/p#f?g", ("/p", "")),
            ("https://a.example?q", ("/", "q")),
            ("http://h", ("/", "")),
        ] {
            assert_eq!(path_and_query(url), want, "{url}");
            // What a full parse of the same URL reads.
            let parsed = url::Url::parse(url).unwrap();
            assert_eq!((parsed.path(), parsed.query().unwrap_or_default()), want, "{url}");
        }
    }
}
