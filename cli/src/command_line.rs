//! A command line as the runner takes it: `--command "<line>"` run by the platform's shell (shown to
//! people with `agentsky_wire::argv::show`). Used by the runner's loop and by a turn's commands alike.

/// `--command "<line>"` as an argv: the platform's shell runs it.
pub fn shell_command(line: &str) -> Vec<String> {
    if cfg!(windows) {
        vec!["cmd".into(), "/d".into(), "/c".into(), line.into()]
    } else {
        vec!["sh".into(), "-c".into(), line.into()]
    }
}
