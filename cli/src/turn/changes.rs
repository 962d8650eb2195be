//! What the command changed in the turn's folder, against what was downloaded: the files to upload,
//! the ones skipped (with why) and the ones deleted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most files one turn uploads.
pub const MAX_UPLOADS: usize = 500;
/// Task files are text up to this size.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Folders never uploaded.
pub const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", ".venv", "__pycache__"];

/// A relative path from the server that is safe to create under the working folder: only what the
/// server's own rule gives out ([`agentsky_wire::paths`]), so a compromised or buggy server cannot make a
/// runner write outside the folder or create a name Windows or macOS would read differently.
pub fn safe_relative(path: &str) -> Option<PathBuf> {
    agentsky_wire::paths::is_normal(path).then(|| path.split('/').collect())
}

/// What the command left in the folder, against what was downloaded.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    /// New or changed text files: `(path, content)`, in path order.
    pub upload: Vec<(String, String)>,
    /// What is not uploaded, with why: `big.log (not text)`.
    pub skipped: Vec<String>,
    /// Downloaded files the command deleted (they stay in the task folder).
    pub deleted: Vec<String>,
}

/// Compares `work` with `downloaded` (path → content).
pub fn changes(work: &Path, downloaded: &BTreeMap<String, String>) -> Changes {
    let mut found: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut skipped = Vec::new();
    scan(work, "", &mut found, &mut skipped);
    let mut c = Changes { skipped, ..Changes::default() };
    for (path, content) in &found {
        let Some(content) = content else { continue };
        if downloaded.get(path) != Some(content) {
            if c.upload.len() >= MAX_UPLOADS {
                c.skipped.push(format!("{path} (more than {MAX_UPLOADS} changed files)"));
            } else {
                c.upload.push((path.clone(), content.clone()));
            }
        }
    }
    c.deleted = downloaded.keys().filter(|p| !found.contains_key(*p)).cloned().collect();
    c
}

/// Every file under `dir`: its text, or `None` (and a note in `skipped`) when it cannot be uploaded.
fn scan(dir: &Path, prefix: &str, found: &mut BTreeMap<String, Option<String>>, skipped: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
        // A file is uploaded under the name the server would give it (NFC, as macOS spells it NFD); a
        // name the server refuses is skipped with the reason.
        let rel = match (meta.is_file(), agentsky_wire::paths::normalize(&rel)) {
            (true, Err(why)) => {
                skipped.push(format!("{rel} (its path {})", why.0));
                continue;
            }
            (true, Ok(normal)) => normal,
            (false, _) => rel,
        };
        if meta.file_type().is_symlink() {
            skipped.push(format!("{rel} (a symlink)"));
        } else if meta.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_str()) {
                scan(&e.path(), &rel, found, skipped);
            }
        } else if meta.is_file() {
            if meta.len() > MAX_FILE_BYTES {
                skipped.push(format!("{rel} ({} KiB; task files hold up to 256 KiB)", meta.len().div_ceil(1024)));
                found.insert(rel, None);
                continue;
            }
            match std::fs::read(e.path()).map(String::from_utf8) {
                Ok(Ok(text)) => {
                    found.insert(rel, Some(text));
                }
                Ok(Err(_)) => {
                    skipped.push(format!("{rel} (not UTF-8 text)"));
                    found.insert(rel, None);
                }
                Err(err) => {
                    skipped.push(format!("{rel} (unreadable: {err})"));
                    found.insert(rel, None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_relative_paths_are_created() {
        assert_eq!(safe_relative("notes/plan.md"), Some(PathBuf::from("notes").join("plan.md")));
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a\\b", "a//b", "./a", "C:/x", "a\0b", "dir/", "c:x/y"] {
            assert_eq!(safe_relative(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn changed_new_skipped_and_deleted_files_are_told_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::create_dir_all(dir.join("node_modules/x")).unwrap();
        std::fs::write(dir.join("same.md"), "same").unwrap();
        std::fs::write(dir.join("src/changed.rs"), "new text").unwrap();
        std::fs::write(dir.join("added.txt"), "added").unwrap();
        std::fs::write(dir.join("binary.bin"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(dir.join(".git/HEAD"), "ref").unwrap();
        std::fs::write(dir.join("node_modules/x/index.js"), "x").unwrap();
        std::fs::write(dir.join("big.log"), "z".repeat(MAX_FILE_BYTES as usize + 1)).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("same.md", dir.join("link.md")).unwrap();
        let downloaded: BTreeMap<String, String> = [("same.md", "same"), ("src/changed.rs", "old"), ("gone.md", "x")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let c = changes(&dir, &downloaded);
        let paths: Vec<&str> = c.upload.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["added.txt", "src/changed.rs"]);
        assert_eq!(c.deleted, ["gone.md"]);
        let skipped = c.skipped.join(", ");
        assert!(skipped.contains("binary.bin (not UTF-8 text)") && skipped.contains("big.log (257 KiB"), "{skipped}");
        #[cfg(unix)]
        assert!(skipped.contains("link.md (a symlink)"), "{skipped}");
        assert!(!skipped.contains(".git") && !skipped.contains("node_modules"), "{skipped}");
    }

    #[test]
    fn files_go_up_under_the_servers_spelling_and_unsafe_names_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cafe\u{0301}.md"), "nfd").unwrap(); // as macOS spells it
        std::fs::write(dir.join("invoice\u{202E}dm.txt"), "bidi").unwrap();
        std::fs::write(dir.join("nul.txt"), "device").unwrap();
        let c = changes(&dir, &BTreeMap::new());
        let paths: Vec<&str> = c.upload.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["caf\u{e9}.md"]);
        let skipped = c.skipped.join(", ");
        assert!(skipped.contains("invisible characters") && skipped.contains("device name"), "{skipped}");
    }
}
