//! Approvals, the landing page: every open request of every task in the workspace, newest first, each
//! with what a person needs to decide it and the forms that answer it.

use super::{empty, Page};
use crate::console::{render, Ctx};
use crate::error::ApiError;
use crate::ops::call;
use maud::html;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let requests = call::list_requests(p.cx, super::requests_of(p)).await?.requests;
    Ok(Page {
        title: "Approvals".into(),
        nav: "",
        main: html! {
            h1 { "Approvals" }
            section data-live="approvals" {
                @if requests.is_empty() {
                    (empty("Nothing is waiting for you. New requests from your agents appear here as they are made."))
                }
                @for r in &requests { (render::request(p, r)) }
            }
        },
    })
}
