//! The Help Center's articles, in English and Chinese, written in Markdown under `help/` and bundled with
//! `include_str!` (their pages rendered at build time and deployed as static assets), and their search: a BM25 index built once per
//! isolate over [`crate::rules::fulltext::terms`], the same cut of words and CJK bigrams the D1 index
//! uses. No storage is touched. Served as operations (`crate::ops::help_center`), by the help server
//! (`crate::help_mcp`) and as pages (`crate::console::help`), and offered to the `openai` harness's
//! models as built-in tools.

use crate::error::{ApiError, Code};
use crate::rules::fulltext;
use crate::rules::params::{words, Int, Text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::OnceLock;

/// One article in one language. English slugs are plain; a Chinese article's slug is its English twin's
/// with `zh-` in front.
pub struct Article {
    pub slug: &'static str,
    /// `en` or `zh`.
    pub lang: &'static str,
    /// The same article in the other language.
    pub translation: &'static str,
    pub markdown: &'static str,
}

macro_rules! articles {
    ($($slug:literal),* $(,)?) => {
        &[$(
            Article {
                slug: $slug,
                lang: "en",
                translation: concat!("zh-", $slug),
                markdown: include_str!(concat!("../../help/en/", $slug, ".md")),
            },
            Article {
                slug: concat!("zh-", $slug),
                lang: "zh",
                translation: $slug,
                markdown: include_str!(concat!("../../help/zh/", $slug, ".md")),
            },
        )*]
    };
}

/// Every article, in reading order.
pub static ARTICLES: &[Article] = articles![
    "getting-started",
    "keys-and-scopes",
    "connect-claude-code",
    "connect-codex",
    "tool-groups",
    "workspaces",
    "agents-and-catalog",
    "sessions",
    "tasks-files-and-artifacts",
    "goals",
    "routines",
    "skills",
    "runners-and-access",
    "budgets-and-usage",
    "memory-and-search",
    "records-and-performance",
    "idempotency",
    "waiting-and-cursors",
    "errors",
];

/// Where an article's examples name the server: each answer puts the deployment's own origin there
/// (`PUBLIC_BASE_URL`, or the loopback origin under local development), so no example points at a server
/// the reader is not using.
pub const SERVER: &str = "{{server}}";

/// `text` with [`SERVER`] as `base`, or words saying to put the reader's server there when this
/// deployment does not know its own origin (`html`: escaped for a page).
pub fn at_server(text: &str, base: &str, html: bool) -> String {
    let base = match (base.is_empty(), html) {
        (false, _) => base,
        (true, false) => "https://<your agentsky server>",
        (true, true) => "https://&lt;your agentsky server&gt;",
    };
    text.replace(SERVER, base)
}

impl Article {
    /// The first `# ` heading.
    pub fn title(&self) -> &'static str {
        self.markdown.lines().find_map(|l| l.strip_prefix("# ")).unwrap_or(self.slug).trim()
    }

    /// The first paragraph after the title, on one line.
    pub fn summary(&self) -> String {
        let body = self.markdown.lines().skip_while(|l| !l.starts_with("# ")).skip(1);
        let para: Vec<&str> = body
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(str::trim)
            .collect();
        para.join(" ")
    }

    fn url(&self, base: &str) -> String {
        format!("{base}/help/{}", self.slug)
    }

    /// The article in Markdown, its examples naming the deployment at `base` ([`SERVER`]).
    pub fn markdown_at(&self, base: &str) -> String {
        at_server(self.markdown, base, false)
    }

    /// Where its page is among the static assets: `help/<lang>/<the English slug>.html`, rendered at build
    /// time (build.rs) and deployed beside the Worker rather than inside its wasm.
    pub fn html_path(&self) -> String {
        let slug = self.slug.strip_prefix("zh-").filter(|_| self.lang == "zh").unwrap_or(self.slug);
        format!("help/{}/{slug}.html", self.lang)
    }

    /// Its MCP resource address: `agentsky://help/<lang>/<the English slug>` (a Chinese article's slug
    /// without its `zh-`, which the address also accepts).
    pub fn uri(&self) -> String {
        let slug = self.slug.strip_prefix("zh-").filter(|_| self.lang == "zh").unwrap_or(self.slug);
        format!("agentsky://help/{}/{slug}", self.lang)
    }
}

pub fn find(slug: &str) -> Option<&'static Article> {
    ARTICLES.iter().find(|a| a.slug == slug)
}

/// What a query word found in an article's title adds, in units of the word's idf: a title names what
/// the article is about, which no count of mentions in the body says as well.
const TITLE_BOOST: f64 = 1.5;

/// The in-memory index: term counts of each article's body, its title's terms, and document frequencies.
struct Index {
    docs: Vec<HashMap<String, f64>>,
    titles: Vec<Vec<String>>,
    lengths: Vec<f64>,
    average: f64,
    df: HashMap<String, f64>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let (mut docs, mut titles, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
        let mut df: HashMap<String, f64> = HashMap::new();
        for a in ARTICLES {
            let mut tf: HashMap<String, f64> = HashMap::new();
            for t in fulltext::terms(body_of(a)) {
                *tf.entry(t).or_default() += 1.0;
            }
            let title = fulltext::terms(a.title());
            let mut seen: Vec<&String> = tf.keys().chain(title.iter()).collect();
            seen.sort();
            seen.dedup();
            for t in seen {
                *df.entry(t.clone()).or_default() += 1.0;
            }
            lengths.push(tf.values().sum());
            docs.push(tf);
            titles.push(title);
        }
        let average = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        Index { docs, titles, lengths, average, df }
    })
}

/// Articles scored by BM25 for the query's terms, best first; articles in the query's script score higher.
fn rank(query: &str, lang: Option<&str>) -> Vec<(f64, &'static Article)> {
    let (k1, b) = (1.2, 0.75);
    let idx = index();
    let n = ARTICLES.len() as f64;
    let terms = fulltext::query_terms(query);
    let cjk_query = query.chars().any(fulltext::is_cjk);
    let mut scored: Vec<(f64, &'static Article)> = ARTICLES
        .iter()
        .enumerate()
        .filter(|(_, a)| lang.is_none_or(|l| a.lang == l))
        .filter_map(|(i, a)| {
            let mut score = 0.0;
            for t in &terms {
                let df = idx.df.get(t).copied().unwrap_or(0.0);
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                // A lone CJK character is a prefix: it stands in every bigram it starts, as in the D1 index.
                let lone = t.chars().count() == 1 && t.chars().all(fulltext::is_cjk);
                let tf = if lone {
                    Some(idx.docs[i].iter().filter(|(k, _)| k.starts_with(t.as_str())).map(|(_, n)| n).sum())
                        .filter(|n: &f64| *n > 0.0)
                } else {
                    idx.docs[i].get(t).copied()
                };
                if let Some(tf) = tf {
                    score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * idx.lengths[i] / idx.average));
                }
                if idx.titles[i].contains(t) {
                    score += idf * TITLE_BOOST;
                }
            }
            if lang.is_none() && (a.lang == "zh") != cjk_query {
                score *= 0.5;
            }
            (score > 0.0).then_some((score, a))
        })
        .collect();
    scored.sort_by(|x, y| y.0.total_cmp(&x.0).then_with(|| x.1.slug.cmp(y.1.slug)));
    scored
}

words! {
    /// The Help Center's languages.
    pub enum Lang { En = "en", Zh = "zh" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HelpSearch {
    /// Words or a question, in English or Chinese, e.g. `connect Codex` or `幂等键`.
    pub query: Text<1, 500>,
    /// Only this language (default: both, the query's first).
    pub lang: Option<Lang>,
    /// Most articles to return (default 5).
    pub limit: Option<Int<1, 20>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HelpHits {
    /// Best first. Read one with `help_get`; answer with its `url`.
    pub articles: Vec<HelpHit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HelpHit {
    pub slug: String,
    pub title: String,
    /// `en` or `zh`.
    pub lang: String,
    /// The article's page: link it in your answer.
    pub url: String,
    /// The article as an MCP resource (`resources/read`).
    pub uri: String,
    /// What the article covers, in a sentence or two.
    pub summary: String,
    /// The passage matching best, matches in `**`.
    pub snippet: String,
}

/// `help_search`'s answer, its links and examples naming the deployment at `base`.
pub fn search_at(base: &str, p: HelpSearch) -> HelpHits {
    let limit = p.limit.map_or(5, Int::get);
    let needles = fulltext::parse_query(&p.query).map(|q| q.needles).unwrap_or_default();
    let articles = rank(&p.query, p.lang.map(Lang::as_str))
        .into_iter()
        .take(limit as usize)
        .map(|(_, a)| HelpHit {
            slug: a.slug.into(),
            title: a.title().into(),
            lang: a.lang.into(),
            url: a.url(base),
            uri: a.uri(),
            summary: a.summary(),
            snippet: at_server(&fulltext::snippet(body_of(a), &needles, 240), base, false),
        })
        .collect();
    HelpHits { articles }
}

/// The article without its title line.
fn body_of(a: &Article) -> &'static str {
    let md = a.markdown;
    match md.find("\n") {
        Some(at) if md.starts_with("# ") => md[at + 1..].trim_start(),
        _ => md,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HelpGet {
    /// The article's `slug`, from `help_search` (e.g. `idempotency`, or `zh-idempotency` in Chinese).
    pub slug: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HelpArticle {
    pub slug: String,
    pub title: String,
    /// `en` or `zh`.
    pub lang: String,
    /// The article's page: link it in your answer.
    pub url: String,
    /// The article as an MCP resource (`resources/read`).
    pub uri: String,
    /// The whole article, in Markdown.
    pub markdown: String,
    /// The same article in the other language.
    pub translation: HelpLink,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HelpLink {
    pub slug: String,
    pub url: String,
}

/// `help_get`'s answer, its links and examples naming the deployment at `base`.
pub fn get_at(base: &str, p: HelpGet) -> Result<HelpArticle, ApiError> {
    let a = find(&p.slug)
        .ok_or_else(|| ApiError::new(Code::NotFound, format!("no article `{}`; find one with help_search", p.slug)))?;
    let twin = find(a.translation).unwrap_or(a);
    Ok(HelpArticle {
        slug: a.slug.into(),
        title: a.title().into(),
        lang: a.lang.into(),
        url: a.url(base),
        uri: a.uri(),
        markdown: a.markdown_at(base),
        translation: HelpLink { slug: twin.slug.into(), url: twin.url(base) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_article_has_a_title_a_summary_and_its_translation() {
        for a in ARTICLES {
            assert!(a.markdown.starts_with("# "), "{} must open with its title", a.slug);
            assert!(!a.summary().is_empty(), "{} needs a first paragraph", a.slug);
            assert!(find(a.translation).is_some_and(|t| t.translation == a.slug), "{}", a.slug);
        }
    }

    #[test]
    fn links_between_articles_name_real_slugs() {
        for a in ARTICLES {
            for part in a.markdown.split("](").skip(1) {
                let target = &part[..part.find(')').unwrap_or(0)];
                if !target.contains("://") && !target.starts_with('/') {
                    let slug = target.split('#').next().unwrap_or_default();
                    assert!(find(slug).is_some(), "{} links to unknown article `{target}`", a.slug);
                }
            }
        }
    }

    #[test]
    fn searches_find_the_article_about_them_in_either_language() {
        assert_eq!(rank("connect Codex", None)[0].1.slug, "connect-codex");
        assert_eq!(rank("idempotency_key retry", None)[0].1.slug, "idempotency");
        assert_eq!(rank("幂等键", None)[0].1.slug, "zh-idempotency");
        assert_eq!(rank("定时任务", Some("zh"))[0].1.slug, "zh-routines");
    }

    #[test]
    fn every_example_names_the_server_by_the_placeholder_and_no_other_host() {
        for a in ARTICLES {
            assert!(!a.markdown.contains("agentsky.dev"), "{} names a host that is not this deployment", a.slug);
            assert!(!a.markdown_at("https://sky.example").contains(SERVER));
        }
    }
}
