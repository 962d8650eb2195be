//! Full-text rules shared by `search_context` (FTS5 in D1) and the help center (searched in memory): how
//! text is cut into terms, how a query becomes an FTS5 expression, and how a snippet is picked. Pure.
//!
//! FTS5's `unicode61` tokenizer splits on spaces and punctuation, and Chinese or Japanese has none between
//! words: a whole sentence would be one token. So before text reaches the index every run of CJK
//! characters is rewritten as its overlapping bigrams plus its last character (`会话记录` → `会话 话记 记录
//! 录`), as Lucene's CJK analyzer does. A query's CJK runs become the same bigrams and a lone character a
//! prefix query, so two-character words — the commonest in Chinese, which the `trigram` tokenizer cannot
//! find — match. Snippets are cut here from the original text: FTS5's `snippet()` would show the bigrams.
//! Hand-written: the cut must be the one D1's FTS5 indexed, and a word segmenter's dictionary runs to
//! megabytes.

/// Characters written without spaces between words: kana, CJK ideographs, Hangul syllables.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF | 0x20000..=0x2FA1F)
}

/// The text as the index should see it: CJK runs rewritten as bigrams, everything else unchanged.
pub fn index_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut run: Vec<char> = Vec::new();
    for c in text.chars() {
        if is_cjk(c) {
            run.push(c);
        } else {
            push_run(&mut out, &mut run);
            out.push(c);
        }
    }
    push_run(&mut out, &mut run);
    out
}

fn push_run(out: &mut String, run: &mut Vec<char>) {
    let Some(&last) = run.last() else { return };
    out.push(' ');
    for pair in run.windows(2) {
        out.push(pair[0]);
        out.push(pair[1]);
        out.push(' ');
    }
    out.push(last);
    out.push(' ');
    run.clear();
}

/// Words too common to help a search; dropped from queries unless nothing else is left.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in", "is", "it",
    "me", "my", "of", "on", "or", "the", "this", "that", "to", "was", "what", "when", "where", "which", "with", "you",
    "your",
];

/// One piece of text: a word (letters and digits) or a run of CJK characters.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Word(String),
    Cjk(Vec<char>),
}

fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut run = Vec::new();
    let flush = |out: &mut Vec<Piece>, word: &mut String, run: &mut Vec<char>| {
        if !word.is_empty() {
            out.push(Piece::Word(std::mem::take(word)));
        }
        if !run.is_empty() {
            out.push(Piece::Cjk(std::mem::take(run)));
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(Piece::Word(std::mem::take(&mut word)));
            }
            run.push(c);
        } else if c.is_alphanumeric() {
            if !run.is_empty() {
                out.push(Piece::Cjk(std::mem::take(&mut run)));
            }
            word.extend(c.to_lowercase());
        } else {
            flush(&mut out, &mut word, &mut run);
        }
    }
    flush(&mut out, &mut word, &mut run);
    out
}

fn bigrams(run: &[char]) -> Vec<String> {
    if run.len() == 1 {
        return vec![run[0].to_string()];
    }
    run.windows(2).map(|p| p.iter().collect()).collect()
}

/// A search query, ready for FTS5 and for picking snippets.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The FTS5 expression: every term quoted (so no input is FTS5 syntax), alternatives joined by `OR` and
    /// ranked by bm25, so a natural-language question still finds the passages sharing most of its words.
    pub fts: String,
    /// Lower-case strings whose occurrences a snippet should show, in the query's order.
    pub needles: Vec<String>,
}

/// Parses what a person or a model typed. `"double quotes"` keep a phrase together. `None` when nothing
/// searchable is left (only punctuation, say).
pub fn parse_query(query: &str) -> Option<Query> {
    let mut terms: Vec<String> = Vec::new();
    let mut needles: Vec<String> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    for (i, segment) in query.split('"').enumerate() {
        let ps = pieces(segment);
        if i % 2 == 1 && ps.len() > 1 {
            // A quoted phrase: its tokens in order. A CJK run followed by more tokens ends with its last
            // character, as the index wrote it.
            let mut tokens = Vec::new();
            for (j, p) in ps.iter().enumerate() {
                match p {
                    Piece::Word(w) => tokens.push(w.clone()),
                    Piece::Cjk(run) => {
                        tokens.extend(bigrams(run));
                        if run.len() > 1 && j + 1 < ps.len() {
                            tokens.push(run[run.len() - 1].to_string());
                        }
                    }
                }
            }
            terms.push(format!("\"{}\"", tokens.join(" ")));
            needles.push(segment.trim().to_lowercase());
            continue;
        }
        for p in ps {
            match p {
                Piece::Word(w) => words.push(w),
                Piece::Cjk(run) if run.len() == 1 => {
                    terms.push(format!("\"{}\"*", run[0]));
                    needles.push(run[0].to_string());
                }
                Piece::Cjk(run) => {
                    needles.push(run.iter().collect());
                    for b in bigrams(&run) {
                        if !terms.contains(&format!("\"{b}\"")) {
                            terms.push(format!("\"{b}\""));
                        }
                        needles.push(b);
                    }
                }
            }
        }
    }
    let meaningful: Vec<&String> = words.iter().filter(|w| !STOPWORDS.contains(&w.as_str())).collect();
    let kept: Vec<&String> =
        if meaningful.is_empty() && terms.is_empty() { words.iter().collect() } else { meaningful };
    for w in kept {
        let term = format!("\"{w}\"");
        if !terms.contains(&term) {
            terms.push(term);
            needles.push(w.clone());
        }
    }
    if terms.is_empty() {
        return None;
    }
    needles.dedup();
    Some(Query { fts: terms.join(" OR "), needles })
}

/// A word without its commonest English endings, so `deploying` and `deployed` meet `deploy`. Only for
/// the help center's in-memory index and for finding snippet positions; FTS5 runs the real Porter stemmer.
pub fn stem(word: &str) -> std::borrow::Cow<'_, str> {
    // `retries`, `retried` → `retry`, as `retrying` → `retry`.
    for suffix in ["ies", "ied"] {
        if let Some(base) = word.strip_suffix(suffix).filter(|b| b.chars().count() >= 3) {
            return format!("{base}y").into();
        }
    }
    for suffix in ["ments", "ment", "ings", "ing", "ed", "es", "ly", "s"] {
        if let Some(base) = word.strip_suffix(suffix) {
            if base.chars().count() >= 3 {
                return base.into();
            }
        }
    }
    word.into()
}

/// The terms of a text for an in-memory index: stemmed lower-case words and CJK bigrams (with each run's
/// last character), the same cut the FTS5 index makes.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for p in pieces(text) {
        match p {
            Piece::Word(w) => out.push(stem(&w).into_owned()),
            Piece::Cjk(run) => {
                let last = run[run.len() - 1].to_string();
                out.extend(bigrams(&run));
                if run.len() > 1 {
                    out.push(last);
                }
            }
        }
    }
    out
}

/// The query's terms for an in-memory index: stemmed words (stopwords dropped while something else is
/// left) and CJK bigrams, without the run's closing character the index adds (the query's run may end
/// where the text's goes on); a lone character stays, to be matched as a prefix.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut all = Vec::new();
    for p in pieces(query) {
        match p {
            Piece::Word(w) => all.push(stem(&w).into_owned()),
            Piece::Cjk(run) => all.extend(bigrams(&run)),
        }
    }
    let meaningful: Vec<String> = all.iter().filter(|t| !STOPWORDS.contains(&t.as_str())).cloned().collect();
    let mut out = if meaningful.is_empty() { all } else { meaningful };
    let mut seen = std::collections::HashSet::new();
    out.retain(|t| seen.insert(t.clone()));
    out
}

/// A window of about `width` characters of `text` showing as many different needles as it can, each
/// occurrence wrapped in `**`, whitespace folded, `…` where it was cut. The text's start when none occurs.
pub fn snippet(text: &str, needles: &[String], width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars.iter().map(|c| c.to_lowercase().next().unwrap_or(*c)).collect();
    let mut hits: Vec<(usize, usize, usize)> = Vec::new();
    for (group, needle) in needles.iter().enumerate() {
        let mut forms: Vec<Vec<char>> = vec![needle.chars().collect()];
        let stemmed = stem(needle);
        if stemmed != needle.as_str() {
            forms.push(stemmed.chars().collect());
        }
        for form in forms {
            if form.is_empty() {
                continue;
            }
            let wordlike = form.iter().all(|c| c.is_alphanumeric() && !is_cjk(*c));
            let mut at = 0;
            while at + form.len() <= lower.len() {
                let starts_word = at == 0 || !lower[at - 1].is_alphanumeric() || is_cjk(lower[at - 1]);
                if lower[at..at + form.len()] == form[..] && (!wordlike || starts_word) {
                    let mut end = at + form.len();
                    if wordlike {
                        // Show the whole word a stem or prefix matched.
                        while end < lower.len() && lower[end].is_alphanumeric() && !is_cjk(lower[end]) {
                            end += 1;
                        }
                    }
                    hits.push((at, end, group));
                    at = end;
                } else {
                    at += 1;
                }
            }
        }
    }
    // By start, the longest first, then drop hits overlapping an earlier one (a bigram inside its run).
    hits.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut kept: Vec<(usize, usize, usize)> = Vec::new();
    for h in hits {
        if kept.last().is_none_or(|k| h.0 >= k.1) {
            kept.push(h);
        }
    }
    let width = width.max(20);
    let (mut start, mut end) = (0, chars.len().min(width));
    if let Some(best) = best_window(&kept, width) {
        start = best.saturating_sub(width / 4);
        end = (start + width).min(chars.len());
        start = end.saturating_sub(width).min(start);
        // Begin and end at word boundaries where one is near.
        if start > 0 {
            if let Some(space) = (start..(start + 15).min(end)).find(|&i| chars[i].is_whitespace()) {
                start = space + 1;
            }
        }
    }
    if end < chars.len() {
        if let Some(space) = (end.saturating_sub(15).max(start)..end).rev().find(|&i| chars[i].is_whitespace()) {
            end = space;
        }
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut i = start;
    let mut last_space = false;
    let mut marks = kept.iter().filter(|h| h.0 >= start && h.1 <= end).peekable();
    while i < end {
        if let Some(&&(s, e, _)) = marks.peek() {
            if s == i {
                out.push_str("**");
                out.extend(&chars[s..e]);
                out.push_str("**");
                last_space = false;
                i = e;
                marks.next();
                continue;
            }
        }
        let c = chars[i];
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
        i += 1;
    }
    let mut out = out.trim().to_owned();
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// The start of the hit whose window of `width` characters holds the most different needles (earliest on
/// a tie).
fn best_window(hits: &[(usize, usize, usize)], width: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, h) in hits.iter().enumerate() {
        let mut groups: Vec<usize> = hits[i..].iter().take_while(|o| o.1 <= h.0 + width).map(|o| o.2).collect();
        groups.sort_unstable();
        groups.dedup();
        if best.is_none_or(|(n, _)| groups.len() > n) {
            best = Some((groups.len(), h.0));
        }
    }
    best.map(|(_, at)| at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_runs_are_indexed_as_bigrams_and_their_last_character() {
        assert_eq!(index_text("会话记录"), " 会话 话记 记录 录 ");
        assert_eq!(index_text("用Claude Code连接"), " 用 Claude Code 连接 接 ");
        assert_eq!(index_text("plain words, kept."), "plain words, kept.");
    }

    #[test]
    fn a_query_becomes_quoted_alternatives_with_stopwords_dropped() {
        let q = parse_query("How do I connect Claude Code?").unwrap();
        assert_eq!(q.fts, "\"connect\" OR \"claude\" OR \"code\"");
        assert_eq!(parse_query("the").unwrap().fts, "\"the\"");
        assert_eq!(parse_query(" ?! ").map(|q| q.fts), None);
    }

    #[test]
    fn chinese_queries_become_bigrams_and_a_lone_character_a_prefix() {
        assert_eq!(parse_query("幂等键").unwrap().fts, "\"幂等\" OR \"等键\"");
        assert_eq!(parse_query("键").unwrap().fts, "\"键\"*");
        assert_eq!(parse_query("\"会话记录 test\"").unwrap().fts, "\"会话 话记 记录 录 test\"");
    }

    #[test]
    fn no_input_escapes_its_quotes() {
        let q = parse_query("a\" OR x:* NEAR(b) -c \"").unwrap();
        assert!(q.fts.split(" OR ").all(|t| t.starts_with('"') && t.trim_end_matches('*').ends_with('"')), "{}", q.fts);
    }

    #[test]
    fn snippets_show_the_passage_with_most_needles_and_mark_them() {
        let text = format!("{} the deployment failed at night. {}", "intro ".repeat(60), "outro ".repeat(60));
        let s = snippet(&text, &["deploying".into(), "failed".into()], 80);
        assert!(s.contains("**deployment**") && s.contains("**failed**"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.chars().count() < 100, "{s}");
    }

    #[test]
    fn snippets_mark_chinese_and_fall_back_to_the_start() {
        let s = snippet("请在这里设置幂等键，然后重试。", &["幂等键".into(), "幂等".into()], 80);
        assert_eq!(s, "请在这里设置**幂等键**，然后重试。");
        assert_eq!(snippet("nothing\nmatches   here", &["zebra".into()], 80), "nothing matches here");
    }

    #[test]
    fn word_needles_match_at_word_starts_only() {
        assert_eq!(snippet("concatenate the cat", &["cat".into()], 80), "concatenate the **cat**");
    }

    #[test]
    fn in_memory_terms_match_the_index_cut() {
        assert_eq!(terms("Connecting 会话记录"), ["connect", "会话", "话记", "记录", "录"]);
        assert_eq!(query_terms("how to connect"), ["connect"]);
        assert_eq!(query_terms("余额不足"), ["余额", "额不", "不足"]);
    }
}
