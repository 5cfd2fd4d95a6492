//! `paginate`: follow a tool's next-page token and store every page's items as one list.

use muster_core::resource::workflow::Paginate;
use serde_json::{Value, json};

use super::run::Runner;
use crate::path::navigate;

impl Runner {
    /// Calls `tool` page by page; the result is the last page with its list holding every
    /// page's items, plus `pagination.pages` and `pagination.truncated`.
    pub(crate) async fn call_paginated(
        &self,
        tool: &str,
        args: Value,
        p: &Paginate,
    ) -> Result<Value, String> {
        let max_pages = p.max_pages().max(1);
        let mut all_items = Vec::new();
        let mut args = args;
        let mut pages = 0;
        loop {
            let outcome = self.call_tool(tool, args.clone()).await?;
            if outcome.is_error {
                return Err(outcome
                    .text
                    .unwrap_or_else(|| "tool returned an error".to_owned()));
            }
            pages += 1;
            let mut page = outcome.value;
            match navigate(&page, p.items_field()) {
                Ok(Value::Array(items)) => all_items.extend(items.iter().cloned()),
                Ok(_) => return Err(format!("paginate: '{}' is not a list", p.items_field())),
                Err(e) => return Err(format!("paginate: {e}")),
            }
            let token = navigate(&page, p.token_field())
                .ok()
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            let done = token.is_none() || pages >= max_pages;
            if done {
                set_path(&mut page, p.items_field(), Value::Array(all_items));
                if let Value::Object(m) = &mut page {
                    m.insert(
                        "pagination".into(),
                        json!({ "pages": pages, "truncated": token.is_some() }),
                    );
                }
                return Ok(page);
            }
            match &mut args {
                Value::Object(m) => {
                    m.insert(
                        p.token_arg().to_owned(),
                        Value::String(token.unwrap_or_default()),
                    );
                }
                other => *other = json!({ p.token_arg(): token }),
            }
        }
    }
}

/// Replaces the value at a dotted path (which exists, since it was read before).
fn set_path(root: &mut Value, path: &str, value: Value) {
    let mut cur = root;
    let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    for (i, seg) in segments.iter().enumerate() {
        let Value::Object(m) = cur else { return };
        if i + 1 == segments.len() {
            m.insert((*seg).to_owned(), value);
            return;
        }
        let Some(next) = m.get_mut(*seg) else { return };
        cur = next;
    }
}
