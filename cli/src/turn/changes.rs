//! What the command changed in the turn's folder, against what was downloaded: the files to upload,
//! the ones skipped (with why) and the ones deleted.

use std::collections::{BTreeMap, BTreeSet};
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

/// What a turn compares `work/` against: the task files as downloaded (moved on by `sync` jobs), which
/// of them the runner really put on disk, and the company skills it installed beside them. Only files on
/// disk can have been deleted by the agent, and skills are never task files to delete.
#[derive(Debug, Default)]
pub struct Baseline {
    files: BTreeMap<String, String>,
    on_disk: BTreeSet<String>,
    skills: BTreeSet<String>,
}

impl Baseline {
    /// A task file the runner wrote into (or read from) `work/`.
    pub fn wrote(&mut self, path: &str, content: String) {
        self.skills.remove(path);
        self.on_disk.insert(path.to_owned());
        self.files.insert(path.to_owned(), content);
    }

    /// A task file that could not be written: compared against, never deleted.
    pub fn not_written(&mut self, path: &str, content: String) {
        self.on_disk.remove(path);
        self.files.insert(path.to_owned(), content);
    }

    /// A company skill file installed for the turn: not uploaded unless changed, never deleted or removed.
    pub fn skill(&mut self, path: &str, content: String) {
        self.skills.insert(path.to_owned());
        self.files.insert(path.to_owned(), content);
    }

    pub fn forget(&mut self, path: &str) {
        self.files.remove(path);
        self.on_disk.remove(path);
        self.skills.remove(path);
    }

    pub fn get(&self, path: &str) -> Option<&String> {
        self.files.get(path)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The task files (not skills) compared against.
    pub fn task_paths(&self) -> impl Iterator<Item = &String> {
        self.files.keys().filter(|p| !self.skills.contains(*p))
    }

    /// The files the agent may have deleted: on disk, not a skill, not under a folder the scan skips, and
    /// not sharing a case-folded spelling with another file (on a case-insensitive disk the two are one
    /// file, and the one scanned hides the other).
    fn deletable(&self) -> impl Iterator<Item = &String> {
        let mut folded: BTreeMap<String, usize> = BTreeMap::new();
        for p in self.files.keys() {
            *folded.entry(p.to_lowercase()).or_default() += 1;
        }
        self.on_disk.iter().filter(move |p| {
            !self.skills.contains(*p)
                && !p.split('/').any(|part| SKIPPED_DIRS.contains(&part))
                && folded.get(&p.to_lowercase()) == Some(&1)
        })
    }
}

impl FromIterator<(String, String)> for Baseline {
    /// Files all on disk (for tests and callers that wrote them all).
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut b = Baseline::default();
        for (path, content) in iter {
            b.wrote(&path, content);
        }
        b
    }
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

/// Compares `work` with `downloaded`.
pub fn changes(work: &Path, downloaded: &Baseline) -> Changes {
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
    // A path the scan saw but did not read (a symlink, a file too big) is there, so not deleted.
    c.deleted = downloaded.deletable().filter(|p| !found.contains_key(*p)).cloned().collect();
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
            found.insert(rel, None);
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
        let downloaded: Baseline = [("same.md", "same"), ("src/changed.rs", "old"), ("gone.md", "x")]
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
        let c = changes(&dir, &Baseline::default());
        let paths: Vec<&str> = c.upload.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["caf\u{e9}.md"]);
        let skipped = c.skipped.join(", ");
        assert!(skipped.contains("invisible characters") && skipped.contains("device name"), "{skipped}");
    }

    #[test]
    fn only_files_on_disk_that_the_scan_reads_can_be_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        std::fs::create_dir_all(dir.join("node_modules")).unwrap();
        std::fs::write(dir.join("node_modules/x.js"), "x").unwrap();
        std::fs::write(dir.join("target.md"), "t").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("target.md", dir.join("link.md")).unwrap();
        let mut b: Baseline = [("node_modules/x.js", "x"), ("target.md", "t"), ("link.md", "t"), ("gone.md", "g")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        b.not_written("failed.md", "never written".into());
        b.skill(".claude/skills/notes/SKILL.md", "s".into());
        // Case aliases: on a case-insensitive disk only one of them is scanned.
        b.wrote("README.md", "a".into());
        b.wrote("Readme.md", "b".into());
        std::fs::write(dir.join("README.md"), "a").unwrap();
        let c = changes(&dir, &b);
        #[cfg(unix)]
        assert_eq!(c.deleted, ["gone.md"]);
        assert!(c.upload.iter().all(|(p, _)| p != "failed.md"), "{:?}", c.upload);
    }
}
