//! A task file's path: relative, inside the task folder, one spelling per file, and creatable on every
//! system a runner may use (Linux, macOS, Windows). The server refuses what this refuses when a file is
//! written; a runner refuses it when a file arrives and skips (with the reason) what it cannot upload.

pub const MAX_PATH_CHARS: usize = 512;
pub const MAX_DEPTH: usize = 32;

/// `path` in Unicode normalization form C. The Worker asks the runtime (`String.prototype.normalize`, the
/// ICU tables V8 carries; bundling them was 60 KB of its gzipped wasm); `sky` and the host tests use the
/// unicode-normalization crate.
#[cfg(target_arch = "wasm32")]
fn nfc(path: &str) -> String {
    js_sys::JsString::from(path).normalize("NFC").into()
}

#[cfg(not(target_arch = "wasm32"))]
fn nfc(path: &str) -> String {
    use unicode_normalization::{is_nfc, UnicodeNormalization};
    if is_nfc(path) {
        path.to_owned()
    } else {
        path.nfc().collect()
    }
}

/// Why a path was refused, in words that finish "`path` …".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub &'static str);

/// Characters that change how a name reads without being seen: bidirectional overrides and isolates
/// (the "Trojan Source" trick: `invoice<U+202E>fdp.exe`), zero-width characters and the byte-order mark, and
/// other invisible format characters. Two names that look alike must not be two files.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}')
}

/// Names Windows gives to devices, whatever their extension (`nul.txt` is the device too).
pub fn windows_device(segment: &str) -> bool {
    let stem = segment.split('.').next().unwrap_or_default().trim_end().to_ascii_uppercase();
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit()
            && stem.as_bytes()[3] != b'0')
}

/// Normalises a path: `./a//b` → `a/b`, in Unicode NFC; a leading `task/` (the folder's own name) is
/// dropped. Refused: absolute and home paths, drive letters and `:` anywhere (`c:x/y`, `a:stream`),
/// `..`, backslashes, control and invisible characters, names ending in `.` or a space (Windows drops
/// them, making two names one file), Windows device names, folders, and paths too long or too deep.
pub fn normalize(path: &str) -> Result<String, Refused> {
    if path.is_empty() {
        return Err(Refused("is empty"));
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(Refused("is longer than 512 characters"));
    }
    if path.starts_with('/') || path.starts_with('~') {
        return Err(Refused("must be relative to the task folder"));
    }
    if path.contains(':') {
        return Err(Refused("must not contain `:` (a drive letter or a Windows stream name)"));
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return Err(Refused("must not contain backslashes or control characters"));
    }
    if path.chars().any(invisible) {
        return Err(Refused("must not contain invisible characters (bidirectional or zero-width controls)"));
    }
    if path.ends_with('/') {
        return Err(Refused("names a folder, not a file"));
    }
    let nfc = nfc(path);
    let mut parts: Vec<&str> = Vec::new();
    for seg in nfc.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(Refused("must not contain `..`")),
            s if s.ends_with('.') || s.ends_with(' ') => {
                return Err(Refused("must not have a name ending in `.` or a space"))
            }
            s if windows_device(s) => return Err(Refused("must not use a Windows device name (con, nul, com1, …)")),
            s => parts.push(s),
        }
    }
    if parts.first() == Some(&"task") && parts.len() > 1 {
        parts.remove(0);
    }
    if parts.is_empty() {
        return Err(Refused("names no file"));
    }
    if parts.len() > MAX_DEPTH {
        return Err(Refused("is nested too deep"));
    }
    Ok(parts.join("/"))
}

/// Whether `path` is already in the form [`normalize`] gives: what a runner accepts from the server.
pub fn is_normal(path: &str) -> bool {
    normalize(path).is_ok_and(|n| n == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_inside_the_folder() {
        assert_eq!(normalize("./a//b/c.md").unwrap(), "a/b/c.md");
        assert_eq!(normalize("task/notes.md").unwrap(), "notes.md");
        assert_eq!(normalize("task").unwrap(), "task");
        assert_eq!(normalize("docs/plan v2.md").unwrap(), "docs/plan v2.md");
        assert_eq!(normalize("notes/computer.md").unwrap(), "notes/computer.md", "com + letters is a name");
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a\\b", "dir/", ".", "C:/x", "~/x", "a\u{0}b"] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        assert!(normalize(&"a/".repeat(40)[..79]).is_err());
    }

    #[test]
    fn windows_drive_relative_stream_and_device_names_are_refused() {
        for bad in ["c:x/y", "C:x", "a/b:c", "file.txt:stream", "nul", "docs/NUL.txt", "com1.md", "lpt9", "aux "] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        for bad in ["a./b", "name.", "x/y ", "trailing. /z"] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        assert!(normalize("com0.md").is_ok() && normalize("console.log").is_ok());
    }

    #[test]
    fn bidi_and_zero_width_controls_are_refused() {
        for bad in
            ["invoice\u{202E}fdp.md", "a\u{200B}b.md", "\u{FEFF}x.md", "x\u{2066}y", "a\u{200D}.md", "s\u{00AD}t"]
        {
            assert_eq!(
                normalize(bad),
                Err(Refused("must not contain invisible characters (bidirectional or zero-width controls)")),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn one_name_is_one_file_in_nfc() {
        let decomposed = "cafe\u{0301}/re\u{0301}sume\u{0301}.md"; // as macOS file systems spell it
        let composed = "caf\u{e9}/r\u{e9}sum\u{e9}.md";
        assert_eq!(normalize(decomposed).unwrap(), composed);
        assert_eq!(normalize(composed).unwrap(), composed);
        assert!(is_normal(composed) && !is_normal(decomposed) && !is_normal("./a"));
    }
}
