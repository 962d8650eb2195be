//! A command line as the runner takes it and shows it: `--command "<line>"` run by the platform's shell,
//! and an argv quoted for people. Used by the runner's loop and by a turn's commands alike.

/// `--command "<line>"` as an argv: the platform's shell runs it.
pub fn shell_command(line: &str) -> Vec<String> {
    if cfg!(windows) {
        vec!["cmd".into(), "/d".into(), "/c".into(), line.into()]
    } else {
        vec!["sh".into(), "-c".into(), line.into()]
    }
}

/// Shows a command for people.
pub fn show_command(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shown_quoted_where_needed() {
        let argv: Vec<String> = ["sh", "-c", "echo 'hi' there", "a=b"].iter().map(|s| s.to_string()).collect();
        assert_eq!(show_command(&argv), r#"sh -c 'echo '\''hi'\'' there' a=b"#);
    }
}
