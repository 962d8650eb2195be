//! One error type for every operation, and its two mappings: a tool result with `isError: true` over MCP,
//! an HTTP status with the same body over REST. Protocol faults (bad JSON-RPC) live in `mcp/`, not here.

use serde::Serialize;
use serde_json::{json, Value};
use std::fmt;

/// The API's error codes: the contract's names, letter for letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    InvalidParams,
    Unauthorized,
    InsufficientScope,
    Forbidden,
    UniverseMismatch,
    NotFound,
    Conflict,
    IdempotencyConflict,
    SessionBusy,
    SessionTerminated,
    InsufficientCredits,
    PayloadTooLarge,
    RateLimited,
    NotImplemented,
    Internal,
    // Device sign-in (RFC 8628 §3.5): the CLI polls until the person decides; the names are the RFC's.
    AuthorizationPending,
    SlowDown,
    ExpiredToken,
    AccessDenied,
}

impl Code {
    pub const fn http(self) -> u16 {
        match self {
            Self::InvalidParams => 400,
            Self::Unauthorized => 401,
            Self::InsufficientCredits => 402,
            Self::InsufficientScope | Self::Forbidden | Self::UniverseMismatch => 403,
            Self::NotFound => 404,
            Self::Conflict | Self::IdempotencyConflict | Self::SessionBusy | Self::SessionTerminated => 409,
            Self::PayloadTooLarge => 413,
            Self::RateLimited => 429,
            Self::NotImplemented => 501,
            Self::Internal => 500,
            Self::AuthorizationPending | Self::SlowDown | Self::ExpiredToken | Self::AccessDenied => 400,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidParams => "invalid_params",
            Self::Unauthorized => "unauthorized",
            Self::InsufficientScope => "insufficient_scope",
            Self::Forbidden => "forbidden",
            Self::UniverseMismatch => "universe_mismatch",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::IdempotencyConflict => "idempotency_conflict",
            Self::SessionBusy => "session_busy",
            Self::SessionTerminated => "session_terminated",
            Self::InsufficientCredits => "insufficient_credits",
            Self::PayloadTooLarge => "payload_too_large",
            Self::RateLimited => "rate_limited",
            Self::NotImplemented => "not_implemented",
            Self::Internal => "internal",
            Self::AuthorizationPending => "authorization_pending",
            Self::SlowDown => "slow_down",
            Self::ExpiredToken => "expired_token",
            Self::AccessDenied => "access_denied",
        }
    }
}

/// A failed operation: a code from the contract and a message written for the model or person reading it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// Set for `rate_limited`: how long to wait before retrying.
    pub retry_after_ms: Option<i64>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), retry_after_ms: None }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidParams, message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(Code::NotFound, format!("{what} not found"))
    }

    /// An internal failure: the client sees only the request id; the cause goes to the log.
    pub fn internal(request_id: &str, cause: impl fmt::Display) -> Self {
        log_line(&format!("internal error {request_id}: {cause}"));
        Self::new(Code::Internal, format!("internal error; request id {request_id}"))
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
    let line = crate::rules::redact::redact(line);
    #[cfg(target_arch = "wasm32")]
    worker::console_log!("{line}");
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{line}");
}

/// An error as REST answers it.
pub fn error_response(e: &ApiError) -> crate::http::HttpResponse {
    let resp = crate::http::HttpResponse::json(e.code.http(), &e.body());
    match e.retry_after_ms {
        Some(ms) => resp.with_header("retry-after", ((ms + 999) / 1000).to_string()),
        None => resp,
    }
}
