//! Paths inside a task's shared folder: relative, normalised, and unable to leave the folder (the rule
//! itself lives in the `agentsky-wire` crate, shared with the CLI), and the content type a file is served as.

use crate::error::ApiError;

/// Normalises a path given by a caller (the rule is [`agentsky_wire::paths::normalize`], shared with
/// the `sky` runner): `./a//b` → `a/b`, in NFC; what it refuses is an `invalid_params` naming why.
pub fn normalize(path: &str) -> Result<String, ApiError> {
    agentsky_wire::paths::normalize(path).map_err(|why| {
        ApiError::invalid(format!(
            "`path` {} (got {}); use a relative path like `notes/plan.md`",
            why.0,
            super::params::quoted(path)
        ))
    })
}

/// A content type for serving a file, from its extension.
pub fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default().to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "md" | "markdown" => "text/markdown; charset=utf-8",
        "json" => "application/json",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "svg" => "image/svg+xml",
        "csv" => "text/csv; charset=utf-8",
        "xml" => "application/xml",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_path_names_the_field_and_the_rule() {
        assert_eq!(normalize("./a//b").unwrap(), "a/b");
        let e = normalize("c:x/y").unwrap_err();
        assert!(e.message.starts_with("`path` must not contain `:`"), "{}", e.message);
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("index.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type("README"), "text/plain; charset=utf-8");
    }
}
