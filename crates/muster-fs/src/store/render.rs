//! Objects to the text of their definition files.
//!
//! A file holds the full resource as `kubectl` would take it: `apiVersion`, `kind`,
//! `metadata` (name, namespace, labels, annotations, generation, creationTimestamp), `spec` in
//! camelCase without empty fields, and `status` when there is one. The resource version is
//! never written: it is derived from the file's content.

use muster_core::{API_VERSION, Object, StoreError};
use serde::Serialize;

use super::kind::FsKind;

/// The text of `obj`'s definition file.
pub(crate) fn render<K: FsKind>(obj: &Object<K>) -> Result<String, StoreError> {
    let mut written = obj.clone();
    API_VERSION.clone_into(&mut written.api_version);
    K::KIND.clone_into(&mut written.kind);
    written.metadata.resource_version = None;
    to_yaml(&written)
}

/// A top-level `status:` block holding `status`, ending with a newline.
pub(crate) fn render_status<K: FsKind>(status: &K::Status) -> Result<String, StoreError> {
    #[derive(Serialize)]
    struct StatusOnly<'a, S> {
        status: &'a S,
    }
    to_yaml(&StatusOnly { status })
}

fn to_yaml<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_norway::to_string(value).map_err(|e| StoreError::Codec {
        message: format!("cannot write YAML: {e}"),
    })
}

/// `text` with its top-level `status:` block (if any) removed and `block` appended.
///
/// The rest of the text, comments and formatting included, is kept as it is. The block ends at
/// the next line that starts in the first column (another key, a comment, a document marker).
/// The caller checks that the result still reads as the same object.
pub(crate) fn splice_status(text: &str, block: &str) -> String {
    let mut out = String::with_capacity(text.len() + block.len() + 1);
    let mut in_status = false;
    for line in text.split_inclusive('\n') {
        let starts_in_first_column = line.chars().next().is_some_and(|c| !c.is_whitespace());
        if starts_in_first_column {
            in_status = is_status_key(line);
        }
        if !in_status {
            out.push_str(line);
        }
    }
    let kept = out.trim_end_matches(['\n', '\r', ' ', '\t']).len();
    out.truncate(kept);
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(block);
    out
}

/// Whether a line opens the top-level `status` key.
fn is_status_key(line: &str) -> bool {
    ["status:", "\"status\":", "'status':"].iter().any(|key| {
        line.strip_prefix(key)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "status:\n  valid: true\n";

    #[test]
    fn appends_when_absent_and_keeps_comments() {
        let text = "# mine\nkind: Workflow\nspec:\n  steps: [] # none\n";
        assert_eq!(
            splice_status(text, BLOCK),
            "# mine\nkind: Workflow\nspec:\n  steps: [] # none\nstatus:\n  valid: true\n"
        );
        assert_eq!(
            splice_status("spec: {}", BLOCK),
            format!("spec: {{}}\n{BLOCK}")
        );
    }

    #[test]
    fn replaces_an_existing_block_wherever_it_is() {
        let text =
            "kind: X\nstatus:\n  valid: false\n  conditions:\n  - type: Ready\n\nspec:\n  a: 1\n";
        assert_eq!(
            splice_status(text, BLOCK),
            "kind: X\nspec:\n  a: 1\nstatus:\n  valid: true\n"
        );
        let flow = "spec: {}\nstatus: {valid: false}\n\n";
        assert_eq!(splice_status(flow, BLOCK), format!("spec: {{}}\n{BLOCK}"));
        let not_status = "statusText: x\nspec: {}\n";
        assert!(splice_status(not_status, BLOCK).starts_with("statusText: x\n"));
    }
}
