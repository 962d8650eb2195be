//! Input limits kept outside typed parameters (a webhook's free JSON, a runner's events, the key cap),
//! in the words the typed ones use.

use crate::error::{ApiError, Code};
use crate::rules::params;

/// Keys an account may hold unrevoked at once, however they were minted (`POST /v1/keys`, device
/// sign-in): a leaked write key cannot mint an unbounded crowd of others.
pub const MAX_ACTIVE_KEYS: i64 = 100;

/// The refusal of a key past [`MAX_ACTIVE_KEYS`].
pub fn too_many_keys() -> ApiError {
    ApiError::new(
        Code::Conflict,
        format!(
            "this account already holds {MAX_ACTIVE_KEYS} active API keys, the most it may; revoke one you no longer \
             use (DELETE /v1/keys/{{key_id}}, see GET /v1/keys) and try again"
        ),
    )
}

/// JSON values a request body may hold (arrays, objects and their members, scalars). Far more than any
/// operation takes; what it bounds is memory: a body parsed into `serde_json::Value` costs 16 to 60 bytes
/// of wasm memory a value, and 4 MiB of `[0,0,…]` is two million of them (a peak past 100 MB, and an
/// isolate has 128 MB), while 100,000 values of any shape stay within a few megabytes.
pub const MAX_JSON_VALUES: usize = 100_000;

/// About how many JSON values `body` holds, counted without parsing it: one for each `[`, `{` and `,`
/// outside strings, and one more. Exact for arrays of scalars, one over per container otherwise; a body
/// that is not JSON is counted the same way and refused by its parser anyway.
pub fn json_values(body: &[u8]) -> usize {
    let (mut n, mut in_string, mut escaped) = (1, false, false);
    for &b in body {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' | b',' => n += 1,
                _ => {}
            }
        }
    }
    n
}

/// Refuses a body with more than [`MAX_JSON_VALUES`] values, before anything parses it.
pub fn json_body(body: &[u8]) -> Result<(), ApiError> {
    if json_values(body) <= MAX_JSON_VALUES {
        return Ok(());
    }
    Err(ApiError::new(
        Code::PayloadTooLarge,
        format!(
            "request bodies are limited to {MAX_JSON_VALUES} JSON values (array items, object members and the \
             containers themselves); this one has more. Send fewer items per call"
        ),
    ))
}

/// Checks a text's length in characters; `field` names it in the error. The rule is
/// [`params::text_problem`], the one that typed [`params::Text`] parameters keep.
pub fn text(field: &str, value: &str, min: usize, max: usize) -> Result<(), ApiError> {
    match params::text_problem(value, min, max) {
        Some(problem) => Err(ApiError::invalid(format!("`{field}` {problem}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_are_counted_outside_strings_without_parsing() {
        assert_eq!(json_values(b"[0,0,0]"), 4);
        assert_eq!(json_values(b"{\"a\":1,\"b\":[1,2]}"), 5);
        assert_eq!(json_values(br#"{"a":"[,{,\",,"}"#), 2, "brackets and commas in strings, escaped quotes too");
        assert_eq!(json_values(b""), 1);
        let many = format!("[{}0]", "0,".repeat(MAX_JSON_VALUES));
        assert!(json_body(many.as_bytes()).is_err());
        let at_most = format!("[{}0]", "0,".repeat(MAX_JSON_VALUES - 2));
        assert!(json_body(at_most.as_bytes()).is_ok());
        let one_long_string = format!("{{\"content\":\"{}\"}}", "a,[{".repeat(1_000_000));
        assert!(json_body(one_long_string.as_bytes()).is_ok(), "a long text is one value");
    }

    #[test]
    fn lengths_count_characters_not_bytes() {
        assert!(text("reason", &"é".repeat(500), 1, 500).is_ok());
        assert!(text("reason", &"é".repeat(501), 1, 500).is_err());
        assert!(text("reason", "", 1, 500).is_err());
        assert!(text("note", "", 0, 200).is_ok());
        assert!(text("note", "a\u{0}b", 0, 200).is_err());
    }
}
