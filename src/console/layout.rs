//! The console's page shell and the pieces every page uses: navigation, the workspace switcher, what the
//! last action said, and forms that call an operation.

use super::{assets, Ctx};
use crate::http::HttpRequest;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use maud::{html, Markup, DOCTYPE};

const FLASH: &str = "agentsky_flash";

/// The navigation: path under the workspace and label.
const NAV: &[(&str, &str)] = &[
    ("", "Approvals"),
    ("/board", "Board"),
    ("/usage", "Usage"),
    ("/health", "Health"),
    ("/agents", "Agents"),
    ("/routines", "Routines"),
    ("/skills", "Skills"),
    ("/access", "Access"),
    ("/runners", "Runners"),
    ("/members", "Members"),
    ("/webhooks", "Webhooks"),
    ("/keys", "API keys"),
    ("/devices", "Devices"),
];

fn head(title: &str) -> Markup {
    html! {
        meta charset="utf-8";
        meta name="viewport" content="width=device-width, initial-scale=1";
        title { (title) }
        meta name="theme-color" content="#1f5fbf";
        link rel="manifest" href="/console/manifest.webmanifest";
        link rel="icon" href=(assets::url("icon.svg")) type="image/svg+xml";
        link rel="apple-touch-icon" href=(assets::url("icon.svg"));
        link rel="stylesheet" href=(assets::url("console.css"));
        script src=(assets::url("console.js")) defer {}
    }
}

/// A page outside any workspace: sign-in and errors.
pub fn bare(title: &str, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { (head(title)) }
            body.bare {
                main.narrow {
                    h1 { span.logo { "agentsky" } " console" }
                    (body)
                }
            }
        }
    }
}

/// What a page tells the shell besides its content.
pub struct Shell<'a> {
    pub title: &'a str,
    /// The navigation entry it belongs to (a [`NAV`] path).
    pub nav: &'a str,
    /// The workspace's open requests, for the title and the badge.
    pub open_requests: usize,
    /// The workspace feed's version the page was rendered at; the script waits for it to move.
    pub version: String,
}

pub fn page(p: &Ctx<'_>, shell: Shell<'_>, main: Markup) -> Markup {
    let title = match shell.open_requests {
        0 => format!("{} · {} · agentsky", shell.title, p.ws.name),
        n => format!("({n}) {} · {} · agentsky", shell.title, p.ws.name),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head { (head(&title)) }
            body data-workspace=(p.ws.slug) data-version=(shell.version) data-open=(shell.open_requests)
                data-title=(format!("{} · {} · agentsky", shell.title, p.ws.name)) {
                header.top {
                    a.logo href=(p.link("")) { "agentsky" }
                    details.switcher {
                        summary { (p.ws.name) " " span.muted { "(" (p.ws.role.as_str()) ")" } }
                        ul {
                            @for m in &p.who.caller.memberships {
                                @if p.who.caller.locked_workspace_id.as_ref().is_none_or(|l| *l == m.workspace_id) {
                                    li { a href=(format!("/console/w/{}", m.slug)) { (m.name) " " span.muted { (m.slug) } } }
                                }
                            }
                        }
                    }
                    span.spacer {}
                    button.notify type="button" hidden data-notify
                        data-action=(p.action_url(crate::ops::name::subscribe_push)) data-csrf=(p.csrf) { "Notify me" }
                    span.muted.who { (p.who.name) }
                    form.inline method="post" action="/console/logout" {
                        input type="hidden" name="csrf" value=(p.csrf);
                        button.link type="submit" { "Sign out" }
                    }
                }
                nav.side {
                    @for (path, label) in NAV {
                        a href=(p.link(path)) class=@if *path == shell.nav { "on" } {
                            (label)
                            @if path.is_empty() {
                                " " span.badge data-open-badge hidden[shell.open_requests == 0] { (shell.open_requests) }
                            }
                        }
                    }
                }
                main {
                    @if !p.can_write() {
                        p.readonly role="note" { "Read-only: this console was opened with a read key, so it can look but not change anything." }
                    }
                    @if let Some((ok, message)) = &p.flash {
                        p class=(if *ok { "flash ok" } else { "flash error" }) role="status" { (message) }
                    }
                    (main)
                }
            }
        }
    }
}

/// The hidden fields every form sends: the CSRF token and where to come back to.
pub fn hidden(p: &Ctx<'_>) -> Markup {
    html! {
        input type="hidden" name="csrf" value=(p.csrf);
        input type="hidden" name="back" value=(p.here);
    }
}

/// A form that calls one operation with fixed arguments and a button; disabled for a read key.
pub fn action(
    p: &Ctx<'_>,
    op: &str,
    fields: &[(&str, &str)],
    label: &str,
    class: &str,
    confirm: Option<&str>,
) -> Markup {
    html! {
        form.inline method="post" action=(p.action_url(op)) data-confirm=[confirm] {
            (hidden(p))
            @for (k, v) in fields { input type="hidden" name=(k) value=(v); }
            button type="submit" class=(class) disabled[!p.can_write()] { (label) }
        }
    }
}

/// The most of a message a flash cookie carries: what an action said is a sentence, and a message that
/// quotes what was sent must not grow a cookie past what browsers keep (about 4 KB).
const FLASH_CHARS: usize = 300;

/// The `Set-Cookie` that carries what an action said to the page it returns to.
pub fn flash_cookie(ok: bool, message: &str) -> String {
    let message = crate::rules::params::clipped(message, FLASH_CHARS);
    let value = URL_SAFE_NO_PAD.encode(serde_json::json!([ok, message]).to_string());
    format!("{FLASH}={value}; Path=/console; Max-Age=30; HttpOnly; SameSite=Lax")
}

/// Clears it once shown.
pub fn clear_flash() -> String {
    format!("{FLASH}=; Path=/console; Max-Age=0; HttpOnly; SameSite=Lax")
}

pub fn read_flash(req: &HttpRequest) -> Option<(bool, String)> {
    let raw = req.header("cookie")?.split(';').filter_map(|c| c.trim().split_once('=')).find(|(k, _)| *k == FLASH)?.1;
    let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
    let (ok, message): (bool, String) = serde_json::from_slice(&bytes).ok()?;
    Some((ok, message.chars().take(500).collect()))
}

/// Cents as money.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// A time the script shows in the reader's zone ("3 min ago"); UTC until it does.
pub fn time(ms: i64) -> Markup {
    let at = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    html! { time datetime=(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)) { (at.format("%Y-%m-%d %H:%M UTC")) } }
}

/// Text kept as the person or agent wrote it: escaped, line breaks kept by the style sheet.
pub fn verbatim(text: &str) -> Markup {
    html! { span.verbatim { (text) } }
}
