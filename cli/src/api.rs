//! Blocking HTTP to the agentsky server: JSON bodies, bearer keys, and failures turned into sentences.
//! TLS is rustls with the Mozilla roots built in, so the binary needs no OpenSSL or system store.

use crate::{Error, Result};
use serde_json::Value;
use std::time::Duration;

/// A server's answer: status and body (JSON, or `Null` when it is not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The API's error code (`{"error": {"code"}}`), if the body has one.
    pub fn error_code(&self) -> Option<&str> {
        self.body["error"]["code"].as_str()
    }

    /// A sentence for people: the API's message, or the status and a piece of the body.
    pub fn error_message(&self) -> String {
        match self.body["error"]["message"].as_str() {
            Some(m) => format!("HTTP {}: {m}", self.status),
            None => format!("HTTP {}: {}", self.status, self.text.chars().take(200).collect::<String>()),
        }
    }

    /// `Ok(body)` for a 2xx, else the error as a sentence prefixed with `what`.
    pub fn into_ok(self, what: &str) -> Result<Value> {
        if self.ok() {
            Ok(self.body)
        } else {
            Err(Error::new(format!("{what} failed ({})", self.error_message())))
        }
    }
}

/// One server.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    agent: ureq::Agent,
}

impl Api {
    /// `base` like `https://sky.example` (a trailing slash or `/v1/mcp` is trimmed off).
    pub fn new(base: &str) -> Self {
        Self::with_timeout(base, Duration::from_secs(60))
    }

    pub fn with_timeout(base: &str, timeout: Duration) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(timeout))
            .user_agent(format!("sky/{}", env!("CARGO_PKG_VERSION")))
            .build();
        Self { base: normalize_server(base), agent: config.into() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> Result<Reply> {
        let mut req = self.agent.get(self.url(path));
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        self.finish(req.call())
    }

    pub fn delete(&self, path: &str, key: Option<&str>) -> Result<Reply> {
        let mut req = self.agent.delete(self.url(path));
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        self.finish(req.call())
    }

    pub fn post_json(&self, path: &str, key: Option<&str>, body: &Value) -> Result<Reply> {
        let mut req = self.agent.post(self.url(path)).header("content-type", "application/json");
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        self.finish(req.send(body.to_string()))
    }

    pub fn put_json(&self, path: &str, key: Option<&str>, body: &Value) -> Result<Reply> {
        let mut req = self.agent.put(self.url(path)).header("content-type", "application/json");
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        self.finish(req.send(body.to_string()))
    }

    fn finish(&self, sent: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Reply> {
        let resp = sent.map_err(|e| Error::new(format!("cannot reach {}: {e}", self.base)))?;
        let status = resp.status().as_u16();
        let text = resp
            .into_body()
            .read_to_string()
            .map_err(|e| Error::new(format!("reading the answer of {} failed: {e}", self.base)))?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply { status, body, text })
    }
}

/// `https://x/` and `https://x/v1/mcp` → `https://x`: people paste either.
pub fn normalize_server(s: &str) -> String {
    let s = s.trim().trim_end_matches('/');
    let s = s.strip_suffix("/v1/mcp").unwrap_or(s);
    s.trim_end_matches('/').to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_urls_are_normalized() {
        for s in ["https://sky.example", "https://sky.example/", "https://sky.example/v1/mcp/"] {
            assert_eq!(super::normalize_server(s), "https://sky.example");
        }
    }
}
