//! A help article's Markdown as HTML, rendered once at build time (`build.rs`) with pulldown-cmark.
//!
//! Events are filtered so an article can never carry script, whatever it says: raw HTML (block or
//! inline) becomes escaped text, links are kept only when they point at `http(s)://`, a path on this
//! server (`/…`) or another article (`slug` → `/help/slug`), and images become their alt text.

use pulldown_cmark::{html, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Where a link naming another article by slug leads.
const ARTICLE_BASE: &str = "/help/";

/// Renders an article.
pub fn to_html(md: &str) -> String {
    // Whether each open link was kept (its end is dropped with it).
    let mut links: Vec<bool> = Vec::new();
    let events = Parser::new_ext(md, Options::ENABLE_TABLES).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::HtmlBlock) => Some(Event::Start(Tag::Paragraph)),
        Event::End(TagEnd::HtmlBlock) => Some(Event::End(TagEnd::Paragraph)),
        Event::Start(Tag::Link { dest_url, title, id, .. }) => {
            let href = safe_href(&dest_url);
            links.push(href.is_some());
            // `Inline`, so no scheme (`mailto:`) is ever added to what the rule allowed.
            href.map(|href| Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url: href.into(), title, id }))
        }
        Event::End(TagEnd::Link) => links.pop().unwrap_or(false).then_some(Event::End(TagEnd::Link)),
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        event => Some(event),
    });
    let mut out = String::with_capacity(md.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// An article's title: its first `# ` heading (`fallback` when it has none).
pub fn title<'a>(md: &'a str, fallback: &'a str) -> &'a str {
    md.lines().find_map(|l| l.strip_prefix("# ")).unwrap_or(fallback).trim()
}

/// An article's summary: the first paragraph after its title, on one line.
pub fn summary(md: &str) -> String {
    let body = md.lines().skip_while(|l| !l.starts_with("# ")).skip(1);
    let para: Vec<&str> = body
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::trim)
        .collect();
    para.join(" ")
}

/// A link target an article may use, as written in the page; `None` for anything else (`javascript:`,
/// `data:`, protocol-relative `//host`, …).
fn safe_href(url: &str) -> Option<String> {
    if url.starts_with("https://") || url.starts_with("http://") || (url.starts_with('/') && !url.starts_with("//")) {
        return Some(url.to_owned());
    }
    let is_slug =
        !url.is_empty() && url.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'#');
    is_slug.then(|| format!("{ARTICLE_BASE}{url}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_render() {
        let md = "# Title\n\nSome `code` and **bold**.\n\n- one\n- two\n\n1. first\n2. second\n\n```bash\necho <hi>\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> note";
        let html = to_html(md);
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<p>Some <code>code</code> and <strong>bold</strong>.</p>"));
        assert!(html.contains("<ul>\n<li>one</li>\n<li>two</li>\n</ul>"));
        assert!(html.contains("<ol>\n<li>first</li>"));
        assert!(html.contains("<pre><code class=\"language-bash\">echo &lt;hi&gt;\n</code></pre>"), "{html}");
        assert!(html.contains("<tr><th>a</th><th>b</th></tr>"), "{html}");
        assert!(html.contains("<tr><td>1</td><td>2</td></tr>"), "{html}");
        assert!(html.contains("<blockquote>\n<p>note</p>\n</blockquote>"), "{html}");
    }

    #[test]
    fn links_are_kept_only_when_safe() {
        let html = to_html(
            "[ok](https://a.example/x?y=\"z\") [art](keys-and-scopes) [sec](errors#codes) [here](/help) \
             [bad](javascript:alert(1)) [p](//evil) [d](data:text/html,x) <javascript:alert(2)> </evil@x.example>",
        );
        assert!(html.contains("<a href=\"https://a.example/x?y=%22z%22\">ok</a>"), "{html}");
        assert!(html.contains("<a href=\"/help/keys-and-scopes\">art</a>"), "{html}");
        assert!(html.contains("<a href=\"/help/errors#codes\">sec</a>"), "{html}");
        assert!(html.contains("<a href=\"/help\">here</a>"), "{html}");
        assert!(html.contains(" bad p d "), "unsafe links keep their text: {html}");
        assert!(html.contains("<a href=\"/evil@x.example\">"), "no mailto: added: {html}");
        assert_eq!(html.matches("<a ").count(), 5, "{html}");
        assert!(!html.contains("href=\"javascript") && !html.contains("//evil") && !html.contains("data:"), "{html}");
    }

    #[test]
    fn reference_links_and_images_follow_the_same_rule() {
        let html =
            to_html("[x][r] ![alt text](https://img.example/a.png) ![](javascript:1)\n\n[r]: javascript:alert(1)");
        assert!(!html.contains("<a") && !html.contains("<img") && !html.contains("javascript"), "{html}");
        assert!(html.contains("x alt text"), "{html}");
    }

    #[test]
    fn nothing_in_the_source_becomes_markup() {
        let html = to_html("<script>alert(1)</script> **<b>** `<i>` [<x>](/y) <img src=x onerror=alert(1)>");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(!html.contains("<script") && !html.contains("<b>") && !html.contains("<i>") && !html.contains("<x>"));
        assert!(!html.contains("<img"), "{html}");
        let block = to_html("<div onclick=\"x()\">\nhi\n</div>\n\n<!-- c -->");
        assert!(!block.contains("<div") && block.contains("&lt;div onclick="), "{block}");
        assert!(block.contains("&lt;!-- c --&gt;"), "{block}");
    }
}
