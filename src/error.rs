//! One error type for every operation, and its two mappings: a tool result with `isError: true` over MCP,
//! an HTTP status with the same body over REST. Protocol faults (bad JSON-RPC) live in `mcp/`, not here.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;

/// Declares every error code once: its variant, its name (the contract's, letter for letter), its HTTP
/// status, and the JSON-RPC code the session server's tool errors end with.
macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $http:literal, $rpc:literal;)*) => {
        /// The API's error codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        pub enum Code {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Code {
            pub const ALL: &[Code] = &[$(Code::$variant),*];

            pub const fn http(self) -> u16 {
                match self { $(Self::$variant => $http,)* }
            }

            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }

            /// The JSON-RPC error code a session-server tool failure of this kind ends with.
            pub const fn rpc(self) -> i64 {
                match self { $(Self::$variant => $rpc,)* }
            }

            /// The code a name means.
            pub fn named(name: &str) -> Option<Code> {
                match name { $($name => Some(Self::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    InvalidParams = "invalid_params", 400, -32602;
    Unauthorized = "unauthorized", 401, -32002;
    InsufficientScope = "insufficient_scope", 403, -32002;
    Forbidden = "forbidden", 403, -32002;
    UniverseMismatch = "universe_mismatch", 403, -32002;
    NotFound = "not_found", 404, -32001;
    Conflict = "conflict", 409, -32002;
    IdempotencyConflict = "idempotency_conflict", 409, -32002;
    SessionBusy = "session_busy", 409, -32002;
    SessionTerminated = "session_terminated", 409, -32002;
    InsufficientCredits = "insufficient_credits", 402, -32002;
    PayloadTooLarge = "payload_too_large", 413, -32602;
    RateLimited = "rate_limited", 429, -32003;
    NotImplemented = "not_implemented", 501, -32002;
    Internal = "internal", 500, -32603;
    /// Device sign-in (RFC 8628 §3.5): the CLI polls until the person decides; the names are the RFC's.
    AuthorizationPending = "authorization_pending", 400, -32002;
    SlowDown = "slow_down", 400, -32002;
    ExpiredToken = "expired_token", 400, -32002;
    AccessDenied = "access_denied", 400, -32002;
}

/// A failed operation: a code from the contract and a message written for the model or person reading it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// Set for `rate_limited`: how long to wait before retrying.
    pub retry_after_ms: Option<i64>,
    /// An internal failure's cause, not yet logged: the face answering the request logs it once with the
    /// request id ([`ApiError::finish`]). Never part of [`ApiError::body`].
    cause: Option<String>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), retry_after_ms: None, cause: None }
    }

    /// `rate_limited`, with how long to wait.
    pub fn rate_limited(message: impl Into<String>, retry_after_ms: i64) -> Self {
        Self { retry_after_ms: Some(retry_after_ms), ..Self::new(Code::RateLimited, message) }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidParams, message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(Code::NotFound, format!("{what} not found"))
    }

    /// An internal failure (storage, a platform call, a reply that cannot be): `internal`, its cause kept
    /// for the face to log with the request id. Storage errors convert to this with `?`.
    pub fn cause(cause: impl fmt::Display) -> Self {
        Self { cause: Some(cause.to_string()), ..Self::new(Code::Internal, "internal error") }
    }

    /// The same error told in other words (an internal failure keeps its cause for the log).
    pub fn with_message(self, message: impl Into<String>) -> Self {
        Self { message: message.into(), ..self }
    }

    /// True for an internal failure whose cause the face has not logged yet.
    pub fn is_unfinished(&self) -> bool {
        self.cause.is_some()
    }

    /// What a face answers: an internal failure's cause goes to the log once, with the request id, and the
    /// client sees only that id. Any other error is unchanged.
    pub fn finish(mut self, request_id: &str) -> Self {
        if let Some(cause) = self.cause.take() {
            log_line(&format!("internal error {request_id}: {cause}"));
            self.message = format!("internal error; request id {request_id}");
        }
        self
    }

    /// The body both faces send: `{ "error": { "code", "message", "retry_after_ms"? } }`.
    pub fn body(&self) -> Value {
        let mut error = json!({ "code": self.code.as_str(), "message": self.message });
        if let Some(ms) = self.retry_after_ms {
            error["retry_after_ms"] = json!(ms);
        }
        json!({ "error": error })
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// Writes one line to the platform log (stderr on the host, `console.log` in the Worker), with anything
/// secret-looking redacted: causes carry what a tenant sent or a server answered.
pub fn log_line(line: &str) {
    let line = agentsky_wire::redact::redact(line);
    #[cfg(target_arch = "wasm32")]
    worker::console_log!("{line}");
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{line}");
}

/// Writes one structured log line (a JSON object). Every text in it is redacted as [`log_line`] does,
/// except `trace_id`: W3C trace ids are 32 hex digits, which the redaction rule reads as a credential,
/// and they are only ever written here after `rules::traceparent` checked their shape.
pub fn log_record(record: &serde_json::Value) {
    fn scrub(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => *s = agentsky_wire::redact::redact(s),
            serde_json::Value::Array(a) => a.iter_mut().for_each(scrub),
            serde_json::Value::Object(o) => {
                o.iter_mut().filter(|(k, _)| k.as_str() != "trace_id").for_each(|(_, v)| scrub(v));
            }
            _ => {}
        }
    }
    let mut record = record.clone();
    scrub(&mut record);
    #[cfg(target_arch = "wasm32")]
    worker::console_log!("{record}");
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{record}");
}

/// An error as REST answers it.
pub fn error_response(e: &ApiError) -> crate::http::HttpResponse {
    let resp = crate::http::HttpResponse::json(e.code.http(), &e.body());
    match e.retry_after_ms {
        Some(ms) => resp.with_header("retry-after", ((ms + 999) / 1000).to_string()),
        None => resp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_name_that_serde_and_lookups_agree_on() {
        for &code in Code::ALL {
            let name = code.as_str();
            assert_eq!(Code::named(name), Some(code));
            assert_eq!(serde_json::to_value(code).unwrap(), json!(name));
            assert_eq!(serde_json::from_value::<Code>(json!(name)).unwrap(), code);
        }
        assert_eq!(Code::named("no_such_code"), None);
        assert_eq!((Code::RateLimited.http(), Code::RateLimited.rpc()), (429, -32003));
        assert_eq!((Code::Internal.http(), Code::Internal.rpc()), (500, -32603));
    }

    #[test]
    fn an_internal_cause_is_finished_once_and_never_in_the_body() {
        let e = ApiError::cause("no such table: agent");
        assert!(e.is_unfinished());
        let done = e.finish("req_1");
        assert!(!done.is_unfinished());
        assert_eq!(done.body(), json!({"error": {"code": "internal", "message": "internal error; request id req_1"}}));
        // A second face leaves it as the first finished it.
        assert_eq!(done.clone().finish("req_2"), done);
        let plain = ApiError::invalid("bad");
        assert_eq!(plain.clone().finish("req_1"), plain);
    }
}
