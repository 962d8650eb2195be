//! The turn's own folder: `work/` for the task's files, `meta/` for what the runner gives the agent.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The turn's folder; removed when dropped.
pub struct TurnDir {
    pub root: PathBuf,
    pub work: PathBuf,
    pub meta: PathBuf,
    pub shims: PathBuf,
    /// The variables that point the turn's shims at its granted-command channel (none without one).
    pub granted: Vec<(String, OsString)>,
}

impl TurnDir {
    pub fn create(scratch: &Path) -> std::io::Result<Self> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let stamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let root = scratch.join(format!("sky-turn-{}-{stamp}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (work, meta) = (root.join("work"), root.join("meta"));
        let shims = meta.join("bin");
        for d in [&root, &work, &meta, &shims] {
            crate::files::create_private_dir(d)?;
        }
        Ok(Self { root, work, meta, shims, granted: vec![] })
    }
}

impl Drop for TurnDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
