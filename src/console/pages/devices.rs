//! You → Devices: the browsers and phones that take your pushes (Web Push), each removable; "Notify me"
//! in the header adds this one.

use super::Page;
use crate::console::layout::{action, time};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::name;
use crate::ops::{call, push::ListPushSubscriptions};
use maud::html;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let subs = call::list_push_subscriptions(p.cx, ListPushSubscriptions {}).await?.subscriptions;
    Ok(Page {
        title: "Devices".into(),
        nav: "/devices",
        main: html! {
            h1 { "Devices" }
            p.muted { "Where a new request is pushed, even with no tab open. Press " strong { "Notify me" }
                " on a phone or computer to add it; on a phone, add the console to the home screen first." }
            @if subs.is_empty() {
                p.empty { "No device takes pushes yet." }
            } @else {
                table data-live="devices" {
                    thead { tr { th { "Device" } th { "Push service" } th { "Added" } th { "Last reached" } th {} } }
                    tbody { @for s in &subs {
                        tr data-subscription=(s.subscription_id) {
                            td { (s.label) }
                            td { code { (url::Url::parse(&s.endpoint).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default()) } }
                            td { (time(s.created_ms)) }
                            td { @match s.last_ok_ms { Some(ms) => (time(ms)), None => span.muted { "not yet" } } }
                            td { (action(p, name::delete_push_subscription, &[("subscription_id", &s.subscription_id)], "Remove", "danger", Some("Stop pushing to this device?"))) }
                        }
                    } }
                }
            }
        },
    })
}
