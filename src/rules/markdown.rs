//! The little Markdown the help center's articles are written in, as HTML: headings, paragraphs, lists,
//! fenced code, block quotes, tables, and inline code, bold and links. Pure.
//!
//! Every character of the source is escaped before it reaches the page, and links are kept only when they
//! point at `http(s)://`, a path on this server (`/…`) or another article (`slug`), so an article can
//! never carry script, whatever it says.

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Renders an article. `link_base` is prefixed to links naming another article by slug (`/help/`).
pub fn to_html(md: &str, link_base: &str) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |out: &mut String, paragraph: &mut Vec<&str>| {
        if !paragraph.is_empty() {
            out.push_str(&format!("<p>{}</p>\n", inline(&paragraph.join(" "), link_base)));
            paragraph.clear();
        }
    };
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        if let Some(lang) = trimmed.strip_prefix("```") {
            flush(&mut out, &mut paragraph);
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                code.push(lines[i]);
                i += 1;
            }
            let class = if lang.trim().is_empty() {
                String::new()
            } else {
                format!(" class=\"language-{}\"", escape(lang.trim()))
            };
            out.push_str(&format!("<pre><code{class}>{}</code></pre>\n", escape(&code.join("\n"))));
            i += 1;
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut out, &mut paragraph);
            i += 1;
            continue;
        }
        if let Some((level, text)) = heading(trimmed) {
            flush(&mut out, &mut paragraph);
            out.push_str(&format!("<h{level}>{}</h{level}>\n", inline(text, link_base)));
            i += 1;
            continue;
        }
        if trimmed.starts_with('|') {
            flush(&mut out, &mut paragraph);
            let start = i;
            while i < lines.len() && lines[i].trim().starts_with('|') {
                i += 1;
            }
            out.push_str(&table(&lines[start..i], link_base));
            continue;
        }
        if let Some(ordered) = list_item(trimmed).map(|(o, _)| o) {
            flush(&mut out, &mut paragraph);
            let tag = if ordered { "ol" } else { "ul" };
            out.push_str(&format!("<{tag}>\n"));
            while i < lines.len() {
                match list_item(lines[i].trim()) {
                    Some((o, text)) if o == ordered => {
                        let mut item = vec![text];
                        i += 1;
                        // Indented lines continue the item.
                        while i < lines.len()
                            && lines[i].starts_with("  ")
                            && !lines[i].trim().is_empty()
                            && list_item(lines[i].trim()).is_none()
                        {
                            item.push(lines[i].trim());
                            i += 1;
                        }
                        out.push_str(&format!("<li>{}</li>\n", inline(&item.join(" "), link_base)));
                    }
                    _ => break,
                }
            }
            out.push_str(&format!("</{tag}>\n"));
            continue;
        }
        if let Some(quote) = trimmed.strip_prefix('>') {
            flush(&mut out, &mut paragraph);
            let mut quoted = vec![quote.trim()];
            i += 1;
            while i < lines.len() {
                match lines[i].trim().strip_prefix('>') {
                    Some(q) => quoted.push(q.trim()),
                    None => break,
                }
                i += 1;
            }
            out.push_str(&format!("<blockquote><p>{}</p></blockquote>\n", inline(&quoted.join(" "), link_base)));
            continue;
        }
        paragraph.push(trimmed);
        i += 1;
    }
    flush(&mut out, &mut paragraph);
    out
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&level) {
        line[level..].strip_prefix(' ').map(|text| (level, text.trim()))
    } else {
        None
    }
}

/// `(ordered, text)` for a list item line.
fn list_item(line: &str) -> Option<(bool, &str)> {
    if let Some(text) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
        return Some((false, text));
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        return line[digits..].strip_prefix(". ").map(|text| (true, text));
    }
    None
}

fn table(rows: &[&str], link_base: &str) -> String {
    let cells = |row: &str| -> Vec<String> {
        let row = row.trim().trim_start_matches('|').trim_end_matches('|');
        row.split('|').map(|c| c.trim().to_owned()).collect()
    };
    let is_rule = |row: &str| row.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    let mut out = String::from("<table>\n");
    for (n, row) in rows.iter().enumerate() {
        if is_rule(row) {
            continue;
        }
        let tag = if n == 0 && rows.get(1).is_some_and(|r| is_rule(r)) { "th" } else { "td" };
        out.push_str("<tr>");
        for c in cells(row) {
            out.push_str(&format!("<{tag}>{}</{tag}>", inline(&c, link_base)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A link target an article may use, as written in the page; `None` for anything else (`javascript:`,
/// `data:`, protocol-relative `//host`, …).
fn safe_href(url: &str, link_base: &str) -> Option<String> {
    if url.starts_with("https://") || url.starts_with("http://") || (url.starts_with('/') && !url.starts_with("//")) {
        return Some(url.to_owned());
    }
    let is_slug =
        !url.is_empty() && url.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'#');
    is_slug.then(|| format!("{link_base}{url}"))
}

/// Inline code, bold and links; everything else escaped.
fn inline(text: &str, link_base: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next = rest.find(['`', '*', '[']);
        let Some(at) = next else {
            out.push_str(&escape(rest));
            break;
        };
        out.push_str(&escape(&rest[..at]));
        let tail = &rest[at..];
        if let Some(code) = tail.strip_prefix('`') {
            if let Some(end) = code.find('`') {
                out.push_str(&format!("<code>{}</code>", escape(&code[..end])));
                rest = &code[end + 1..];
                continue;
            }
        } else if let Some(bold) = tail.strip_prefix("**") {
            if let Some(end) = bold.find("**").filter(|&e| e > 0) {
                out.push_str(&format!("<strong>{}</strong>", inline(&bold[..end], link_base)));
                rest = &bold[end + 2..];
                continue;
            }
        } else if let Some(label_start) = tail.strip_prefix('[') {
            if let Some(close) = label_start.find("](") {
                let after = &label_start[close + 2..];
                if let Some(end) = after.find(')') {
                    let label = &label_start[..close];
                    match safe_href(after[..end].trim(), link_base) {
                        Some(href) => {
                            out.push_str(&format!("<a href=\"{}\">{}</a>", escape(&href), inline(label, link_base)))
                        }
                        None => out.push_str(&inline(label, link_base)),
                    }
                    rest = &after[end + 1..];
                    continue;
                }
            }
        }
        // A marker without its partner is just a character.
        let c = tail.chars().next().unwrap_or_default();
        out.push_str(&escape(&c.to_string()));
        rest = &tail[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_render() {
        let md = "# Title\n\nSome `code` and **bold**.\n\n- one\n- two\n\n1. first\n2. second\n\n```bash\necho <hi>\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> note";
        let html = to_html(md, "/help/");
        assert!(html.contains("<h1>Title</h1>"));
        assert!(html.contains("<p>Some <code>code</code> and <strong>bold</strong>.</p>"));
        assert!(html.contains("<ul>\n<li>one</li>\n<li>two</li>\n</ul>"));
        assert!(html.contains("<ol>\n<li>first</li>"));
        assert!(html.contains("<pre><code class=\"language-bash\">echo &lt;hi&gt;</code></pre>"));
        assert!(html.contains("<tr><th>a</th><th>b</th></tr>\n<tr><td>1</td><td>2</td></tr>"));
        assert!(html.contains("<blockquote><p>note</p></blockquote>"));
    }

    #[test]
    fn links_are_kept_only_when_safe() {
        let html = to_html(
            "[ok](https://a.example/x?y=\"z\") [art](keys-and-scopes) [bad](javascript:alert(1)) [p](//evil)",
            "/help/",
        );
        assert!(html.contains("<a href=\"https://a.example/x?y=&quot;z&quot;\">ok</a>"), "{html}");
        assert!(html.contains("<a href=\"/help/keys-and-scopes\">art</a>"));
        assert!(!html.contains("javascript") && !html.contains("//evil"), "{html}");
    }

    #[test]
    fn nothing_in_the_source_becomes_markup() {
        let html = to_html("<script>alert(1)</script> **<b>** `<i>` [<x>](/y)", "/help/");
        assert!(!html.contains("<script") && !html.contains("<b>") && !html.contains("<i>") && !html.contains("<x>"));
    }
}
