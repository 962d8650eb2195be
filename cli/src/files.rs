//! Planned file changes: each is computed in full before anything is written, so `--dry-run` can print
//! exactly what a real run would write, and a refusal (a malformed file) leaves every file untouched.
//! Writes go to a temporary file beside the target and are renamed over it, so an interrupted run never
//! leaves half a config behind; a symlinked config is written through to its target.

use std::io::Write;
use std::path::{Path, PathBuf};

/// One file's change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: PathBuf,
    /// What the change is, for people: `mcpServers.agentsky added`.
    pub what: String,
    /// The file's text now; `None` when it does not exist.
    pub before: Option<String>,
    pub after: String,
    /// Holds a secret: created 0600 (an existing file keeps its permissions).
    pub private: bool,
}

impl Change {
    pub fn is_noop(&self) -> bool {
        self.before.as_deref() == Some(self.after.as_str())
    }

    /// Writes the change (nothing when it changes nothing).
    pub fn apply(&self) -> std::io::Result<()> {
        if self.is_noop() {
            return Ok(());
        }
        write_atomic(&self.path, &self.after, if self.private { 0o600 } else { 0o644 })
    }
}

/// A diff of two texts for people: the lines between the common head and tail, with two lines of
/// context, `-` for removed and `+` for added. Exact for the one-region edits sky makes, and cheap on a
/// large `~/.claude.json`.
pub fn diff(before: &str, after: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let context = 2;
    let start = head.saturating_sub(context);
    let mut out = format!("@@ line {} @@\n", start + 1);
    for line in &a[start..head] {
        out.push_str(&format!("   {line}\n"));
    }
    for line in &a[head..a.len() - tail] {
        out.push_str(&format!(" - {line}\n"));
    }
    for line in &b[head..b.len() - tail] {
        out.push_str(&format!(" + {line}\n"));
    }
    for line in a[a.len() - tail..].iter().take(context) {
        out.push_str(&format!("   {line}\n"));
    }
    out
}

/// Every line of a new file, as `+` lines.
pub fn listing(text: &str) -> String {
    text.lines().map(|l| format!(" + {l}\n")).collect()
}

/// Writes `text` to `path` atomically. An existing file keeps its permissions; a new one gets `mode`
/// (on Unix). A symlink is followed, so a dotfiles manager's link stays a link.
pub fn write_atomic(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_owned(),
    };
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let existing = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // A hidden temporary file beside the target (so the rename stays on one file system), removed if
    // anything fails before it replaces the target.
    let prefix = format!(".{name}.sky-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(mode));
    #[cfg(not(unix))]
    let _ = mode;
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    if let Some(perms) = existing {
        tmp.as_file().set_permissions(perms)?;
    }
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Writes a secret-bearing file: 0600, in a folder created 0700, and an existing file is narrowed to
/// 0600 too.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    write_atomic(path, text, 0o600)?;
    set_mode(path, 0o600)
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> std::io::Result<()> {
    Ok(())
}

/// A new owner-only (0700 on Unix) folder under `parent` whose name starts with `prefix` and nobody else
/// has; removed with everything in it when the value is dropped.
pub fn private_temp_dir(parent: &Path, prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    builder.tempdir_in(parent)
}

/// Creates `dir` (and any missing parents) owner-only (0700); an existing folder is left as it is.
#[cfg(unix)]
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates `dir` (and any missing parents).
#[cfg(not(unix))]
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_shows_only_the_changed_region_with_context() {
        let before = "a\nb\nc\nd\ne\nf\n";
        let after = "a\nb\nc\nX\nY\ne\nf\n";
        assert_eq!(diff(before, after), "@@ line 2 @@\n   b\n   c\n - d\n + X\n + Y\n   e\n   f\n");
        assert_eq!(diff("", "new\n"), "@@ line 1 @@\n + new\n");
    }

    #[test]
    fn an_atomic_write_keeps_the_files_permissions_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.json");
        write_atomic(&path, "{}", 0o600).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        write_atomic(&path, "{\"a\": 1}", 0o600).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 1}");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["config.json"]);
    }
}
