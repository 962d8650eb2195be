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
    fn lengths_count_characters_not_bytes() {
        assert!(text("reason", &"é".repeat(500), 1, 500).is_ok());
        assert!(text("reason", &"é".repeat(501), 1, 500).is_err());
        assert!(text("reason", "", 1, 500).is_err());
        assert!(text("note", "", 0, 200).is_ok());
        assert!(text("note", "a\u{0}b", 0, 200).is_err());
    }
}
