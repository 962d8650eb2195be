//! The pages behind public links: a published artifact (`/a/<token>`) and a shared session's transcript
//! (`/s/<token>`), which an interactive link's holder may also post a message to. Making and turning off
//! the links are operations, [`crate::ops::sharing`]; a link is its token, stored only as its hash.

use crate::cx::{Cx, Env};
use crate::http::HttpResponse;
use crate::ops::sessions;
use crate::ops::transcript::{entry, Entry};
use crate::rules::ids;
use crate::rules::params::Text;
use crate::session::calls;
use crate::store;
use maud::{html, PreEscaped, DOCTYPE};

/// A short answer in plain text, with the page headers.
fn plain(status: u16, text: impl Into<Vec<u8>>) -> HttpResponse {
    HttpResponse::page(status, "text/plain; charset=utf-8", "default-src 'none'", text)
}

fn not_found_page() -> HttpResponse {
    plain(404, "This link does not exist or was turned off.\n")
}

/// `GET /a/{token}`: the artifact's bytes with its content type, sandboxed so a published page can never
/// act as this origin.
pub async fn serve_artifact(env: &Env, token: &str) -> HttpResponse {
    let db: &dyn store::Sql = &env.db;
    let Ok(Some(a)) = store::artifacts::by_share(db, &ids::hash_secret(token)).await else { return not_found_page() };
    match crate::domain::blobs::get(&*env.blobs, &a.workspace_id, &a.sha256).await {
        // `sandbox`: a published page can never act as this origin.
        Ok(Some(bytes)) => HttpResponse::page(200, &a.content_type, "sandbox", bytes),
        _ => not_found_page(),
    }
}

/// `GET /s/{token}`: the session's transcript as a readable page.
pub async fn serve_session(env: &Env, token: &str) -> HttpResponse {
    let db: &dyn store::Sql = &env.db;
    let Ok(Some(s)) = store::artifacts::session_by_share(db, &ids::hash_secret(token)).await else {
        return not_found_page();
    };
    let mut rows = Vec::new();
    let mut after = 0;
    for _ in 0..25 {
        let call = calls::Read { after, message_id: None, limit: 200, wait_ms: 0 };
        let Ok(Ok(page)) = env.sessions.ask(&s.session_id, call).await else { break };
        for e in &page.events {
            rows.push(match entry(e) {
                Some(Entry::Said { who, text }) => (who, text.to_owned()),
                Some(Entry::ToolCall { name, arguments }) => ("tool", format!("{name} {arguments}")),
                Some(Entry::Error { message }) => ("error", message.to_owned()),
                Some(Entry::ToolResult { .. }) | None => continue,
            });
        }
        after = page.last_seq;
        if !page.has_more {
            break;
        }
    }
    let html = html! {
        (DOCTYPE)
        html {
            head {
                meta charset="utf-8";
                title { (s.title) }
                meta name="viewport" content="width=device-width";
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (s.title) }
                p { (s.agent_name) " · " (s.status) " · shared from agentsky" }
                @for (who, text) in &rows {
                    div class={ "m " (who) } { b { (who) } pre { (text) } }
                }
                @if !s.share_view_only {
                    form method="post" {
                        textarea name="message" rows="3" cols="80" required {}
                        br;
                        button { "Send" }
                    }
                }
            }
        }
    };
    HttpResponse::page(
        200,
        "text/html; charset=utf-8",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        html.into_string(),
    )
}

/// The transcript page's own style, inline: it stands alone, outside the console's assets.
const STYLE: &str = "body{font:15px system-ui;max-width:52rem;margin:2rem auto;padding:0 1rem}\
.m{border-left:3px solid #ccc;padding:.2rem .8rem;margin:.8rem 0}.agent{border-color:#36c}.error{border-color:#c33}\
pre{white-space:pre-wrap;font:inherit;margin:.2rem 0}";

/// `POST /s/{token}`: a message from the holder of an interactive share link.
pub async fn post_to_session(cx: &Cx<'_>, token: &str, body: &[u8]) -> HttpResponse {
    let Ok(Some(s)) = store::artifacts::session_by_share(cx.db(), &ids::hash_secret(token)).await else {
        return not_found_page();
    };
    if s.share_view_only {
        return plain(403, "This link is read-only.\n");
    }
    let text = String::from_utf8_lossy(body);
    let message = crate::http::form_value(&text, "message").unwrap_or_default();
    // The rule of `send_message`'s `message`.
    let message = match Text::<1, 64_000>::try_from(message) {
        Ok(m) => m,
        Err(problem) => return plain(400, format!("`message` {problem}")),
    };
    let msg = crate::session::NewMessage {
        message_id: ids::new_id("msg"),
        text: message.into_string(),
        from: crate::session::Author::ShareLink,
    };
    match sessions::call(cx, &s.session_id, calls::Send { message: msg }).await {
        Ok(_) => HttpResponse::new(303).with_header("location", format!("/s/{token}")),
        Err(e) => plain(e.code.http(), e.message),
    }
}
