//! The turn's own folder: `work/` for the task's files, `meta/` for what the runner gives the agent.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The turn's folder: owner-only, removed when dropped.
pub struct TurnDir {
    pub root: PathBuf,
    pub work: PathBuf,
    pub meta: PathBuf,
    pub shims: PathBuf,
    /// The variables that point the turn's shims at its granted-command channel (none without one).
    pub granted: Vec<(String, OsString)>,
    /// Removes the whole folder when the turn drops it.
    _folder: Owned,
}

enum Owned {
    Temp(#[allow(dead_code)] tempfile::TempDir),
    Named(PathBuf),
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Owned::Named(p) = self {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

impl TurnDir {
    /// A fresh temporary folder of a random name.
    pub fn create(scratch: &Path) -> std::io::Result<Self> {
        let folder = crate::files::private_temp_dir(scratch, "sky-turn-")?;
        let root = folder.path().to_owned();
        Self::within(root, Owned::Temp(folder))
    }

    /// The folder `name` in `parent`, which must be the runner's own owner-only folder: the same path for
    /// every turn of one session here, since a coding agent CLI keys its saved conversations by the
    /// working folder. What a turn before left there is removed first.
    pub fn create_named(parent: &Path, name: &str) -> std::io::Result<Self> {
        let root = parent.join(name);
        if root.exists() {
            std::fs::remove_dir_all(&root)?;
        }
        crate::files::create_private_dir(&root)?;
        Self::within(root.clone(), Owned::Named(root))
    }

    fn within(root: PathBuf, folder: Owned) -> std::io::Result<Self> {
        let (work, meta) = (root.join("work"), root.join("meta"));
        let shims = meta.join("bin");
        for d in [&work, &meta, &shims] {
            crate::files::create_private_dir(d)?;
        }
        Ok(Self { root, work, meta, shims, granted: vec![], _folder: folder })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_owner_only_and_gone_when_dropped() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = TurnDir::create(scratch.path()).unwrap();
        assert!(dir.work.is_dir() && dir.shims.is_dir());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dir.root).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let root = dir.root.clone();
        drop(dir);
        assert!(!root.exists());
    }

    #[test]
    fn a_named_folder_is_the_same_path_each_time_starts_empty_and_goes_when_dropped() {
        let scratch = tempfile::tempdir().unwrap();
        let first = TurnDir::create_named(scratch.path(), "turn-ses_1").unwrap();
        std::fs::write(first.work.join("left.txt"), "x").unwrap();
        let root = first.root.clone();
        std::mem::forget(first); // a runner that died mid-turn leaves its folder
        let again = TurnDir::create_named(scratch.path(), "turn-ses_1").unwrap();
        assert_eq!(again.root, root);
        assert!(!again.work.join("left.txt").exists());
        drop(again);
        assert!(!root.exists());
    }
}
