//! Input limits, checked in one place so every face refuses the same input with the same words.

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

/// Checks a count of items.
pub fn count(field: &str, n: usize, max: usize) -> Result<(), ApiError> {
    if n > max {
        return Err(ApiError::invalid(format!("`{field}` may hold at most {max} items (got {n})")));
    }
    Ok(())
}

/// Checks that a value is one of the allowed words.
pub fn one_of(field: &str, value: &str, allowed: &[&str]) -> Result<(), ApiError> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(ApiError::invalid(format!("`{field}` must be one of {} (got {value:?})", allowed.join(", "))))
    }
}

/// Checks an email address given outside a typed parameter (a form): [`params::Email`]'s rule.
pub fn email(field: &str, value: &str) -> Result<(), ApiError> {
    params::Email::try_from(value.to_owned())
        .map(drop)
        .map_err(|problem| ApiError::invalid(format!("`{field}` {problem}")))
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

    #[test]
    fn emails_need_a_local_part_and_a_domain() {
        assert!(email("email", "ada@example.com").is_ok());
        for bad in ["ada", "@example.com", "ada@", "ada@example", "a da@example.com", "a@b@c.com"] {
            assert!(email("email", bad).is_err(), "{bad}");
        }
    }
}
