//! The Help Center's articles, in English and Chinese, written in Markdown under `help/`, and their
//! search: a BM25 index built once per isolate over [`crate::rules::fulltext::terms`], the same cut of
//! words and CJK bigrams the D1 index uses. The Worker compiles in only the table of articles; their text
//! and pages are static assets the build prepares (build.rs), read through [`Assets`] (the text once per
//! isolate). No storage is touched. Served as operations (`crate::ops::help_center`), by the help server
//! (`crate::help_mcp`) and as pages (`crate::console::help`), and offered to the `openai` harness's models
//! as built-in tools.

use crate::cx::Assets;
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
    /// Its first `# ` heading.
    pub title: &'static str,
    /// The first paragraph after the title, on one line.
    pub summary: &'static str,
}

/// Every article, in reading order (`help/articles.txt`), as build.rs tabled them.
pub static ARTICLES: &[Article] = include!(concat!(env!("OUT_DIR"), "/articles.rs"));

/// Where every article's Markdown is among the static assets: one JSON object, slug to Markdown.
pub const TEXTS: &str = "help/articles.json";

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
    fn url(&self, base: &str) -> String {
        format!("{base}/help/{}", self.slug)
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

/// Every article's Markdown and the in-memory search index over it, made once per isolate.
pub struct Library {
    texts: HashMap<String, String>,
    /// Term counts of each article's body, in [`ARTICLES`]' order.
    docs: Vec<HashMap<String, f64>>,
    /// Each article's title's terms.
    titles: Vec<Vec<String>>,
    lengths: Vec<f64>,
    average: f64,
    /// Document frequencies.
    df: HashMap<String, f64>,
}

/// The library, read from the static assets on the isolate's first use.
pub async fn library(assets: &dyn Assets) -> Result<&'static Library, ApiError> {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    if let Some(library) = LIBRARY.get() {
        return Ok(library);
    }
    let missing = |why: String| {
        ApiError::cause(format!("{TEXTS} among the static assets: {why}"))
            .with_message("the Help Center's articles are not deployed with this server")
    };
    let json = assets.get(TEXTS.to_owned()).await.map_err(missing)?.ok_or_else(|| missing("missing".into()))?;
    let texts: HashMap<String, String> = serde_json::from_str(&json).map_err(|e| missing(e.to_string()))?;
    if let Some(a) = ARTICLES.iter().find(|a| !texts.contains_key(a.slug)) {
        return Err(missing(format!("no text for `{}`", a.slug)));
    }
    Ok(LIBRARY.get_or_init(|| Library::new(texts)))
}

impl Library {
    fn new(texts: HashMap<String, String>) -> Library {
        let (mut docs, mut titles, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
        let mut df: HashMap<String, f64> = HashMap::new();
        for a in ARTICLES {
            let mut tf: HashMap<String, f64> = HashMap::new();
            for t in fulltext::terms(body_of(&texts[a.slug])) {
                *tf.entry(t).or_default() += 1.0;
            }
            let title = fulltext::terms(a.title);
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
        Library { texts, docs, titles, lengths, average, df }
    }

    /// The article in Markdown, as written.
    pub fn markdown(&self, a: &Article) -> &str {
        &self.texts[a.slug]
    }

    /// Articles scored by BM25 for the query's terms, best first; articles in the query's script score higher.
    fn rank(&self, query: &str, lang: Option<&str>) -> Vec<(f64, &'static Article)> {
        let (k1, b) = (1.2, 0.75);
        let idx = self;
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

impl Library {
    /// `help_search`'s answer, its links and examples naming the deployment at `base`.
    pub fn search_at(&self, base: &str, p: HelpSearch) -> HelpHits {
        let limit = p.limit.map_or(5, Int::get);
        let needles = fulltext::parse_query(&p.query).map(|q| q.needles).unwrap_or_default();
        let articles = self
            .rank(&p.query, p.lang.map(Lang::as_str))
            .into_iter()
            .take(limit as usize)
            .map(|(_, a)| HelpHit {
                slug: a.slug.into(),
                title: a.title.into(),
                lang: a.lang.into(),
                url: a.url(base),
                uri: a.uri(),
                summary: a.summary.into(),
                snippet: at_server(&fulltext::snippet(body_of(self.markdown(a)), &needles, 240), base, false),
            })
            .collect();
        HelpHits { articles }
    }

    /// `help_get`'s answer, its links and examples naming the deployment at `base`.
    pub fn get_at(&self, base: &str, p: HelpGet) -> Result<HelpArticle, ApiError> {
        let a = find(&p.slug).ok_or_else(|| {
            ApiError::new(Code::NotFound, format!("no article `{}`; find one with help_search", p.slug))
        })?;
        let twin = find(a.translation).unwrap_or(a);
        Ok(HelpArticle {
            slug: a.slug.into(),
            title: a.title.into(),
            lang: a.lang.into(),
            url: a.url(base),
            uri: a.uri(),
            markdown: at_server(self.markdown(a), base, false),
            translation: HelpLink { slug: twin.slug.into(), url: twin.url(base) },
        })
    }
}

/// An article's Markdown without its title line.
fn body_of(md: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The library as this build prepared it.
    fn built() -> &'static Library {
        static BUILT: OnceLock<Library> = OnceLock::new();
        let json = include_str!(concat!(env!("OUT_DIR"), "/help/articles.json"));
        BUILT.get_or_init(|| Library::new(serde_json::from_str(json).unwrap()))
    }

    #[test]
    fn every_article_has_a_title_a_summary_and_its_translation() {
        for a in ARTICLES {
            assert!(
                built().markdown(a).starts_with(&format!("# {}\n", a.title)),
                "{} must open with its title",
                a.slug
            );
            assert!(!a.summary.is_empty(), "{} needs a first paragraph", a.slug);
            assert!(find(a.translation).is_some_and(|t| t.translation == a.slug), "{}", a.slug);
        }
        assert_eq!(built().texts.len(), ARTICLES.len(), "every text is an article's");
    }

    #[test]
    fn searches_find_the_article_about_them_in_either_language() {
        let rank = |q, lang| built().rank(q, lang)[0].1.slug;
        assert_eq!(rank("connect Codex", None), "connect-codex");
        assert_eq!(rank("idempotency_key retry", None), "idempotency");
        assert_eq!(rank("幂等键", None), "zh-idempotency");
        assert_eq!(rank("定时任务", Some("zh")), "zh-routines");
    }

    #[test]
    fn every_example_names_the_server_by_the_placeholder_and_no_other_host() {
        for a in ARTICLES {
            assert!(
                !built().markdown(a).contains("agentsky.dev"),
                "{} names a host that is not this deployment",
                a.slug
            );
            let get = built().get_at("https://sky.example", HelpGet { slug: a.slug.into() }).unwrap();
            assert!(!get.markdown.contains(SERVER));
        }
    }

    #[test]
    fn without_its_texts_the_help_center_says_what_is_missing() {
        struct NoAssets;
        impl Assets for NoAssets {
            fn get(&self, _: String) -> futures::future::LocalBoxFuture<'_, Result<Option<String>, String>> {
                Box::pin(async { Ok(None) })
            }
        }
        let err = futures::executor::block_on(library(&NoAssets)).err().unwrap();
        assert!(err.message.contains("not deployed") && err.is_unfinished(), "{}", err.message);
    }
}
