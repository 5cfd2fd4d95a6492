//! YAML text to typed values, with errors that name the field and the place.
//!
//! Parsing goes through `serde_path_to_error`, so a type error deep inside a document reports
//! the field path (`spec.steps[1].forEach.parallelism`) next to the line and column the YAML
//! parser knows. Keys are camelCase as in the CRDs; unknown keys are ignored.

use std::fmt;

use serde::de::DeserializeOwned;

/// A place in a YAML text, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The line, starting at 1.
    pub line: usize,
    /// The column, starting at 1.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A YAML text that is not well-formed or does not have the expected shape.
///
/// Displays as `3:7: spec.timeout: invalid type: string "x", expected i64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The field path, e.g. `spec.timeout`; empty when the error is not inside a field (a
    /// syntax error, or a document of the wrong type altogether).
    pub field: String,
    /// What is wrong, e.g. `invalid type: string "x", expected i64`.
    pub message: String,
    /// Where, when the YAML parser knows it.
    pub location: Option<Location>,
}

impl ParseError {
    /// `spec.timeout: invalid type: ...`, or only the message when there is no field.
    pub fn field_message(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = self.location {
            write!(f, "{at}: ")?;
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses one YAML document into `T`.
///
/// An empty document (no content, or only comments) is read as an empty mapping, so types
/// whose fields all have defaults come out at their defaults.
pub fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, ParseError> {
    let text = if is_blank_document(text) { "{}" } else { text };
    let de = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = field_path(e.path());
        let mut error = parse_error(field, e.inner());
        place_duplicate(text, &mut error);
        error
    })
}

/// The parser reports a repeated key at the start of its mapping (the first key); this moves
/// the location to the repetition and says where the first one is. Block mappings only: in a
/// flow mapping (`{a: 1, a: 2}`) the location stays as the parser gave it.
fn place_duplicate(text: &str, error: &mut ParseError) {
    let Some(key) = error
        .message
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(key, _)| key.to_owned())
    else {
        return;
    };
    let Some(at) = error.location else {
        return;
    };
    let indent = at.column.saturating_sub(1);
    let is_key = |line: &str| {
        let rest = &line[indent..];
        [key.clone(), format!("\"{key}\""), format!("'{key}'")]
            .iter()
            .any(|k| {
                rest.strip_prefix(k.as_str())
                    .is_some_and(|r| r.trim_start().starts_with(':'))
            })
    };
    let mut first = None;
    for (index, line) in text.lines().enumerate().skip(at.line.saturating_sub(1)) {
        let content = line.trim_start();
        let own_indent = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if own_indent < indent || (own_indent == indent && content.starts_with("---")) {
            break;
        }
        if own_indent != indent || !is_key(line) {
            continue;
        }
        match first {
            None => first = Some(index + 1),
            Some(first) => {
                error.location = Some(Location {
                    line: index + 1,
                    column: indent + 1,
                });
                error.message = format!("{} (first at line {first})", error.message);
                return;
            }
        }
    }
}

/// Whether `text` holds nothing but whitespace, comments and document markers.
fn is_blank_document(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l.starts_with('#') || l == "---")
}

/// Renders a path as `spec.steps[1].tool`; empty at the root. The path ends before the first
/// segment the parser could not name (a syntax error inside a mapping key, for instance).
fn field_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;

    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => break,
        }
    }
    out
}

/// Builds a [`ParseError`] from a parser error, stripping the location and path that
/// `serde_norway` puts into its own message, since both are kept as separate fields.
fn parse_error(field: String, err: &serde_norway::Error) -> ParseError {
    let location = err.location().map(|l| Location {
        line: l.line(),
        column: l.column(),
    });
    let mut message = err.to_string();
    if let Some(at) = location {
        // Syntax errors put the place in the middle ("did not find expected key at line 3
        // column 2, while parsing a block mapping"), other errors at the end.
        message = message.replacen(&format!(" at line {} column {}", at.line, at.column), "", 1);
    }
    if !field.is_empty()
        && let Some(stripped) = message.strip_prefix(&format!("{field}: "))
    {
        message = stripped.to_owned();
    }
    ParseError {
        field,
        message,
        location,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(rename_all = "camelCase", default)]
    struct Doc {
        spec: Spec,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(rename_all = "camelCase", default)]
    struct Spec {
        timeout: Option<i64>,
        steps: Vec<BTreeMap<String, u8>>,
    }

    #[test]
    fn parses_and_ignores_unknown_keys() {
        let doc: Doc = from_yaml("spec:\n  timeout: 5\n  extra: true\n").unwrap();
        assert_eq!(doc.spec.timeout, Some(5));
    }

    #[test]
    fn blank_document_is_an_empty_mapping() {
        for text in ["", "\n", "# only a comment\n", "---\n"] {
            assert_eq!(from_yaml::<Doc>(text).unwrap(), Doc::default(), "{text:?}");
        }
    }

    #[test]
    fn type_error_names_field_and_place() {
        let err = from_yaml::<Doc>("spec:\n  steps: []\n  timeout: x\n").unwrap_err();
        assert_eq!(err.field, "spec.timeout");
        assert_eq!(err.message, "invalid type: string \"x\", expected i64");
        assert_eq!(
            err.location,
            Some(Location {
                line: 3,
                column: 12
            })
        );
        assert_eq!(
            err.to_string(),
            "3:12: spec.timeout: invalid type: string \"x\", expected i64"
        );
    }

    #[test]
    fn nested_type_error_has_indexed_path() {
        let err = from_yaml::<Doc>("spec:\n  steps:\n    - a: 1\n    - a: 300\n").unwrap_err();
        assert_eq!(err.field, "spec.steps[1].a");
        assert!(
            err.message.starts_with("invalid value: integer `300`"),
            "{}",
            err.message
        );
        assert_eq!(err.location.map(|l| l.line), Some(4));
    }

    #[test]
    fn syntax_error_has_a_place_and_no_field() {
        let err = from_yaml::<Doc>("spec:\n  timeout: 5\n bad\n").unwrap_err();
        assert_eq!(err.field, "");
        assert_eq!(err.location, Some(Location { line: 3, column: 2 }));
        assert_eq!(
            err.message,
            "did not find expected key, while parsing a block mapping"
        );
    }

    #[test]
    fn wrong_document_type() {
        let err = from_yaml::<Doc>("- a\n- b\n").unwrap_err();
        assert_eq!(err.field, "");
        assert!(
            err.message.contains("invalid type: sequence"),
            "{}",
            err.message
        );
    }

    #[test]
    fn duplicate_key_is_reported_where_it_is_repeated() {
        let text = "spec:\n  timeout: 5\n  steps: []\n  # note\n  timeout: 6\n";
        let err = from_yaml::<Doc>(text).unwrap_err();
        assert_eq!(err.location.map(|l| l.line), Some(5), "{err}");
        assert_eq!(err.field, "spec");
        assert!(err.message.contains("duplicate field `timeout`"), "{err}");
        assert!(err.message.contains("first at line 2"), "{err}");
        // At the top level too, and a repeated key inside a nested mapping is not mistaken
        // for the outer one.
        let text = "spec:\n  steps:\n    - timeout: 1\n  timeout: 2\nspec: {}\n";
        let err = from_yaml::<Doc>(text).unwrap_err();
        assert_eq!(err.location.map(|l| l.line), Some(5), "{err}");
    }
}
