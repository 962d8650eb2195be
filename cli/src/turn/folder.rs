//! The turn's own folder: `work/` for the task's files, `meta/` for what the runner gives the agent.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The turn's folder: a fresh owner-only temporary folder, removed when dropped.
pub struct TurnDir {
    pub root: PathBuf,
    pub work: PathBuf,
    pub meta: PathBuf,
    pub shims: PathBuf,
    /// The variables that point the turn's shims at its granted-command channel (none without one).
    pub granted: Vec<(String, OsString)>,
    /// Removes the whole folder when the turn drops it.
    _folder: tempfile::TempDir,
}

impl TurnDir {
    pub fn create(scratch: &Path) -> std::io::Result<Self> {
        let folder = crate::files::private_temp_dir(scratch, "sky-turn-")?;
        let root = folder.path().to_owned();
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
}
