//! Short titles: what lists show of a long text, such as a hand-off's brief.

/// Longest short title, in characters (an ellipsis included).
pub const MAX_CHARS: usize = 60;

/// The first non-blank line of `text`, whitespace collapsed, cut at a word boundary to at most
/// [`MAX_CHARS`] characters with `…` when cut (mid-word only when one word is longer than that).
pub fn short(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let words: Vec<&str> = line.split_whitespace().collect();
    let whole = words.join(" ");
    if whole.chars().count() <= MAX_CHARS {
        return whole;
    }
    let room = MAX_CHARS - 1;
    let mut out = String::new();
    for w in words {
        let sep = usize::from(!out.is_empty());
        if out.chars().count() + sep + w.chars().count() > room {
            break;
        }
        if sep == 1 {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.is_empty() {
        out = whole.chars().take(room).collect();
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_line_is_kept_whole() {
        assert_eq!(short("Fix the login page"), "Fix the login page");
        assert_eq!(short("\n\n  Fix   the login\npage\nmore"), "Fix the login");
        assert_eq!(short(""), "");
    }

    #[test]
    fn a_long_line_is_cut_at_a_word_boundary() {
        let text = "Please review the pull request that changes the billing module and then write a summary";
        let t = short(text);
        assert_eq!(t, "Please review the pull request that changes the billing…");
        assert!(t.chars().count() <= MAX_CHARS);
        assert!(text.starts_with(t.trim_end_matches('…')));
    }

    #[test]
    fn one_long_word_is_cut_inside_it() {
        let t = short(&"x".repeat(200));
        assert_eq!(t.chars().count(), MAX_CHARS);
        assert!(t.ends_with('…'));
        assert_eq!(short(&"é".repeat(61)).chars().count(), MAX_CHARS, "characters, not bytes");
    }
}
