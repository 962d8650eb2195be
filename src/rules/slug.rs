//! Workspace slugs and agent handles: short, lower-case, URL-safe names people type.

use crate::error::ApiError;

/// Turns a display name into a slug: lower-case ASCII letters and digits joined by single dashes, at most
/// 40 characters, starting with a letter ("Ada Lovelace" → "ada-lovelace"). Never empty.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    let out = out.trim_matches('-').to_owned();
    match out.chars().next() {
        Some(c) if c.is_ascii_lowercase() => out,
        Some(_) => format!("w-{out}").chars().take(40).collect(),
        None => "workspace".to_owned(),
    }
}

/// The slug to try for a new personal workspace: `base` first, then (when that was taken) `base` cut to 33
/// characters with a short random suffix. The unique index decides, not a prior read.
pub fn attempt(base: &str, attempt: u32) -> String {
    if attempt == 0 {
        base.to_owned()
    } else {
        format!("{}-{}", base.chars().take(33).collect::<String>(), &crate::rules::ids::new_id("x")[2..8])
    }
}

/// Checks a slug or handle given by a caller; `field` names it in the error.
pub fn validate(field: &str, s: &str) -> Result<(), ApiError> {
    let ok = (2..=40).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.contains("--");
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "`{field}` must be 2–40 characters of lower-case letters, digits and single dashes, starting with a letter (got {})",
            super::params::quoted(s)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_readable_slugs() {
        assert_eq!(slugify("Ada Lovelace"), "ada-lovelace");
        assert_eq!(slugify("  Déjà   Vu!! "), "d-j-vu");
        assert_eq!(slugify("42 Labs"), "w-42-labs");
        assert_eq!(slugify("???"), "workspace");
        assert!(slugify(&"x".repeat(100)).len() <= 40);
    }

    #[test]
    fn slugs_given_by_callers_are_checked() {
        assert!(validate("slug", "acme-2").is_ok());
        for bad in ["A", "acme_", "-acme", "acme-", "ac--me", "1acme", "a"] {
            assert!(validate("slug", bad).is_err(), "{bad}");
        }
    }
}
