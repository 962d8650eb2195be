//! Paths inside a task's shared folder: relative, normalised, and unable to leave the folder.

use crate::error::ApiError;

pub const MAX_PATH_CHARS: usize = 512;
const MAX_DEPTH: usize = 32;

/// Normalises a path given by a caller: `./a//b` → `a/b`. A leading `task/` (the folder's own name) is
/// dropped. Absolute paths, `..`, backslashes, control characters and directories are refused.
pub fn normalize(path: &str) -> Result<String, ApiError> {
    let bad =
        |why: &str| ApiError::invalid(format!("`path` {why} (got {path:?}); use a relative path like `notes/plan.md`"));
    if path.is_empty() {
        return Err(bad("is empty"));
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(bad("is longer than 512 characters"));
    }
    let drive = path.split('/').next().is_some_and(|first| first.len() == 2 && first.ends_with(':'));
    if path.starts_with('/') || path.starts_with('~') || drive {
        return Err(bad("must be relative to the task folder"));
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return Err(bad("must not contain backslashes or control characters"));
    }
    if path.ends_with('/') {
        return Err(bad("names a folder, not a file"));
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(bad("must not contain `..`")),
            s => parts.push(s),
        }
    }
    if parts.first() == Some(&"task") && parts.len() > 1 {
        parts.remove(0);
    }
    if parts.is_empty() {
        return Err(bad("names no file"));
    }
    if parts.len() > MAX_DEPTH {
        return Err(bad("is nested too deep"));
    }
    Ok(parts.join("/"))
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
    fn paths_are_normalised_inside_the_folder() {
        assert_eq!(normalize("./a//b/c.md").unwrap(), "a/b/c.md");
        assert_eq!(normalize("task/notes.md").unwrap(), "notes.md");
        assert_eq!(normalize("task").unwrap(), "task");
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a\\b", "dir/", ".", "C:/x", "~/x", "a\u{0}b"] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        assert!(normalize("a/".repeat(40).trim_end_matches('/')).is_err());
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("index.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type("README"), "text/plain; charset=utf-8");
    }
}
