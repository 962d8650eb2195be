//! Where a browser may be sent from what a request said: the console's `next` and `back`, an OAuth
//! client's redirect URI. A target goes into a `Location` header, which cannot carry a line break (the
//! runtime refuses the whole answer, after the action already ran), so every target is held to this rule
//! before anything is done, and a bad one is a 400 that names the field. Never decides *which* paths a
//! face follows (the console's own pages, an OAuth client's registered URIs): only what any of them must be.

/// The longest target followed, in characters: room for an MCP client's whole authorization request
/// (its `state` may be a long token), which the sign-in returns to.
pub const MAX_TARGET_CHARS: usize = 8_000;

/// Why `raw` cannot go into a `Location` header as it is; `None` when it can. A control character (a CR
/// or LF would end the header) is named as such; anything else outside printable ASCII is refused too,
/// since a browser's own paths and URLs are percent-encoded and a header cannot carry most of Unicode.
pub fn unsendable(raw: &str) -> Option<&'static str> {
    if raw.chars().any(|c| c < ' ' || c == '\x7f') {
        Some("must not contain control characters (such as a line break)")
    } else if raw.chars().any(|c| !c.is_ascii_graphic()) {
        Some("must be printable ASCII without spaces (percent-encode anything else)")
    } else {
        None
    }
}

/// `raw` as a redirect to a path of this site: a single leading `/` (`//host` and `/\host` lead to
/// another site), no backslash, sendable, at most [`MAX_TARGET_CHARS`]. The refusal names `field`.
pub fn local_path<'a>(field: &str, raw: &'a str) -> Result<&'a str, String> {
    let n = raw.chars().count();
    let why = if n > MAX_TARGET_CHARS {
        format!("must be at most {MAX_TARGET_CHARS} characters (got {n})")
    } else if let Some(why) = unsendable(raw) {
        why.to_owned()
    } else if !raw.starts_with('/') || raw.starts_with("//") || raw.contains('\\') {
        "must be a path on this site, starting with a single `/`".to_owned()
    } else {
        return Ok(raw);
    };
    Err(format!("`{field}` {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_target_is_a_printable_path_of_this_site() {
        for good in ["/console", "/console/w/ada/board?x=%0d%0a&y=1", "/oauth/authorize?client_id=a"] {
            assert_eq!(local_path("next", good), Ok(good));
        }
        for (bad, why) in [
            ("/console\r\nX: 1", "control characters"),
            ("/console\n", "control characters"),
            ("/console\t", "control characters"),
            ("/console\0", "control characters"),
            ("/console\u{7f}", "control characters"),
            ("/console/\u{85}", "printable ASCII"),
            ("/console/\u{20ac}", "printable ASCII"),
            ("/console/a b", "printable ASCII"),
            ("//evil.example", "a path on this site"),
            ("/\\evil.example", "a path on this site"),
            ("/console\\@evil", "a path on this site"),
            ("https://evil.example/", "a path on this site"),
            ("console", "a path on this site"),
            ("", "a path on this site"),
        ] {
            let e = local_path("next", bad).unwrap_err();
            assert!(e.starts_with("`next` ") && e.contains(why), "{bad:?}: {e}");
        }
        let long = format!("/{}", "a".repeat(MAX_TARGET_CHARS));
        assert!(local_path("back", &long).unwrap_err().contains("at most 8000 characters"));
    }
}
