//! How a command's words are shown to people, the same on the server (a granted command in a request)
//! and in `sky` (the command a runner runs): each word quoted for a POSIX shell where it needs it.

/// An argv as one line a person can read and a POSIX shell reads back to the same words.
pub fn show(argv: &[String]) -> String {
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
    fn words_are_quoted_where_a_shell_needs_it() {
        let argv: Vec<String> = ["sh", "-c", "echo 'hi' there", "a=b", ""].iter().map(|s| s.to_string()).collect();
        assert_eq!(show(&argv), r#"sh -c 'echo '\''hi'\'' there' a=b ''"#);
    }
}
